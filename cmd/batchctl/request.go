package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/sched"
)

func requestCommand() *cli.Command {
	return &cli.Command{
		Name:      "request",
		Usage:     "request tasks, wait for them and print their results",
		ArgsUsage: "SET[/INDEX[,INDEX|LOW-HIGH...]]...",
		Description: `Requested tasks run ahead of all disclosed work. A task that already ran
while disclosed finishes at once. By default request waits: with a terminal it
shows progress on stderr (finished, running, waiting, elapsed).

For one task it then prints the task's stdout to stdout and its stderr to
stderr, and exits with the task's exit status (124 when it timed out). For
several tasks it prints a table and exits with 5 if any failed, timed out or
was canceled. A whole set (SET) counts as several tasks.

Examples:

   batchctl request 3/0                 # wait, print output, exit like the task
   batchctl request 3/0,4,10-19 7/2     # several tasks of two sets
   batchctl request 3                   # every unrequested task of set 3
   batchctl request --no-wait 3/5       # request and return at once`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "no-wait", Usage: "request and return without waiting"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress display, even on a terminal"},
			&cli.BoolFlag{Name: "with-output", Usage: "with --json and several tasks: each task carries its stdout and stderr"},
			jsonFlag(),
		},
		Action: request,
	}
}

// errInterrupted is request's answer to Ctrl-C.
var errInterrupted = &exitError{code: exitInterrupted,
	msg: "interrupted: requested tasks stay requested; `batchctl request` again waits for them, `batchctl cancel` stops them"}

func request(c *cli.Context) error {
	if !c.Args().Present() {
		return usageErr("request what? give task references like 3/0 or 3 (see batchctl request --help)")
	}
	sels, err := parseSels(c.Args().Slice())
	if err != nil {
		return err
	}
	cl := newClient(c)
	results := make([]client.RequestResult, 0, len(sels))
	for _, sel := range sels {
		var res client.RequestResult
		if sel.All {
			res, err = cl.RequestAll(c.Context, sel.Set)
		} else {
			res, err = cl.Request(c.Context, sel.Set, sel.Indexes)
		}
		if err != nil && c.Context.Err() != nil {
			return errInterrupted
		}
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	w := c.App.Writer
	if c.Bool("no-wait") {
		if asJSON(c) {
			type view struct {
				Set            setView    `json:"set"`
				Requested      int32      `json:"requested"`
				FinishedAtOnce int32      `json:"finished_at_once"`
				Unchanged      int32      `json:"unchanged"`
				Tasks          []taskView `json:"tasks"`
			}
			out := []view{}
			for _, r := range results {
				out = append(out, view{viewSet(r.Set), r.Requested, r.FinishedAtOnce, r.Unchanged, viewTasks(r.Tasks)})
			}
			return writeJSON(w, out)
		}
		for _, r := range results {
			if _, err := fmt.Fprintf(w, "set %d: requested %d, finished at once %d, unchanged %d\n",
				r.Set.ID, r.Requested, r.FinishedAtOnce, r.Unchanged); err != nil {
				return err
			}
		}
		return nil
	}

	var done []sched.Task
	progress := newProgress(c.App.ErrWriter, !c.Bool("quiet") && isTerminal(c.App.ErrWriter))
	defer progress.stop()
	for i, sel := range sels {
		tasks, err := waitFor(c.Context, cl, sel, results[i], progress)
		if err != nil && c.Context.Err() != nil {
			return errInterrupted
		}
		if err != nil {
			return err
		}
		done = append(done, tasks...)
	}
	progress.stop()

	if len(done) == 1 && len(sels[0].Indexes) == 1 {
		return printOne(c, cl, done[0])
	}
	return printMany(c, cl, done)
}

// waitFor waits until the selected tasks are finished or canceled and
// returns them in index order.
func waitFor(ctx context.Context, cl *client.Client, sel taskSel, res client.RequestResult, p *progress) ([]sched.Task, error) {
	final := map[int32]sched.Task{}
	want := map[int32]bool{}
	for _, i := range sel.Indexes {
		want[i] = true
	}
	for _, t := range res.Tasks {
		if want[t.Index] && t.State.Final() {
			final[t.Index] = t
		}
	}
	doneFunc := func(s sched.TaskSet) bool {
		if len(want) > 0 {
			return len(final) == len(want)
		}
		return s.Counts.Finished+s.Counts.Canceled >= s.Counts.Total
	}
	if !doneFunc(res.Set) {
		// Only what the wait reads: the named tasks, or the set's counts
		// (its tasks are read page by page at the end).
		in := client.WatchInput{Set: sel.Set, Indexes: sel.Indexes, SummaryOnly: len(want) == 0}
		err := cl.WatchTasks(ctx, in, func(u client.WatchUpdate) error {
			for _, t := range u.Tasks {
				if len(want) > 0 && want[t.Index] && t.State.Final() {
					final[t.Index] = t
				}
			}
			p.update(u.Set, len(want), len(final))
			if doneFunc(u.Set) {
				return client.ErrStopWatch
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(want) > 0 {
		out := make([]sched.Task, 0, len(final))
		for _, t := range final {
			out = append(out, t)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
		return out, nil
	}
	// The whole set: read its tasks page by page.
	var out []sched.Task
	token := ""
	for {
		page, err := cl.GetTaskSet(ctx, client.GetTaskSetInput{Set: sel.Set, PageSize: 10000, PageToken: token})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Tasks...)
		if token = page.NextPageToken; token == "" {
			return out, nil
		}
	}
}

// printOne prints a single task's output and exits like it.
func printOne(c *cli.Context, cl *client.Client, t sched.Task) error {
	ref := sched.TaskRef{Set: t.Set, Index: t.Index}
	if t.State == sched.TaskCanceled {
		return &exitError{code: exitPrecondition, msg: fmt.Sprintf("task %d/%d was canceled before it finished", t.Set, t.Index)}
	}
	out, err := cl.GetOutput(c.Context, ref)
	if err != nil {
		return err
	}
	if asJSON(c) {
		if err := writeJSON(c.App.Writer, viewOutput(ref, out)); err != nil {
			return err
		}
	} else {
		if _, err := c.App.Writer.Write(out.Stdout); err != nil {
			return err
		}
		if _, err := c.App.ErrWriter.Write(out.Stderr); err != nil {
			return err
		}
		if out.StdoutTruncated || out.StderrTruncated {
			fmt.Fprintf(c.App.ErrWriter, "batchctl: output of task %d/%d was cut at the server's cap\n", t.Set, t.Index)
		}
	}
	code := int(out.ExitCode)
	if code < 0 || code > 255 {
		code = exitInvalid
	}
	if out.TimedOut {
		return &exitError{code: code, msg: fmt.Sprintf("task %d/%d timed out", t.Set, t.Index)}
	}
	if h := notFoundHint(t); h != "" {
		fmt.Fprintln(c.App.ErrWriter, h)
	}
	if code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// failed reports whether a final task did not succeed.
func failed(t sched.Task) bool {
	return t.State != sched.TaskFinished || t.ExitCode != 0 || t.TimedOut
}

// printMany prints a table (or JSON) of final tasks and exits with 5 when
// any failed.
func printMany(c *cli.Context, cl *client.Client, tasks []sched.Task) error {
	nfailed := 0
	for _, t := range tasks {
		if failed(t) {
			nfailed++
		}
	}
	if asJSON(c) && c.Bool("with-output") {
		outs, err := outputsOf(c, cl, tasks)
		if err != nil {
			return err
		}
		type withOutput struct {
			taskView
			Output *outputView `json:"output"`
		}
		views := make([]withOutput, len(tasks))
		for i, t := range tasks {
			views[i].taskView = viewTask(t)
			ref := sched.TaskRef{Set: t.Set, Index: t.Index}
			if o := outs[ref]; o != nil {
				v := viewOutput(ref, *o)
				views[i].Output = &v
			}
		}
		if err := writeJSON(c.App.Writer, struct {
			Tasks  []withOutput `json:"tasks"`
			Failed int          `json:"failed"`
		}{views, nfailed}); err != nil {
			return err
		}
	} else if asJSON(c) {
		if err := writeJSON(c.App.Writer, struct {
			Tasks  []taskView `json:"tasks"`
			Failed int        `json:"failed"`
		}{viewTasks(tasks), nfailed}); err != nil {
			return err
		}
	} else {
		t := newTable(c, "task", "state", "exit", "service", "visible response")
		for _, x := range tasks {
			exit := strconv.Itoa(int(x.ExitCode))
			switch {
			case x.State != sched.TaskFinished:
				exit = "-"
			case x.TimedOut:
				exit += " (timed out)"
			}
			if err := t.Append(fmt.Sprintf("%d/%d", x.Set, x.Index), string(x.State), exit,
				secs(x.ServiceSeconds), secs(x.VisibleResponseSeconds)); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	printNotFoundHint(c, tasks)
	if nfailed > 0 {
		return &exitError{code: exitTasksFailed, msg: fmt.Sprintf("%d of %d tasks failed, timed out or were canceled; run them again in place: %s",
			nfailed, len(tasks), retryHint(tasks))}
	}
	return nil
}

// retryHint is the batchctl retry command line for the failed tasks.
func retryHint(tasks []sched.Task) string {
	bySet := map[sched.SetID][]int32{}
	var sets []sched.SetID
	for _, t := range tasks {
		if !failed(t) {
			continue
		}
		if _, ok := bySet[t.Set]; !ok {
			sets = append(sets, t.Set)
		}
		bySet[t.Set] = append(bySet[t.Set], t.Index)
	}
	slices.Sort(sets)
	args := []string{"batchctl retry"}
	for _, set := range sets {
		idx := bySet[set]
		if len(idx) > 20 {
			args = append(args, strconv.FormatInt(int64(set), 10)) // every failed task of the set
			continue
		}
		slices.Sort(idx)
		args = append(args, fmt.Sprintf("%d/%s", set, indexList(idx)))
	}
	return strings.Join(args, " ")
}

// progress draws a one-line status on a terminal and redraws it every
// second so the elapsed time moves; on anything else it draws nothing.
type progress struct {
	w     io.Writer
	on    bool
	start time.Time

	mu      sync.Mutex
	line    string
	done    chan struct{}
	stopped bool
}

func newProgress(w io.Writer, on bool) *progress {
	p := &progress{w: w, on: on, start: time.Now(), done: make(chan struct{})}
	if on {
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-p.done:
					return
				case <-t.C:
					p.draw()
				}
			}
		}()
	}
	return p
}

// update records the latest counts; want > 0 means only want tasks matter,
// of which got are final.
func (p *progress) update(s sched.TaskSet, want, got int) {
	if !p.on {
		return
	}
	c := s.Counts
	var line string
	if want > 0 {
		line = fmt.Sprintf("set %d: %d/%d done, %d running in the set", s.ID, got, want, c.Running)
	} else {
		line = fmt.Sprintf("set %d: %d/%d done, %d running, %d waiting", s.ID,
			c.Finished+c.Canceled, c.Total, c.Running, max(0, c.Requested-c.Running))
	}
	p.mu.Lock()
	p.line = line
	p.mu.Unlock()
	p.draw()
}

func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.line == "" {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s  (%s)", p.line, time.Since(p.start).Truncate(time.Second))
}

// stop ends the display and clears its line. It may be called twice.
func (p *progress) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	close(p.done)
	if p.on && p.line != "" {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
