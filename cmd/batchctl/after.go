package main

import (
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"batchd/sched"
)

// This file is disclose's --after, --after-task and --label: a new set
// that waits for other sets or tasks, and its labels.

// afterFlags are disclose's flags for dependencies and labels.
func afterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "after", Usage: "a new set waits until set `SET[:ok|:any]` ends (ok, the default: every requested task of it succeeded; " +
			"a failed or canceled SET then cancels the new set; any: however it ends); repeatable"},
		&cli.StringSliceFlag{Name: "after-task", Usage: "a new set waits until task `SET/INDEX[:ok|:any]` ends; repeatable"},
		&cli.StringSliceFlag{Name: "label", Usage: "give a new set label `KEY=VALUE`, to find it with batchctl ls --label (repeatable)"},
	}
}

// afterHelp is disclose's help text on dependencies.
const afterHelp = `
--after SET makes the new set wait: its tasks (requested with --request, or
disclosed) run only once set SET has ended, i.e. none of its tasks is left
to run (each finished, executed or canceled; cancel the rest of a set to end
it early). By default (:ok) it must have succeeded: no requested task of it
failed, and at least one ran to a result; a set that failed or was canceled
cancels the waiting set, and status says why. SET:any waits for the end
whatever it is. --after-task SET/INDEX waits for one task. A set can wait
only for sets you may see that exist already, so there are no cycles;
batchctl why says what it waits for ("waiting for set 12: 3 of 40 left").

   batchctl disclose --after 12 --request --file post.txt
   batchctl disclose --after 12:any --after-task 13/0 -- ./report.sh
   batchctl disclose --label project=ray --label stage=render --file frames.txt
`

// parseAfter reads --after and --after-task.
func parseAfter(c *cli.Context) ([]sched.Dependency, error) {
	var deps []sched.Dependency
	for _, flag := range []string{"after", "after-task"} {
		for _, s := range c.StringSlice(flag) {
			d, err := parseDependency(s, flag == "after-task")
			if err != nil {
				return nil, usageErr("--%s %q: %s", flag, s, err.Error())
			}
			deps = append(deps, d)
		}
	}
	if err := sched.CheckDependencies(deps); err != nil {
		return nil, usageErr("%s", sched.ErrorMessage(err))
	}
	return deps, nil
}

// parseDependency reads SET[:ok|:any] or, for a task, SET/INDEX[:ok|:any].
func parseDependency(s string, task bool) (sched.Dependency, error) {
	d := sched.Dependency{Index: sched.WholeSet}
	ref, mode, _ := strings.Cut(s, ":")
	switch mode {
	case "", "ok":
	case "any":
		d.Any = true
	default:
		return d, usageErr("want :ok or :any after the set, not :%s", mode)
	}
	setPart, idxPart, hasIdx := strings.Cut(ref, "/")
	if hasIdx != task {
		if task {
			return d, usageErr("want SET/INDEX, e.g. 12/3")
		}
		return d, usageErr("want a set id, e.g. 12 (use --after-task for one task)")
	}
	id, err := strconv.ParseInt(setPart, 10, 64)
	if err != nil || id <= 0 {
		return d, usageErr("want a set id, e.g. 12")
	}
	d.Set = sched.SetID(id)
	if task {
		i, err := strconv.ParseInt(idxPart, 10, 32)
		if err != nil || i < 0 {
			return d, usageErr("want a task index from 0, e.g. 12/3")
		}
		d.Index = int32(i)
	}
	return d, nil
}
