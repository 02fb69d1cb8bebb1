// Package cliarg lets batchctl and batchd take flags after their
// arguments. urfave/cli v2 stops reading flags at a command's first
// argument, so `batchd user add ann --worker` would take "--worker" for a
// second name; Reorder moves such flags in front of the arguments before
// the app parses them.
package cliarg

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// Reorder returns args (args[0] is the program) with the flags that follow
// a command's arguments moved to where urfave/cli reads them: the leaf
// command's own flags before its first argument, the app's flags that the
// command lacks before the command's name. Everything after "--" stays as
// it is, and so does everything after the first argument of a command in
// verbatim (its arguments are a command line of their own, as disclose's
// are). Unknown flags stay where they are, for the command to refuse.
func Reorder(app *cli.App, args []string, verbatim ...string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	rest := args[1:]
	// The app's flags up to the command name.
	appFlags := index(app.Flags)
	i := 0
	for i < len(rest) {
		a := rest[i]
		if a == "--" || !isFlag(a) {
			break
		}
		i += width(appFlags, a, rest[i:])
	}
	out = append(out, rest[:i]...)
	rest = rest[i:]
	if len(rest) == 0 || rest[0] == "--" {
		return append(out, rest...)
	}
	cmds := app.Commands
	var path []string
	var leaf *cli.Command
	for len(rest) > 0 {
		c := find(cmds, rest[0])
		if c == nil {
			break
		}
		path = append(path, rest[0])
		rest = rest[1:]
		leaf = c
		if len(c.Subcommands) == 0 {
			break
		}
		// Flags of an intermediate command stay with it.
		own := index(c.Flags)
		j := 0
		for j < len(rest) && rest[j] != "--" && isFlag(rest[j]) {
			j += width(own, rest[j], rest[j:])
		}
		path = append(path, rest[:j]...)
		rest = rest[j:]
		cmds = c.Subcommands
	}
	if leaf == nil {
		return args
	}
	for _, v := range verbatim {
		if leaf.Name == v {
			return args
		}
	}
	own := index(leaf.Flags)
	var flags, globals, pos []string
	for k := 0; k < len(rest); k++ {
		a := rest[k]
		if a == "--" {
			pos = append(pos, rest[k:]...)
			break
		}
		if !isFlag(a) {
			pos = append(pos, a)
			continue
		}
		name := flagName(a)
		switch {
		case own[name] != nil || len(pos) == 0:
			n := width(own, a, rest[k:])
			flags = append(flags, rest[k:k+n]...)
			k += n - 1
		case appFlags[name] != nil:
			n := width(appFlags, a, rest[k:])
			globals = append(globals, rest[k:k+n]...)
			k += n - 1
		default:
			pos = append(pos, a)
		}
	}
	out = append(out, globals...)
	out = append(out, path...)
	out = append(out, flags...)
	return append(out, pos...)
}

func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

// flagName is the name in "-x", "--name" or "--name=value".
func flagName(a string) string {
	n := strings.TrimLeft(a, "-")
	n, _, _ = strings.Cut(n, "=")
	return n
}

func index(fs []cli.Flag) map[string]cli.Flag {
	m := map[string]cli.Flag{}
	for _, f := range fs {
		for _, n := range f.Names() {
			m[n] = f
		}
	}
	m["help"], m["h"] = cli.HelpFlag, cli.HelpFlag
	return m
}

// width is how many arguments flag a takes up in rest (rest[0] == a): two
// when it takes a value given separately, else one.
func width(fs map[string]cli.Flag, a string, rest []string) int {
	if strings.Contains(a, "=") || len(rest) < 2 {
		return 1
	}
	f := fs[flagName(a)]
	if v, ok := f.(cli.DocGenerationFlag); ok && v.TakesValue() {
		return 2
	}
	return 1
}

func find(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// UnknownCommand rewords urfave/cli's answer to an unknown command ("No
// help topic for 'x'. Did you mean "y"?"), which reads as if help had been
// asked for; other messages come back as they are.
func UnknownCommand(msg, prog string) string {
	if rest, ok := strings.CutPrefix(msg, "No help topic for "); ok {
		return "unknown command " + rest + " (" + prog + " --help lists the commands)"
	}
	return msg
}

// ParseMiB reads a memory size as MiB: a plain number is MiB; suffixes K,
// M, G, T (or KiB, MiB, GiB, TiB, KB, MB, GB, TB; any case) are powers of
// 1024. "" is 0. Errors name the value.
func ParseMiB(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if t == "" {
		return 0, nil
	}
	for _, suf := range []string{"IB", "B"} {
		if strings.HasSuffix(t, suf) && len(t) > len(suf) && strings.ContainsAny(t[len(t)-len(suf)-1:len(t)-len(suf)], "KMGT") {
			t = strings.TrimSuffix(t, suf)
			break
		}
	}
	unit := 1.0 // MiB
	switch {
	case strings.HasSuffix(t, "K"):
		unit, t = 1.0/1024, strings.TrimSuffix(t, "K")
	case strings.HasSuffix(t, "M"):
		t = strings.TrimSuffix(t, "M")
	case strings.HasSuffix(t, "G"):
		unit, t = 1024, strings.TrimSuffix(t, "G")
	case strings.HasSuffix(t, "T"):
		unit, t = 1024*1024, strings.TrimSuffix(t, "T")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*unit > 1<<40 {
		return 0, fmt.Errorf("%q is not a memory size: want MiB, or a number with K, M, G or T (e.g. 512M, 2G)", s)
	}
	return int64(math.Ceil(v * unit)), nil
}
