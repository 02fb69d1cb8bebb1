package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/sched"
)

// This file holds stop rules' flags, hold and release, and update: the
// commands that change a set in place.

// stopFlags are the stop rule's flags, shared by disclose and update.
func stopFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "stop-on-success", Usage: "cancel the rest of the set when a task exits 0"},
		&cli.StringFlag{Name: "stop-on-exit", Usage: "cancel the rest of the set when a task exits with one of these `CODES` (e.g. 0,3)"},
		&cli.StringFlag{Name: "stop-on-output", Usage: "cancel the rest of the set when a task's stdout matches `REGEX` (Go syntax; the first MiB is scanned)"},
		&cli.IntFlag{Name: "stop-after", Usage: "cancel the rest of the set after `N` tasks succeeded (exit 0)"},
	}
}

// stopHelp explains the stop flags in disclose's and update's help.
const stopHelp = `A stop rule ends the set early, on the server, the moment a task's result
says so: --stop-on-success (exit 0), --stop-on-exit CODES, --stop-on-output
REGEX (matched on the task's stdout, its first MiB), --stop-after N (N
successes). In the transaction that records that result, every task of the
set that still needs a run is canceled and its copies are killed, as cancel
does: disclosed work is never billed, a requested task whose copy ran is
billed for what it used. Tasks that already ran keep their results. The rule
fires once; status shows which task fired it.`

// stopRule reads the stop flags; set is false when none was given.
func stopRule(c *cli.Context) (rule sched.StopRule, set bool, err error) {
	rule.OnSuccess = c.Bool("stop-on-success")
	if c.IsSet("stop-on-exit") {
		if rule.OnExit, err = sched.ParseStopOnExit(c.String("stop-on-exit")); err != nil {
			return rule, true, usageErr("--%s", sched.ErrorMessage(err))
		}
	}
	rule.OnOutput = c.String("stop-on-output")
	if c.IsSet("stop-on-output") && rule.OnOutput == "" {
		return rule, true, usageErr("--stop-on-output is empty: give a regular expression")
	}
	n := c.Int("stop-after")
	if n < 0 || n > sched.MaxStopAfter {
		return rule, true, usageErr("--stop-after %d: want a count of successes, 1 or more", n)
	}
	rule.After = int32(n)
	if err := rule.Validate(); err != nil {
		return rule, true, usageErr("%s", sched.ErrorMessage(err))
	}
	return rule, !rule.IsZero(), nil
}

// stopLine is status's line about a set's stop rule ("" when none).
func stopLine(set sched.TaskSet) string {
	var parts []string
	if !set.Stop.IsZero() {
		parts = append(parts, "stop rule: "+set.Stop.String())
	}
	if f := set.Stopped; f != nil {
		parts = append(parts, fmt.Sprintf("fired by %d/%d (%s) at %s, canceled %s", f.Task.Set, f.Task.Index, f.Why,
			f.At.Local().Format("15:04:05"), plural(f.Canceled, "task")))
	}
	if set.Counts.Held > 0 {
		parts = append(parts, fmt.Sprintf("%s held (batchctl release %d)", plural(set.Counts.Held, "task"), set.ID))
	}
	return strings.Join(parts, "; ")
}

func holdCommand() *cli.Command {
	return &cli.Command{
		Name:      "hold",
		Usage:     "keep tasks from starting until released",
		ArgsUsage: "SET[/INDEX[,INDEX|LOW-HIGH...]]...",
		Description: `Hold SET holds every task of the set that still needs a run; hold SET/INDEX
holds named tasks. A held task is in neither the requested nor the disclosed
queue: it gets no copy, speculative ones included, until batchctl release.
Its running copies go on; with --suspend they are suspended (SIGSTOP) where
their worker can, and resume on release. why says "held". Holding twice is
harmless.

Examples:

   batchctl hold 3              # nothing more of set 3 starts
   batchctl hold --suspend 3/7  # and task 7's running copy stops too
   batchctl release 3`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "suspend", Usage: "suspend the held tasks' running copies (they resume on release)"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error { return holdOrRelease(c, true) },
	}
}

func releaseCommand() *cli.Command {
	return &cli.Command{
		Name:      "release",
		Usage:     "let held tasks start again",
		ArgsUsage: "SET[/INDEX[,INDEX|LOW-HIGH...]]...",
		Description: `Release SET releases every held task of the set; release SET/INDEX the
named ones. They go back to their queue (requested or disclosed) and their
suspended copies resume as any suspended copy does.

Examples:

   batchctl release 3
   batchctl release 3/0-9`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error { return holdOrRelease(c, false) },
	}
}

func holdOrRelease(c *cli.Context, hold bool) error {
	verb := "release"
	if hold {
		verb = "hold"
	}
	if !c.Args().Present() {
		return usageErr("%s what? give task references like 3 or 3/0 (see batchctl %s --help)", verb, verb)
	}
	sels, err := parseSels(c.Args().Slice())
	if err != nil {
		return err
	}
	cl := newClient(c)
	type view struct {
		Set       setView `json:"set"`
		Changed   int32   `json:"changed"`
		Unchanged int32   `json:"unchanged"`
		Suspended int32   `json:"suspended"`
	}
	var out []view
	for _, sel := range sels {
		in := client.HoldInput{Set: sel.Set, Indexes: sel.Indexes, All: sel.All, Suspend: c.Bool("suspend")}
		var res client.HoldResult
		if hold {
			res, err = cl.Hold(c.Context, in)
		} else {
			res, err = cl.Release(c.Context, in)
		}
		if err != nil {
			return err
		}
		out = append(out, view{viewSet(res.Set), res.Changed, res.Unchanged, res.Suspended})
	}
	if asJSON(c) {
		return writeJSON(c.App.Writer, out)
	}
	done := "released"
	if hold {
		done = "held"
	}
	for _, v := range out {
		line := fmt.Sprintf("set %d: %s %d", v.Set.ID, done, v.Changed)
		if v.Suspended > 0 {
			line += fmt.Sprintf(", suspended %d running copies", v.Suspended)
		}
		if v.Unchanged > 0 {
			line += fmt.Sprintf(", left %d as they were", v.Unchanged)
		}
		line += fmt.Sprintf("; %d held now", v.Set.Counts.Held)
		if _, err := fmt.Fprintln(c.App.Writer, line); err != nil {
			return err
		}
	}
	return nil
}

func updateCommand() *cli.Command {
	return &cli.Command{
		Name:      "update",
		Usage:     "change a set's cap, timeout, retry policy or stop rule in place",
		ArgsUsage: "SET",
		Description: `Update changes a set without disclosing anything; a flag left out leaves its
part as it is. --max-running 0 removes the cap; --timeout replaces the tasks'
own timeouts for copies started from now on (0: theirs again); --retries 0
removes the retry policy; --no-stop removes the stop rule (a rule that fired
stays fired).

` + stopHelp + `

Examples:

   batchctl update 3 --max-running 8
   batchctl update 3 --timeout 10m --retries 2 --retry-on nonzero
   batchctl update 3 --stop-on-output 'found at [0-9]+'`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "max-running", Usage: "run at most `N` copies of the set at once (0: no cap)"},
			&cli.StringFlag{Name: "timeout", Usage: "kill copies started from now on after this run time (e.g. 10m; 0: each task's own)"},
			&cli.IntFlag{Name: "retries", Usage: "retry each failed task in place up to `N` times (0: no retries)"},
			&cli.StringFlag{Name: "retry-on", Usage: "what --retries retries: `LIST` of exit codes, nonzero, timeout, lost (default " + sched.DefaultRetryOn + ")"},
			&cli.BoolFlag{Name: "no-stop", Usage: "remove the set's stop rule"},
			jsonFlag(),
		}, stopFlags()...),
		Action: update,
	}
}

func update(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("update what? give one set id (see batchctl update --help)")
	}
	sel, err := parseSel(c.Args().First())
	if err != nil {
		return err
	}
	if !sel.All {
		return usageErr("update changes a whole set: give SET, not SET/INDEX")
	}
	in := client.UpdateInput{Set: sel.Set}
	if c.IsSet("max-running") {
		n := c.Int("max-running")
		if n < 0 || n > 1<<30 {
			return usageErr("--max-running %d: want a number of copies (0: no cap)", n)
		}
		m := int32(n)
		in.MaxRunning = &m
	}
	if c.IsSet("timeout") {
		s, err := parseSeconds("timeout", c.String("timeout"))
		if err != nil {
			return err
		}
		in.TimeoutSeconds = &s
	}
	if c.IsSet("retries") || c.IsSet("retry-on") {
		p, err := retryPolicy(int32(c.Int("retries")), c.String("retry-on"))
		if err != nil {
			return err
		}
		in.Retry = &p
	}
	rule, hasRule, err := stopRule(c)
	if err != nil {
		return err
	}
	switch {
	case hasRule && c.Bool("no-stop"):
		return usageErr("--no-stop with a stop flag: give one or the other")
	case hasRule:
		in.Stop = &rule
	case c.Bool("no-stop"):
		in.Stop = &sched.StopRule{}
	}
	if in.MaxRunning == nil && in.TimeoutSeconds == nil && in.Retry == nil && in.Stop == nil {
		return usageErr("nothing to change: give --max-running, --timeout, --retries, a stop flag or --no-stop (see batchctl update --help)")
	}
	set, err := newClient(c).Update(c.Context, in)
	if err != nil {
		return err
	}
	if asJSON(c) {
		return writeJSON(c.App.Writer, struct {
			Set setView `json:"set"`
		}{viewSet(set)})
	}
	var parts []string
	if in.MaxRunning != nil {
		if set.MaxRunning > 0 {
			parts = append(parts, fmt.Sprintf("runs at most %d at once", set.MaxRunning))
		} else {
			parts = append(parts, "no cap")
		}
	}
	if in.TimeoutSeconds != nil {
		if set.TimeoutSeconds > 0 {
			parts = append(parts, "timeout "+secs(set.TimeoutSeconds)+" for copies started from now on")
		} else {
			parts = append(parts, "each task's own timeout")
		}
	}
	if in.Retry != nil {
		if set.Retry.Retries > 0 {
			parts = append(parts, fmt.Sprintf("retries up to %d times on %s", set.Retry.Retries, set.Retry.RetryOn()))
		} else {
			parts = append(parts, "no retries")
		}
	}
	if in.Stop != nil {
		if set.Stop.IsZero() {
			parts = append(parts, "no stop rule")
		} else {
			parts = append(parts, "stops "+set.Stop.String())
		}
	}
	_, err = fmt.Fprintf(c.App.Writer, "set %d: %s\n", set.ID, strings.Join(parts, "; "))
	return err
}
