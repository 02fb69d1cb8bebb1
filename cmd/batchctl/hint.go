package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"batchd/sched"
)

// notFoundExit is the shell's exit status for a command it could not find
// or run.
const notFoundExit = 127

// relativeCommand returns the program a task names by a relative path
// (./sim.sh, bin/sim), looking into a sh -c / bash -c line for its first
// word; "" when the program is absolute or looked up in $PATH.
func relativeCommand(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	prog := argv[0]
	if len(argv) == 3 && argv[1] == "-c" && !strings.Contains(argv[0], "/") {
		if f := strings.Fields(argv[2]); len(f) > 0 {
			prog = f[0]
		}
	}
	if strings.Contains(prog, "/") && !strings.HasPrefix(prog, "/") && !strings.HasPrefix(prog, "~") && !strings.HasPrefix(prog, "$") {
		return prog
	}
	return ""
}

// notFoundHint is the line batchctl prints under a task that exited 127
// naming its program by a relative path: the path was read in the task's
// working directory, which is a scratch directory unless --dir gave one.
// It is "" for any other task.
func notFoundHint(t sched.Task) string {
	if t.State != sched.TaskFinished || t.ExitCode != notFoundExit || t.TimedOut {
		return ""
	}
	prog := relativeCommand(t.Spec.Argv)
	if prog == "" {
		return ""
	}
	where := "in a scratch directory of its own on the worker (disclose --dir sets another)"
	if t.Spec.Dir != "" {
		where = fmt.Sprintf("in %s on the worker", t.Spec.Dir)
	}
	return fmt.Sprintf("batchctl: hint: task %d/%d exited 127 (command not found or not runnable): it ran %s, where %s was looked up; give an absolute path or --dir DIR",
		t.Set, t.Index, where, prog)
}

// printNotFoundHint prints the hint of the first of tasks that has one
// (one line, not one per task of a big set), with how many more do.
func printNotFoundHint(c *cli.Context, tasks []sched.Task) {
	first, n := "", 0
	for _, t := range tasks {
		if h := notFoundHint(t); h != "" {
			if n == 0 {
				first = h
			}
			n++
		}
	}
	if n > 1 {
		first += fmt.Sprintf(" (%d more tasks alike)", n-1)
	}
	if first != "" {
		fmt.Fprintln(c.App.ErrWriter, first)
	}
}
