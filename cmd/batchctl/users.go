package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"batchd/client"
	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
)

// usersCommand is `batchctl users`: the admin RPCs of UserService.
func usersCommand() *cli.Command {
	call := func(c *cli.Context) batchv1connect.UserServiceClient {
		token, _, err := client.ResolveToken(client.TokenSource{Flag: c.String("token"), ConfigFile: c.String("config"), DataDir: c.String("data")})
		if err != nil {
			fmt.Fprintf(c.App.ErrWriter, "batchctl: warning: %v (calling without a token)\n", err)
		}
		return batchv1connect.NewUserServiceClient(client.WithToken(nil, token), newClient(c).Server())
	}
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
   batchctl users revoke alice         # her tokens fail from the next call`,
		Subcommands: []*cli.Command{
			{Name: "whoami", Usage: "show the user and role of your token", Flags: []cli.Flag{jsonFlag()}, Action: func(c *cli.Context) error {
				res, err := call(c).WhoAmI(c.Context, &batchv1.WhoAmIRequest{})
				if err != nil {
					return client.FromConnect(err)
				}
				if asJSON(c) {
					return writeJSON(c.App.Writer, map[string]string{"name": res.Name, "role": res.Role})
				}
				fmt.Fprintf(c.App.Writer, "%s (%s)\n", res.Name, res.Role)
				return nil
			}},
			{Name: "list", Usage: "list users", Flags: []cli.Flag{jsonFlag()}, Action: func(c *cli.Context) error {
				res, err := call(c).ListUsers(c.Context, &batchv1.ListUsersRequest{})
				if err != nil {
					return client.FromConnect(err)
				}
				type userView struct {
					Name      string     `json:"name"`
					Role      string     `json:"role"`
					Tokens    int32      `json:"tokens"`
					CreatedAt time.Time  `json:"created_at"`
					RevokedAt *time.Time `json:"revoked_at,omitempty"`
				}
				var vs []userView
				for _, u := range res.Users {
					v := userView{Name: u.Name, Role: u.Role, Tokens: u.Tokens, CreatedAt: u.CreatedAt.AsTime()}
					if u.RevokedAt != nil {
						r := u.RevokedAt.AsTime()
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
				t := newTable(c.App.Writer, "name", "role", "tokens", "created", "revoked")
				for _, v := range vs {
					rev := ""
					if v.RevokedAt != nil {
						rev = v.RevokedAt.Local().Format(time.DateTime)
					}
					if err := t.Append(v.Name, v.Role, v.Tokens, v.CreatedAt.Local().Format(time.DateTime), rev); err != nil {
						return err
					}
				}
				return t.Render()
			}},
			{Name: "add", Usage: "create a user and print its token (shown only now)", ArgsUsage: "NAME",
				Flags: []cli.Flag{&cli.StringFlag{Name: "role", Value: "user", Usage: "user, admin or worker"}},
				Action: func(c *cli.Context) error {
					name, err := one(c, "batchctl users add [--role ROLE] NAME")
					if err != nil {
						return err
					}
					res, err := call(c).AddUser(c.Context, &batchv1.AddUserRequest{Name: name, Role: c.String("role")})
					if err != nil {
						return client.FromConnect(err)
					}
					fmt.Fprintf(c.App.ErrWriter, "created %s %q; its token (shown only now):\n", res.User.Role, res.User.Name)
					fmt.Fprintln(c.App.Writer, res.Token)
					return nil
				}},
			{Name: "token", Usage: "mint another token for a user (shown only now)", ArgsUsage: "NAME", Action: func(c *cli.Context) error {
				name, err := one(c, "batchctl users token NAME")
				if err != nil {
					return err
				}
				res, err := call(c).NewToken(c.Context, &batchv1.NewTokenRequest{Name: name})
				if err != nil {
					return client.FromConnect(err)
				}
				fmt.Fprintln(c.App.Writer, res.Token)
				return nil
			}},
			{Name: "revoke", Usage: "revoke a user and all its tokens", ArgsUsage: "NAME", Action: func(c *cli.Context) error {
				name, err := one(c, "batchctl users revoke NAME")
				if err != nil {
					return err
				}
				if _, err := call(c).RevokeUser(c.Context, &batchv1.RevokeUserRequest{Name: name}); err != nil {
					return client.FromConnect(err)
				}
				fmt.Fprintf(c.App.Writer, "revoked %q\n", name)
				return nil
			}},
		},
	}
}
