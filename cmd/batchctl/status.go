package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/sched"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "list your task sets, the tasks of one, or one task in detail",
		ArgsUsage: "[SET[/INDEX]]",
		Description: `Without an argument, lists your task sets, newest first, a page at a time
(--limit, then --page TOKEN as printed; batchctl ls finds sets by name,
state, time and label). With SET, shows the set and its tasks
(--state to pick states; the first 1000 tasks unless --limit says
otherwise, then --page TOKEN as printed). With SET/INDEX, shows one task in
detail: each attempt (batchctl retry) and every copy of each, with its worker,
start, end, exit code, signal, timed-out flag and progress.

Examples:

   batchctl status
   batchctl status 3
   batchctl status --state requested,finished 3
   batchctl status --state failed,running 3
   batchctl status 3/7`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "state", Usage: "only tasks in these `STATES`, comma-separated: " + stateNames + " (running: a copy runs; failed: finished with a non-zero exit or timed out)"},
			&cli.IntFlag{Name: "limit", Usage: "at most this many rows (default: 100 sets, 1000 tasks)"},
			&cli.StringFlag{Name: "page", Usage: "continue a listing from `TOKEN`"},
			jsonFlag(),
		},
		Action: status,
	}
}

func status(c *cli.Context) error {
	cl := newClient(c)
	switch c.NArg() {
	case 0:
		return listSets(c, cl)
	case 1:
		sel, err := parseSel(c.Args().First())
		if err != nil {
			return err
		}
		switch len(sel.Indexes) {
		case 0:
			return showSet(c, cl, sel.Set)
		case 1:
			return showTask(c, cl, sched.TaskRef{Set: sel.Set, Index: sel.Indexes[0]})
		}
		return usageErr("status takes a set (e.g. 3) or one task (e.g. 3/7); use --state to filter a set's tasks")
	}
	return usageErr("status takes at most one set")
}

func listSets(c *cli.Context, cl *client.Client) error {
	limit := c.Int("limit")
	if limit <= 0 {
		limit = 100
	}
	var sets []sched.TaskSet
	token := c.String("page")
	for len(sets) < limit {
		page, err := cl.ListTaskSets(c.Context, int32(min(limit-len(sets), 1000)), token)
		if err != nil {
			return err
		}
		sets = append(sets, page.Sets...)
		token = page.NextPageToken
		if token == "" {
			break
		}
	}
	if asJSON(c) {
		views := []setView{}
		for _, s := range sets {
			views = append(views, viewSet(s))
		}
		return writeJSON(c.App.Writer, struct {
			Sets          []setView `json:"sets"`
			NextPageToken string    `json:"next_page_token"`
		}{views, token})
	}
	t := newTable(c, "set", "name", "created", "tasks", "disclosed", "executed", "requested", "finished", "canceled", "running", "billed")
	for _, s := range sets {
		n := s.Counts
		if err := t.Append(strconv.FormatInt(int64(s.ID), 10), s.Name, when(s.CreatedAt), n.Total, n.Disclosed, n.Executed,
			n.Requested, n.Finished, n.Canceled, n.Running, secs(s.BilledSlotSeconds)); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if token != "" {
		fmt.Fprintf(c.App.ErrWriter, "more: batchctl status --page %s\n", token)
	}
	return nil
}

func showSet(c *cli.Context, cl *client.Client, id sched.SetID) error {
	filter, err := parseStates(c.String("state"))
	if err != nil {
		return err
	}
	limit := c.Int("limit")
	if limit <= 0 {
		limit = 1000
	}
	var set sched.TaskSet
	var tasks []sched.Task
	token := c.String("page")
	for {
		size := int32(min(limit-len(tasks), 10000))
		page, err := cl.GetTaskSet(c.Context, client.GetTaskSetInput{Set: id, PageSize: size, PageToken: token, States: filter.server})
		if err != nil {
			return err
		}
		set = page.Set
		for _, t := range page.Tasks {
			if filter.keep(t) {
				tasks = append(tasks, t)
			}
		}
		token = page.NextPageToken
		if token == "" || len(tasks) >= limit {
			break
		}
	}
	if asJSON(c) {
		return writeJSON(c.App.Writer, struct {
			Set           setView    `json:"set"`
			Tasks         []taskView `json:"tasks"`
			NextPageToken string     `json:"next_page_token"`
		}{viewSet(set), viewTasks(tasks), token})
	}
	n := set.Counts
	label := ""
	if set.Name != "" {
		label = fmt.Sprintf(" %q", set.Name)
	}
	capText := ""
	if set.MaxRunning > 0 {
		capText = fmt.Sprintf(" (at most %d at once)", set.MaxRunning)
	}
	if !set.Route.IsZero() {
		capText += " in " + set.Route.String()
	}
	fmt.Fprintf(c.App.Writer, "set %d%s: %s, %d disclosed, %d executed, %d requested, %d finished, %d canceled, %d running%s; billed %s\n",
		set.ID, label, plural(n.Total, "task"), n.Disclosed, n.Executed, n.Requested, n.Finished, n.Canceled, n.Running, capText, secs(set.BilledSlotSeconds))
	if line := stopLine(set); line != "" {
		fmt.Fprintln(c.App.Writer, line)
	}
	if line := setStateLine(set); line != "" {
		fmt.Fprintln(c.App.Writer, line)
	}
	whys := whyColumn(c, cl, id, tasks)
	t := newTable(c, "task", "state", "why", "command", "copies", "progress", "exit", "service", "visible response")
	for _, x := range tasks {
		exit := "-"
		if x.State == sched.TaskFinished {
			exit = strconv.Itoa(int(x.ExitCode))
			if x.TimedOut {
				exit += " (timed out)"
			}
		}
		prog := "-"
		if x.Progress >= 0 && x.State != sched.TaskFinished {
			prog = fmt.Sprintf("%.0f%%", 100*x.Progress)
		}
		why := whys[x.Index]
		if why == "" || why == sched.WhyRunning.Short() {
			why = "-"
		}
		if x.FailReason != "" && x.State == sched.TaskCanceled {
			why = x.FailReason
		}
		state := string(x.State)
		if x.Attempt > 1 {
			state += fmt.Sprintf(" (attempt %d)", x.Attempt) // retried in place: status SET/I lists the attempts
		}
		if err := t.Append(fmt.Sprintf("%d/%d", x.Set, x.Index), state, why, taskCommand(c, x.Spec),
			copiesText(x.Copies), prog, exit, secs(x.ServiceSeconds), secs(x.VisibleResponseSeconds)); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	printNotFoundHint(c, tasks)
	if token != "" {
		fmt.Fprintf(c.App.ErrWriter, "more: batchctl status --page %s %d\n", token, id)
	}
	return nil
}

// shortCommand shows argv on one line, unwrapping sh -c, cut to 40 runes.
func shortCommand(argv []string) string {
	if len(argv) == 3 && argv[0] == "sh" && argv[1] == "-c" {
		argv = argv[2:]
	}
	s := strings.Join(argv, " ")
	if r := []rune(s); len(r) > 40 {
		s = string(r[:39]) + "…"
	}
	return s
}

// copiesText counts a task's live copies ("1 running", "2 running, 1 suspended").
func copiesText(copies []sched.Copy) string {
	running, suspended := 0, 0
	for _, c := range copies {
		switch c.State {
		case sched.CopyRunning:
			running++
		case sched.CopySuspended:
			suspended++
		}
	}
	switch {
	case running == 0 && suspended == 0:
		return "-"
	case suspended == 0:
		return fmt.Sprintf("%d running", running)
	}
	return fmt.Sprintf("%d running, %d suspended", running, suspended)
}

func outputCommand() *cli.Command {
	return &cli.Command{
		Name:      "output",
		Usage:     "print a requested task's output (its current attempt, or --attempt K), or write many tasks' outputs to files",
		ArgsUsage: "SET/INDEX | SET/INDEX --files | SET[/RANGE] --dir DIR | SET[/RANGE] --tar",
		Description: `Prints the task's stdout exactly as it was written (--stderr for its stderr).
Only requested tasks' output is readable: request a disclosed task first
(which finishes it at once if it already ran). --json adds the exit status,
CPU and slot seconds.

--follow (-f) prints a running task's output as it comes, stdout to stdout
and stderr to stderr, and returns when the task ends (at once, with its
stored output, for a finished task). It follows the copy expected to win
and says on stderr when it switches to another copy.

--attempt K prints an earlier attempt's output (batchctl status SET/INDEX
lists the attempts); an attempt that ran while disclosed and was retried
before its request was not billed, and its output is not readable.

--files lists the files the task's attempt kept (disclose --keep): path,
size, and for each file that was not kept, why (a symlink, over a cap, ...).

With --dir DIR, writes the outputs of a whole set (SET) or some of its tasks
(SET/0-99,120) as DIR/SET-I.out and DIR/SET-I.err, and each task's kept files
as DIR/SET/I/PATH (never outside DIR; an existing file is not written over
without --force), reading many tasks per call (up to --page-bytes of output
each); with --tar, writes the same files as a tar stream to stdout or to
--output FILE. Files the task did not keep, and kept files that could not
be written, are listed on stderr; the latter make the command exit 3. Progress goes to stderr (-q:
none). Tasks whose output is not readable (not requested, not finished,
canceled) are listed on stderr and make the command exit 3 after the others
are written.

Examples:

   batchctl output 3/0 > result.txt
   batchctl output --stderr 3/0
   batchctl output --follow 3/0
   batchctl output --attempt 1 3/0
   batchctl output 3 --dir results/          # results/3-0.out, results/3-0.err, ...
   batchctl output --files 3/0               # the files task 0 kept
                                             # (with --dir: results/3/0/PATH)
   batchctl output 3/0-99 --tar > first100.tar`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "stderr", Usage: "print stderr instead of stdout"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "print a running task's output as it comes, until the task ends"},
			&cli.IntFlag{Name: "attempt", Usage: "the output of attempt `K` of the task (default: the current attempt)"},
			&cli.StringFlag{Name: "dir", Aliases: []string{"d"}, Usage: "write each task's streams to `DIR`/SET-I.out and DIR/SET-I.err"},
			&cli.BoolFlag{Name: "files", Usage: "list the files the task kept (disclose --keep), with why any were not"},
			&cli.BoolFlag{Name: "force", Usage: "with --dir: write kept files over existing ones"},
			&cli.BoolFlag{Name: "tar", Usage: "write SET-I.out and SET-I.err of each task as a tar stream (to stdout, or --output)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "with --tar: write the tar to `FILE` instead of stdout"},
			&cli.StringFlag{Name: "page-bytes", Usage: "with --dir or --tar: at most this much output per call (e.g. 1M; default the server's, 4 MiB)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "with --dir or --tar: no progress on stderr"},
			jsonFlag(),
		},
		Action: output,
	}
}

func output(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("output takes one task reference, e.g. 3/0")
	}
	sel, err := parseSel(c.Args().First())
	if err != nil {
		return err
	}
	if c.IsSet("dir") || c.Bool("tar") {
		return bulkOutput(c, sel)
	}
	if len(sel.Indexes) != 1 {
		return usageErr("output prints one task, e.g. %d/0; for many, write them to files with --dir DIR or --tar", sel.Set)
	}
	if c.Bool("files") && c.Bool("stderr") {
		return usageErr("give --files or --stderr, not both")
	}
	ref := sched.TaskRef{Set: sel.Set, Index: sel.Indexes[0]}
	if c.Bool("follow") {
		return followOutput(c, ref)
	}
	cl := newClient(c)
	out, err := cl.GetAttemptOutput(c.Context, ref, int32(c.Int("attempt")))
	if err != nil {
		return err
	}
	if c.Bool("files") {
		return listKept(c, ref, out)
	}
	if asJSON(c) {
		return writeJSON(c.App.Writer, viewOutput(ref, out))
	}
	data := out.Stdout
	if c.Bool("stderr") {
		data = out.Stderr
	}
	if _, err = c.App.Writer.Write(data); err != nil {
		return err
	}
	if out.ExitCode == notFoundExit && !out.TimedOut {
		if _, t, err := cl.GetTask(c.Context, ref); err == nil {
			t.ExitCode, t.TimedOut, t.State = out.ExitCode, out.TimedOut, sched.TaskFinished
			if h := notFoundHint(t); h != "" {
				fmt.Fprintln(c.App.ErrWriter, h)
			}
		}
	}
	return nil
}

// stateNames lists what --state accepts.
const stateNames = "disclosed, executed, requested, finished, canceled, running, failed"

// stateFilter is a parsed --state: the task states to ask the server for,
// and the tests batchctl applies itself for running and failed, which are
// not states of a task but of its copies or its result.
type stateFilter struct {
	server  []sched.TaskState
	states  map[sched.TaskState]bool
	running bool
	failed  bool
}

func parseStates(s string) (stateFilter, error) {
	f := stateFilter{states: map[sched.TaskState]bool{}}
	if strings.TrimSpace(s) == "" {
		return f, nil
	}
	ask := map[sched.TaskState]bool{}
	for _, x := range strings.Split(s, ",") {
		x = strings.ToLower(strings.TrimSpace(x))
		switch st := sched.TaskState(x); {
		case st.Valid():
			f.states[st] = true
			ask[st] = true
		case x == "running":
			// Only unfinished tasks have running copies.
			f.running = true
			ask[sched.TaskDisclosed], ask[sched.TaskRequested] = true, true
		case x == "failed":
			f.failed = true
			ask[sched.TaskFinished] = true
		default:
			return f, usageErr("--state %q: want some of %s", x, stateNames)
		}
	}
	for _, st := range []sched.TaskState{sched.TaskDisclosed, sched.TaskExecuted, sched.TaskRequested, sched.TaskFinished, sched.TaskCanceled} {
		if ask[st] {
			f.server = append(f.server, st)
		}
	}
	return f, nil
}

// keep reports whether t passes the filter.
func (f stateFilter) keep(t sched.Task) bool {
	if len(f.states) == 0 && !f.running && !f.failed {
		return true
	}
	if f.states[t.State] {
		return true
	}
	if f.running {
		for _, c := range t.Copies {
			if c.State == sched.CopyRunning {
				return true
			}
		}
	}
	return f.failed && t.State == sched.TaskFinished && (t.ExitCode != 0 || t.TimedOut)
}
