package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"
)

// usersCommand is `batchctl users`: the admin RPCs of UserService.
func usersCommand() *cli.Command {
	one := func(c *cli.Context, usage string) (string, error) {
		if c.NArg() != 1 {
			return "", usageErr("usage: %s", usage)
		}
		return c.Args().First(), nil
	}
	return &cli.Command{
		Name:  "users",
		Usage: "manage users and tokens (admin), or show who you are",
		Description: `Tokens are shown once and stored hashed. Roles: user (own task sets), admin
(everyone's, and users), worker (batchd worker --token, the worker service only).

   batchctl users whoami
   batchctl users list
   batchctl users add alice            # prints alice's token, once
   batchctl users add --role worker gpu-box-1
   batchctl users token alice          # another token for alice
   batchctl users revoke alice         # her tokens fail from the next call
   batchctl users weight alice 2       # fair share: twice the slots of weight-1 users
   batchctl users shares               # each user's weight, slots held, share, usage`,
		Subcommands: []*cli.Command{
			{Name: "whoami", Usage: "show the user and role of your token", Flags: []cli.Flag{jsonFlag()}, Action: func(c *cli.Context) error {
				name, role, err := newClient(c).WhoAmI(c.Context)
				if err != nil {
					return err
				}
				if asJSON(c) {
					return writeJSON(c.App.Writer, map[string]string{"name": name, "role": role})
				}
				fmt.Fprintf(c.App.Writer, "%s (%s)\n", name, role)
				return nil
			}},
			{Name: "list", Usage: "list users", Flags: []cli.Flag{jsonFlag()}, Action: func(c *cli.Context) error {
				users, err := newClient(c).ListUsers(c.Context)
				if err != nil {
					return err
				}
				type userView struct {
					Name      string     `json:"name"`
					Role      string     `json:"role"`
					Weight    float64    `json:"weight"`
					Tokens    int32      `json:"tokens"`
					CreatedAt time.Time  `json:"created_at"`
					RevokedAt *time.Time `json:"revoked_at,omitempty"`
				}
				var vs []userView
				for _, u := range users {
					v := userView{Name: u.Name, Role: u.Role, Weight: u.Weight, Tokens: u.Tokens, CreatedAt: u.CreatedAt}
					if !u.RevokedAt.IsZero() {
						r := u.RevokedAt
						v.RevokedAt = &r
					}
					vs = append(vs, v)
				}
				if asJSON(c) {
					if vs == nil {
						vs = []userView{}
					}
					return writeJSON(c.App.Writer, vs)
				}
				t := newTable(c, "name", "role", "weight", "tokens", "created", "revoked")
				for _, v := range vs {
					rev := ""
					if v.RevokedAt != nil {
						rev = v.RevokedAt.Local().Format(time.DateTime)
					}
					if err := t.Append(v.Name, v.Role, fmt.Sprintf("%g", v.Weight), v.Tokens, v.CreatedAt.Local().Format(time.DateTime), rev); err != nil {
						return err
					}
				}
				return t.Render()
			}},
			{Name: "add", Usage: "create a user and print its token (shown only now)", ArgsUsage: "NAME",
				Flags: []cli.Flag{&cli.StringFlag{Name: "role", Value: "user", Usage: "user, admin or worker"},
					&cli.Float64Flag{Name: "weight", Value: 1, Usage: "fair-share weight (slots go to waiting users in proportion to it)"}},
				Action: func(c *cli.Context) error {
					name, err := one(c, "batchctl users add [--role ROLE] NAME")
					if err != nil {
						return err
					}
					u, token, err := newClient(c).AddUserWeight(c.Context, name, c.String("role"), c.Float64("weight"))
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.ErrWriter, "created %s %q; its token (shown only now):\n", u.Role, u.Name)
					fmt.Fprintln(c.App.Writer, token)
					return nil
				}},
			{Name: "weight", Usage: "set a user's fair-share weight", ArgsUsage: "NAME WEIGHT", Action: func(c *cli.Context) error {
				if c.NArg() != 2 {
					return usageErr("usage: batchctl users weight NAME WEIGHT")
				}
				w, err := strconv.ParseFloat(c.Args().Get(1), 64)
				if err != nil || !(w > 0) {
					return usageErr("weight %q: want a positive number", c.Args().Get(1))
				}
				u, err := newClient(c).SetUserWeight(c.Context, c.Args().First(), w)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "%s: weight %g\n", u.Name, u.Weight)
				return nil
			}},
			{Name: "shares", Usage: "show each user's fair share: weight, slots held, queued requested tasks, share, decayed usage", Flags: []cli.Flag{jsonFlag()}, Action: func(c *cli.Context) error {
				cl, err := newClient(c).GetCluster(c.Context)
				if err != nil {
					return err
				}
				vs := viewShares(cl.Users)
				if asJSON(c) {
					return writeJSON(c.App.Writer, map[string]any{"fair_share": cl.FairShare, "users": vs})
				}
				return renderShares(c, cl.FairShare, vs)
			}},
			{Name: "token", Usage: "mint another token for a user (shown only now)", ArgsUsage: "NAME", Action: func(c *cli.Context) error {
				name, err := one(c, "batchctl users token NAME")
				if err != nil {
					return err
				}
				token, err := newClient(c).NewToken(c.Context, name)
				if err != nil {
					return err
				}
				fmt.Fprintln(c.App.Writer, token)
				return nil
			}},
			{Name: "revoke", Usage: "revoke a user and all its tokens", ArgsUsage: "NAME", Action: func(c *cli.Context) error {
				name, err := one(c, "batchctl users revoke NAME")
				if err != nil {
					return err
				}
				if err := newClient(c).RevokeUser(c.Context, name); err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "revoked %q\n", name)
				return nil
			}},
		},
	}
}
