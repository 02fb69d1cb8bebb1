package cliarg

import (
	"sync"

	"github.com/urfave/cli/v2"
)

// CacheNames gives every flag of app and of its commands names worked out
// once, on the first call of its Names. urfave/cli v2 works a flag's names out afresh on each call of its
// Names method (a regular-expression replace per name), and it calls
// Names for every flag of the command and the app each time it asks
// whether a flag that was not given is set, once per flag on every run:
// about 7% of the CPU time of a `batchctl disclose`. The wrapped flags
// are the same flags (a pointer to each), so values, help and the flag
// interfaces behave as before; flags of other types stay as they are.
func CacheNames(app *cli.App) {
	app.Flags = cacheNames(app.Flags)
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			c.Flags = cacheNames(c.Flags)
			walk(c.Subcommands)
		}
	}
	walk(app.Commands)
}

func cacheNames(flags []cli.Flag) []cli.Flag {
	out := make([]cli.Flag, len(flags))
	for i, f := range flags {
		out[i] = named(f)
	}
	return out
}

// named wraps f, when its type is one batchd's commands use, in a flag
// whose Names works f's names out on its first call and keeps them (a run
// asks only for the flags of its own command and the app's).
func named(f cli.Flag) cli.Flag {
	switch f := f.(type) {
	case *cli.BoolFlag:
		return boolFlag{f, new(names)}
	case *cli.StringFlag:
		return stringFlag{f, new(names)}
	case *cli.StringSliceFlag:
		return stringSliceFlag{f, new(names)}
	case *cli.IntFlag:
		return intFlag{f, new(names)}
	case *cli.Int64Flag:
		return int64Flag{f, new(names)}
	case *cli.UintFlag:
		return uintFlag{f, new(names)}
	case *cli.Float64Flag:
		return float64Flag{f, new(names)}
	case *cli.DurationFlag:
		return durationFlag{f, new(names)}
	}
	return f
}

// names holds a flag's names once worked out.
type names struct {
	once sync.Once
	v    []string
}

func (n *names) get(f cli.Flag) []string {
	n.once.Do(func() { n.v = f.Names() })
	return n.v
}

// One type per flag type: embedding the flag's pointer keeps every method
// it has (help, values, actions, categories), which embedding the Flag
// interface would hide.
type (
	boolFlag struct {
		*cli.BoolFlag
		names *names
	}
	stringFlag struct {
		*cli.StringFlag
		names *names
	}
	stringSliceFlag struct {
		*cli.StringSliceFlag
		names *names
	}
	intFlag struct {
		*cli.IntFlag
		names *names
	}
	int64Flag struct {
		*cli.Int64Flag
		names *names
	}
	uintFlag struct {
		*cli.UintFlag
		names *names
	}
	float64Flag struct {
		*cli.Float64Flag
		names *names
	}
	durationFlag struct {
		*cli.DurationFlag
		names *names
	}
)

func (f boolFlag) Names() []string        { return f.names.get(f.BoolFlag) }
func (f stringFlag) Names() []string      { return f.names.get(f.StringFlag) }
func (f stringSliceFlag) Names() []string { return f.names.get(f.StringSliceFlag) }
func (f intFlag) Names() []string         { return f.names.get(f.IntFlag) }
func (f int64Flag) Names() []string       { return f.names.get(f.Int64Flag) }
func (f uintFlag) Names() []string        { return f.names.get(f.UintFlag) }
func (f float64Flag) Names() []string     { return f.names.get(f.Float64Flag) }
func (f durationFlag) Names() []string    { return f.names.get(f.DurationFlag) }
