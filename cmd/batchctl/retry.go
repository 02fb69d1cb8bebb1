package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/sched"
)

func retryCommand() *cli.Command {
	return &cli.Command{
		Name:      "retry",
		Usage:     "run failed, timed-out or canceled tasks again in place",
		ArgsUsage: "SET[/INDEX[,INDEX|LOW-HIGH...]]...",
		Description: `Retry SET runs every task of the set that failed (a non-zero exit), timed
out or was canceled again; retry SET/INDEX runs the named ones. A retried task
keeps its set and its index, so $BATCH_TASK_INDEX is what it was, and runs as
its next attempt: $BATCH_TASK_ATTEMPT is 2 for the first retry, and so on.
It keeps its class: a task that was requested is requested again, a disclosed
one is disclosed again. Earlier attempts and their outputs are kept:
batchctl status SET/INDEX lists them, batchctl output --attempt K SET/INDEX
prints one.

Billing: each requested attempt is billed once, the retried ones too; an
attempt that ran while disclosed and was retried before its request is free.

Named tasks that did not fail are left as they are (naming one alone is an
error). A set can retry on its own: see disclose --retries.

Examples:

   batchctl retry 3            # every failed task of set 3
   batchctl retry 3/7,9-12     # named tasks`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: retryTasks,
	}
}

func retryTasks(c *cli.Context) error {
	if !c.Args().Present() {
		return usageErr("retry what? give task references like 3 or 3/0 (see batchctl retry --help)")
	}
	sels, err := parseSels(c.Args().Slice())
	if err != nil {
		return err
	}
	cl := newClient(c)
	type view struct {
		Set       setView `json:"set"`
		Retried   []int32 `json:"retried"`
		Unchanged int32   `json:"unchanged"`
	}
	var out []view
	for _, sel := range sels {
		res, err := retrySel(c, cl, sel)
		if err != nil {
			return err
		}
		out = append(out, view{viewSet(res.Set), append([]int32{}, res.Retried...), res.Unchanged})
	}
	if asJSON(c) {
		return writeJSON(c.App.Writer, out)
	}
	for _, v := range out {
		line := fmt.Sprintf("set %d: retried %s", v.Set.ID, plural(int64(len(v.Retried)), "task"))
		if len(v.Retried) > 0 && len(v.Retried) <= 20 {
			line += " (" + indexList(v.Retried) + ")"
		}
		if v.Unchanged > 0 {
			line += fmt.Sprintf(", left %d that did not fail", v.Unchanged)
		}
		if _, err := fmt.Fprintln(c.App.Writer, line); err != nil {
			return err
		}
	}
	return nil
}

func indexList(idx []int32) string {
	parts := make([]string, len(idx))
	for i, x := range idx {
		parts[i] = strconv.Itoa(int(x))
	}
	return strings.Join(parts, ",")
}

// showTask prints one task in detail: its current attempt, its earlier
// attempts and every copy of each.
func showTask(c *cli.Context, cl *client.Client, ref sched.TaskRef) error {
	set, t, err := cl.GetTask(c.Context, ref)
	if err != nil {
		return err
	}
	if asJSON(c) {
		return writeJSON(c.App.Writer, struct {
			Set  setView  `json:"set"`
			Task taskView `json:"task"`
		}{viewSet(set), viewTask(t)})
	}
	w := c.App.Writer
	label := ""
	if set.Name != "" {
		label = fmt.Sprintf(" of set %q", set.Name)
	}
	fmt.Fprintf(w, "task %d/%d%s: %s, attempt %d\n", t.Set, t.Index, label, t.State, t.Attempt)
	fmt.Fprintf(w, "command: %s\n", strings.Join(t.Spec.Argv, " "))
	keptSummary(c, cl, t)
	if set.Retry.Retries > 0 {
		fmt.Fprintf(w, "retry policy: up to %d retries on %s\n", set.Retry.Retries, set.Retry.RetryOn())
	}
	// The server shows an attempt's exit status once it is readable: its
	// attempt finished, or ran while disclosed and the task has since been
	// requested. Elsewhere a 0 means "hidden", never "exit 0".
	requested := t.State == sched.TaskRequested || t.State == sched.TaskFinished || !t.RequestedAt.IsZero()
	readable := map[int32]bool{t.Attempt: t.State == sched.TaskFinished}
	for _, a := range t.Attempts {
		readable[a.Attempt] = a.State == sched.TaskFinished || (a.State == sched.TaskExecuted && requested)
	}
	at := newTable(c, "attempt", "state", "requested", "ended", "exit", "timed out", "service", "retried by", "output")
	fmt.Fprintln(w, "attempts (batchctl output --attempt K reads an earlier one):")
	for _, a := range t.Attempts {
		ended := a.FinishedAt
		if ended.IsZero() {
			ended = a.ExecutedAt
		}
		if ended.IsZero() {
			ended = a.CanceledAt
		}
		exit, out := "-", "-"
		if readable[a.Attempt] {
			exit = strconv.Itoa(int(a.ExitCode))
		}
		if a.HasOutput && a.State == sched.TaskFinished {
			out = fmt.Sprintf("--attempt %d", a.Attempt)
		}
		if err := at.Append(strconv.Itoa(int(a.Attempt)), string(a.State), when(a.RequestedAt), when(ended), exit,
			yesNo(a.TimedOut && a.State != sched.TaskExecuted), secs(a.ServiceSeconds), a.RetriedBy, out); err != nil {
			return err
		}
	}
	ended := t.FinishedAt
	if ended.IsZero() {
		ended = t.ExecutedAt
	}
	if ended.IsZero() {
		ended = t.CanceledAt
	}
	out := "-"
	if t.State == sched.TaskFinished {
		out = "yes"
	}
	if err := at.Append(strconv.Itoa(int(t.Attempt))+" (current)", string(t.State), when(t.RequestedAt), when(ended),
		exitText(t.State, t.ExitCode), yesNo(t.TimedOut && t.State == sched.TaskFinished), secs(t.ServiceSeconds), "-", out); err != nil {
		return err
	}
	if err := at.Render(); err != nil {
		return err
	}
	ct := newTable(c, "copy", "attempt", "worker/slot", "state", "started", "ended", "exit", "signal", "timed out", "progress", "run")
	for _, x := range t.Copies {
		id := strconv.FormatInt(int64(x.ID), 10)
		if x.Speculative {
			id += " (speculative)"
		}
		exit, sig := "-", "-"
		if readable[x.Attempt] && !x.State.Live() && !x.EndedAt.IsZero() && (x.ExitCode != 0 || x.Signal != 0 || x.State == sched.CopyWon) {
			exit = strconv.Itoa(int(x.ExitCode))
		}
		if x.Signal != 0 {
			sig = strconv.Itoa(int(x.Signal))
		}
		prog := "-"
		if x.Progress >= 0 {
			prog = fmt.Sprintf("%.0f%%", 100*x.Progress)
		}
		if err := ct.Append(id, strconv.Itoa(int(x.Attempt)), fmt.Sprintf("%s/%d", x.Slot.Worker, x.Slot.Slot),
			string(x.State), when(x.StartedAt), when(x.EndedAt), exit, sig,
			yesNo(x.TimedOut), prog, secs(x.RunSeconds)); err != nil {
			return err
		}
	}
	if h := notFoundHint(t); h != "" {
		fmt.Fprintln(c.App.ErrWriter, h)
	}
	if len(t.Copies) == 0 {
		_, err := fmt.Fprintln(w, "no copy has run yet")
		return err
	}
	fmt.Fprintln(w, "copies:")
	return ct.Render()
}

// exitText is an attempt's exit code where it can be shown: not for a
// task that is not requested (its result is not readable yet).
func exitText(st sched.TaskState, exit int32) string {
	if st == sched.TaskFinished {
		return strconv.Itoa(int(exit))
	}
	return "-"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "-"
}

// retrySel retries the tasks sel names, or every failed task of its set.
func retrySel(c *cli.Context, cl *client.Client, sel taskSel) (client.RetryResult, error) {
	if sel.All {
		return cl.RetryAll(c.Context, sel.Set)
	}
	return cl.Retry(c.Context, sel.Set, sel.Indexes)
}
