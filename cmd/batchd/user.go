package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/urfave/cli/v2"

	"batchd/store"
)

// userCommand is `batchd user add|list|revoke|token`: user management
// straight on the data directory's database (on the server's machine; it
// may run while the server runs). Remote admins use the UserService RPCs
// (batchctl users).
func userCommand() *cli.Command {
	data := &cli.StringFlag{Name: "data", Value: "./batchd-data", EnvVars: []string{"BATCHD_DATA"}, Usage: "the server's data `DIR`"}
	return &cli.Command{
		Name:  "user",
		Usage: "add, list and revoke users and their tokens (on the server's data directory)",
		Description: "Tokens are random (160 bits, prefix bd_), shown once and stored as SHA-256 hashes.\n" +
			"A revoked user's tokens fail on their next call. Roles: user (its own task sets),\n" +
			"admin (everyone's, and users), worker (the worker service only: batchd worker --token).",
		Subcommands: []*cli.Command{
			{
				Name: "add", Usage: "create a user and print its token (shown only now)", ArgsUsage: "NAME",
				Flags: []cli.Flag{data,
					&cli.BoolFlag{Name: "admin", Usage: "role admin"},
					&cli.BoolFlag{Name: "worker", Usage: "role worker: a token for batchd worker --token"},
					&cli.Float64Flag{Name: "weight", Value: 1, Usage: "fair-share weight: while several users wait, slots go to them in proportion to their weights (a running server reads it at its next start; batchctl users weight applies at once)"}},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("usage: batchd user add NAME [--admin|--worker]")
					}
					role := store.RoleUser
					switch {
					case c.Bool("admin") && c.Bool("worker"):
						return fmt.Errorf("--admin and --worker exclude each other")
					case c.Bool("admin"):
						role = store.RoleAdmin
					case c.Bool("worker"):
						role = store.RoleWorker
					}
					db, err := openData(c)
					if err != nil {
						return err
					}
					defer db.Close()
					u, token, err := db.AddUser(c.Context, store.AddUserInput{Name: c.Args().First(), Role: role, Weight: c.Float64("weight")})
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.ErrWriter, "created %s %q; its token (shown only now):\n", u.Role, u.Name)
					fmt.Fprintln(c.App.Writer, token)
					return nil
				},
			},
			{
				Name: "token", Usage: "mint another token for a user (shown only now)", ArgsUsage: "NAME", Flags: []cli.Flag{data},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("usage: batchd user token NAME")
					}
					db, err := openData(c)
					if err != nil {
						return err
					}
					defer db.Close()
					token, err := db.NewUserToken(c.Context, c.Args().First())
					if err != nil {
						return err
					}
					fmt.Fprintln(c.App.Writer, token)
					return nil
				},
			},
			{
				Name: "revoke", Usage: "revoke a user and all its tokens", ArgsUsage: "NAME", Flags: []cli.Flag{data},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("usage: batchd user revoke NAME")
					}
					db, err := openData(c)
					if err != nil {
						return err
					}
					defer db.Close()
					if err := db.RevokeUser(c.Context, c.Args().First()); err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "revoked %q\n", c.Args().First())
					return nil
				},
			},
			{
				Name: "list", Usage: "list users", Flags: []cli.Flag{data},
				Action: func(c *cli.Context) error {
					db, err := openData(c)
					if err != nil {
						return err
					}
					defer db.Close()
					us, err := db.ListUsers(c.Context)
					if err != nil {
						return err
					}
					tw := tablewriter.NewTable(c.App.Writer)
					tw.Header("NAME", "ROLE", "TOKENS", "CREATED", "REVOKED")
					for _, u := range us {
						rev := ""
						if !u.RevokedAt.IsZero() {
							rev = u.RevokedAt.Local().Format(time.DateTime)
						}
						if err := tw.Append(u.Name, u.Role, fmt.Sprint(u.Tokens), u.CreatedAt.Local().Format(time.DateTime), rev); err != nil {
							return err
						}
					}
					return tw.Render()
				},
			},
		},
	}
}

// openData opens the database of the --data directory (which must exist:
// batchd serve creates it).
func openData(c *cli.Context) (*store.DB, error) {
	dir := c.String("data")
	path := filepath.Join(dir, "batchd.db")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no batchd database in %s (start batchd serve --data %s first): %w", dir, dir, err)
	}
	db := store.NewDB(path)
	if err := db.Open(); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}
