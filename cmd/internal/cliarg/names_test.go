package cliarg_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"batchd/cmd/internal/cliarg"
)

// namesApp has a flag of every type CacheNames wraps, with aliases, an
// environment variable, a flag action, a category, a hidden flag, and a
// required flag on a subcommand. What its action saw goes to out.
func namesApp(out *bytes.Buffer) *cli.App {
	report := func(c *cli.Context) error {
		for _, n := range []string{"name", "n", "tag", "verbose", "count", "big", "small", "ratio", "wait", "hidden", "server", "s", "need"} {
			fmt.Fprintf(out, "%s set=%v value=%v\n", n, c.IsSet(n), c.Value(n))
		}
		fmt.Fprintf(out, "args=%q local=%q\n", c.Args().Slice(), c.LocalFlagNames())
		return nil
	}
	return &cli.App{
		Name:           "t",
		Writer:         out,
		ErrWriter:      out,
		ExitErrHandler: func(*cli.Context, error) {},
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "server", Aliases: []string{"s"}, Usage: "the `URL`", EnvVars: []string{"NAMES_TEST_SERVER"}, Value: "http://x"},
			&cli.BoolFlag{Name: "hidden", Hidden: true},
		},
		Commands: []*cli.Command{{
			Name:   "run",
			Usage:  "run it",
			Action: report,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "name", Aliases: []string{"n"}, Usage: "a `NAME`", Category: "naming",
					Action: func(_ *cli.Context, v string) error { fmt.Fprintf(out, "action name=%s\n", v); return nil }},
				&cli.StringSliceFlag{Name: "tag", Usage: "tags"},
				&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "say more"},
				&cli.IntFlag{Name: "count", Value: 3, Usage: "how many"},
				&cli.Int64Flag{Name: "big", Usage: "a big one"},
				&cli.UintFlag{Name: "small", Usage: "a small one"},
				&cli.Float64Flag{Name: "ratio", Value: 0.5, Usage: "a ratio"},
				&cli.DurationFlag{Name: "wait", Value: time.Second, Usage: "how long"},
			},
			Subcommands: []*cli.Command{{
				Name:   "deep",
				Action: report,
				Flags:  []cli.Flag{&cli.StringFlag{Name: "need", Required: true, Usage: "needed"}},
			}},
		}},
	}
}

// TestCacheNamesSameBehaviour runs the same command lines through the app
// as built and through the app with CacheNames, and compares all they
// print: values, IsSet, flag actions, help, and the errors of a missing
// required flag and of an unknown one.
func TestCacheNamesSameBehaviour(t *testing.T) {
	t.Setenv("NAMES_TEST_SERVER", "http://env")
	lines := [][]string{
		{"t", "run", "-n", "ann", "--tag", "a", "--tag", "b", "-v", "--count", "7", "--big", "9000000000", "--small", "2", "--ratio", "0.25", "--wait", "3s", "x", "y"},
		{"t", "-s", "http://flag", "run", "x"},
		{"t", "--hidden", "run"},
		{"t", "run", "--help"},
		{"t", "--help"},
		{"t", "run", "deep", "--need", "it"},
		{"t", "run", "deep"},
		{"t", "run", "--nope"},
	}
	for _, args := range lines {
		t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
			var want, got bytes.Buffer
			wantErr := namesApp(&want).Run(args)
			app := namesApp(&got)
			cliarg.CacheNames(app)
			gotErr := app.Run(args)
			if got.String() != want.String() {
				t.Errorf("output with cached names:\n%s\nwant:\n%s", got.String(), want.String())
			}
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("error %v, want %v", gotErr, wantErr)
			}
		})
	}
}

// TestCacheNamesWrapsEveryFlag checks that CacheNames reached the flags of
// the app, its commands and their subcommands, with their names.
func TestCacheNamesWrapsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	app := namesApp(&out)
	before := map[string][]string{}
	var all func(prefix string, fs []cli.Flag, cmds []*cli.Command, fn func(string, cli.Flag))
	all = func(prefix string, fs []cli.Flag, cmds []*cli.Command, fn func(string, cli.Flag)) {
		for _, f := range fs {
			fn(prefix, f)
		}
		for _, c := range cmds {
			all(prefix+" "+c.Name, c.Flags, c.Subcommands, fn)
		}
	}
	all("t", app.Flags, app.Commands, func(p string, f cli.Flag) { before[p+" "+f.Names()[0]] = f.Names() })
	cliarg.CacheNames(app)
	n := 0
	all("t", app.Flags, app.Commands, func(p string, f cli.Flag) {
		n++
		if strings.HasPrefix(fmt.Sprintf("%T", f), "*cli.") {
			t.Errorf("%s: flag %s of type %T not wrapped", p, f.Names()[0], f)
		}
		if want := before[p+" "+f.Names()[0]]; !slices.Equal(f.Names(), want) {
			t.Errorf("%s: names %q, want %q", p, f.Names(), want)
		}
	})
	if n != len(before) || n != 11 {
		t.Errorf("%d flags after, %d before, want 11", n, len(before))
	}
}
