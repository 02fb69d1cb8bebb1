package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"batchd/sched"
)

// taskCommand is the command column of a task: its command, cut to 40
// characters when the table has a width to fit (a terminal, $COLUMNS;
// whole with --wide or into a pipe), after its array value when it has
// one, since every task of an array runs the same line.
func taskCommand(c *cli.Context, spec sched.TaskSpec) string {
	cmd := shortCommand(spec.Argv)
	if tableWidth(c) == 0 {
		argv := spec.Argv
		if len(argv) == 3 && argv[0] == "sh" && argv[1] == "-c" {
			argv = argv[2:]
		}
		cmd = strings.Join(argv, " ")
	}
	if v, ok := spec.Env[sched.ArrayValueEnv]; ok {
		return "[" + v + "] " + cmd
	}
	return cmd
}
