package cliarg

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

func testApp() *cli.App {
	return &cli.App{
		Name:  "x",
		Flags: []cli.Flag{&cli.StringFlag{Name: "server", Aliases: []string{"s"}}, &cli.BoolFlag{Name: "wide"}, &cli.BoolFlag{Name: "json"}},
		Commands: []*cli.Command{
			{Name: "request", Aliases: []string{"r"}, Flags: []cli.Flag{&cli.BoolFlag{Name: "no-wait"}, &cli.StringFlag{Name: "timeout"}, &cli.BoolFlag{Name: "json"}}},
			{Name: "disclose", Flags: []cli.Flag{&cli.StringFlag{Name: "name"}}},
			{Name: "user", Flags: []cli.Flag{&cli.StringFlag{Name: "data"}}, Subcommands: []*cli.Command{
				{Name: "add", Flags: []cli.Flag{&cli.BoolFlag{Name: "worker"}, &cli.StringFlag{Name: "data"}}},
			}},
		},
	}
}

func TestReorder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want []string }{
		{[]string{"x", "request", "1/0", "--no-wait"}, []string{"x", "request", "--no-wait", "1/0"}},
		{[]string{"x", "r", "1/0", "--timeout", "5s", "2"}, []string{"x", "r", "--timeout", "5s", "1/0", "2"}},
		{[]string{"x", "request", "1/0", "--timeout=5s"}, []string{"x", "request", "--timeout=5s", "1/0"}},
		// An app flag after the command goes before the command.
		{[]string{"x", "-s", "u", "request", "1", "--wide"}, []string{"x", "-s", "u", "--wide", "request", "1"}},
		// The command's own flag wins over the app's of the same name.
		{[]string{"x", "request", "1", "--json"}, []string{"x", "request", "--json", "1"}},
		// Unknown flags and everything after -- stay.
		{[]string{"x", "request", "1", "--nope"}, []string{"x", "request", "1", "--nope"}},
		{[]string{"x", "request", "1", "--", "--no-wait"}, []string{"x", "request", "1", "--", "--no-wait"}},
		// Subcommands: batchd user add NAME --worker.
		{[]string{"x", "user", "add", "ann", "--worker", "--data", "d"}, []string{"x", "user", "add", "--worker", "--data", "d", "ann"}},
		// A verbatim command's arguments are a command line.
		{[]string{"x", "disclose", "grep", "--name", "y"}, []string{"x", "disclose", "grep", "--name", "y"}},
		{[]string{"x", "nosuch", "1", "--wide"}, []string{"x", "nosuch", "1", "--wide"}},
		{[]string{"x"}, []string{"x"}},
	} {
		if got := Reorder(testApp(), tc.in, "disclose"); !slices.Equal(got, tc.want) {
			t.Errorf("Reorder(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseMiB(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"": 0, "512": 512, "512M": 512, "2G": 2048, "2GiB": 2048, "1.5g": 1536, "1T": 1 << 20, "100K": 1, "3MB": 3} {
		if got, err := ParseMiB(in); err != nil || got != want {
			t.Errorf("ParseMiB(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "lots", "2X", "G"} {
		if _, err := ParseMiB(in); err == nil {
			t.Errorf("ParseMiB(%q): no error", in)
		}
	}
}
