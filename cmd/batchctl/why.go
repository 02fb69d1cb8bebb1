package main

import (
	"fmt"
	"math"
	"strconv"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/sched"
)

func whyCommand() *cli.Command {
	return &cli.Command{
		Name:      "why",
		Usage:     "say why tasks wait: their class, place in line, reason and an estimate",
		ArgsUsage: "SET/INDEX | SET/I,J,K-L | SET",
		Description: `Asks the scheduler why each task is not running yet: its class (requested
work runs first; disclosed work only on idle slots), its position in its set's
queue and the jobs and tasks ahead of it, the reason, and an estimate of when
it starts and finishes, with what the estimate assumes. With SET alone, every
task of the set that still needs a run (the first --limit).

Reasons: next in line; no free slot; capped by --max-running; disclosed work
waits for idle slots; suspended for requested work; worker lost, requeued;
waiting for a resource request.

Examples:

   batchctl why 3/7
   batchctl why 3
   batchctl why --json 3/0-9`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "limit", Value: 1000, Usage: "with SET, explain at most this many tasks"},
			jsonFlag(),
		},
		Action: why,
	}
}

func why(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("why takes one task reference, e.g. 3/7, 3/0-9 or 3")
	}
	sel, err := parseSel(c.Args().First())
	if err != nil {
		return err
	}
	cl := newClient(c)
	idx := sel.Indexes
	if len(idx) == 0 {
		limit := max(c.Int("limit"), 1)
		page, err := cl.GetTaskSet(c.Context, client.GetTaskSetInput{Set: sel.Set, PageSize: int32(min(limit, 10000)),
			States: []sched.TaskState{sched.TaskRequested, sched.TaskDisclosed}})
		if err != nil {
			return err
		}
		for _, t := range page.Tasks {
			idx = append(idx, t.Index)
		}
		if len(idx) == 0 {
			_, err := fmt.Fprintf(c.App.Writer, "set %d: no task waits (none is disclosed or requested)\n", sel.Set)
			return err
		}
	}
	as, err := cl.Why(c.Context, sel.Set, idx)
	if err != nil {
		return err
	}
	if asJSON(c) {
		views := make([]whyView, 0, len(as))
		for _, a := range as {
			views = append(views, viewWhy(a))
		}
		return writeJSON(c.App.Writer, struct {
			Tasks []whyView `json:"tasks"`
		}{views})
	}
	if len(as) == 1 {
		return printWhy(c, as[0])
	}
	t := newTable(c, "task", "state", "class", "why", "position", "jobs ahead", "tasks ahead", "starts in", "finishes in")
	for _, a := range as {
		if err := t.Append(fmt.Sprintf("%d/%d", a.Task.Set, a.Task.Index), string(a.State), dash(a.Class), whyText(a),
			count(a.Position, a.PositionExact), count(a.JobsAhead, a.AheadExact), count(a.TasksAhead, a.AheadExact),
			boundEta(a.StartInSeconds, a.StartLowerBound), finishEta(a)); err != nil {
			return err
		}
	}
	return t.Render()
}

// printWhy explains one task in a few lines.
func printWhy(c *cli.Context, a sched.WhyAnswer) error {
	w := c.App.Writer
	ref := fmt.Sprintf("%d/%d", a.Task.Set, a.Task.Index)
	switch a.Reason {
	case sched.WhyNotWaiting:
		if a.Detail != "" { // the server ended it itself, and says why
			_, err := fmt.Fprintf(w, "task %s is %s: %s\n", ref, a.State, a.Detail)
			return err
		}
		_, err := fmt.Fprintf(w, "task %s is %s: it needs no run\n", ref, a.State)
		return err
	case sched.WhyRunning:
		fmt.Fprintf(w, "task %s (%s) is running\n", ref, a.State)
		if a.FinishInSeconds >= 0 || a.PastEstimate {
			fmt.Fprintf(w, "  finishes in: %s\n  assuming:    %s\n", finishEta(a), a.Assumptions)
		}
		return nil
	}
	fmt.Fprintf(w, "task %s (%s) waits\n", ref, a.State)
	reason := whyText(a)
	switch {
	case a.MaxRunning > 0 && a.Reason == sched.WhyCapped && a.Running < a.MaxRunning:
		reason += fmt.Sprintf(" (the set runs %d of at most %d copies; its tasks before this one, and its suspended copies, take the rest)", a.Running, a.MaxRunning)
	case a.MaxRunning > 0:
		reason += fmt.Sprintf(" (the set runs %d of at most %d copies)", a.Running, a.MaxRunning)
	}
	fmt.Fprintf(w, "  why:         %s\n", reason)
	if a.Class == "" {
		// In neither queue (held, or waiting for another set): no place
		// in line and no estimate until that ends.
		_, err := fmt.Fprintf(w, "  starts in:   %s\n", boundEta(a.StartInSeconds, a.StartLowerBound))
		return err
	}
	fmt.Fprintf(w, "  class:       %s\n", a.Class)
	fmt.Fprintf(w, "  in line:     position %s in set %d's %s queue; %s ahead, %s ahead in all\n",
		count(a.Position, a.PositionExact), a.Task.Set, a.Class, countWord(a.JobsAhead, a.AheadExact, "job"), countWord(a.TasksAhead, a.AheadExact, "task"))
	fmt.Fprintf(w, "  slots:       %d of %d free\n", a.FreeSlots, a.Slots)
	fmt.Fprintf(w, "  starts in:   %s\n  finishes in: %s\n", boundEta(a.StartInSeconds, a.StartLowerBound), finishEta(a))
	_, err := fmt.Fprintf(w, "  assuming:    %s\n", a.Assumptions)
	return err
}

// count shows n, as "≥ n" when it is a lower bound (the scheduler cut the
// count short).
func count(n int, exact bool) string {
	if exact {
		return strconv.Itoa(n)
	}
	return "≥ " + strconv.Itoa(n)
}

// countWord is count with its noun ("≥ 256 tasks", "1 job").
func countWord(n int, exact bool, word string) string {
	if exact {
		return plural(int64(n), word)
	}
	return "≥ " + plural(int64(n), word)
}

// eta formats an estimate in seconds ("unknown" when there is none).
func eta(s float64) string {
	switch {
	case s < 0 || math.IsNaN(s) || math.IsInf(s, 0):
		return "unknown"
	case s == 0:
		return "now"
	}
	return "~" + secs(s)
}

// boundEta is eta, or "not before ~X" when the scheduler says the value
// is a lower bound.
func boundEta(s float64, lower bool) string {
	if e := eta(s); lower && e != "unknown" {
		if s == 0 {
			return "not before now"
		}
		return "not before " + e
	}
	return eta(s)
}

// finishEta is a task's finish estimate: a bound, an estimate, or unknown
// because it ran past its own estimate.
func finishEta(a sched.WhyAnswer) string {
	if a.PastEstimate {
		return "unknown: it has run past its estimate"
	}
	return boundEta(a.FinishInSeconds, a.FinishLowerBound)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// whyView is why's --json output for one task.
type whyView struct {
	Set             int64  `json:"set"`
	Index           int32  `json:"index"`
	State           string `json:"state"`
	Class           string `json:"class"`
	Reason          string `json:"reason"`
	ReasonText      string `json:"reason_text"`
	Position        int    `json:"position"`
	JobsAhead       int    `json:"jobs_ahead"`
	TasksAhead      int    `json:"tasks_ahead"`
	Exact           bool   `json:"exact"`
	PositionExact   bool   `json:"position_exact"`
	TasksAheadExact bool   `json:"tasks_ahead_exact"`
	// StartIsLowerBound and FinishIsLowerBound: the seconds are "not
	// before" bounds, not estimates.
	StartIsLowerBound  bool `json:"start_is_lower_bound"`
	FinishIsLowerBound bool `json:"finish_is_lower_bound"`
	// PastEstimate: a running task ran past its estimate (finish unknown).
	PastEstimate    bool    `json:"past_estimate"`
	FreeSlots       int     `json:"free_slots"`
	Slots           int     `json:"slots"`
	MaxRunning      int     `json:"max_running"`
	Running         int     `json:"running"`
	StartInSeconds  float64 `json:"start_in_seconds"`
	FinishInSeconds float64 `json:"finish_in_seconds"`
	Assumptions     string  `json:"assumptions"`
}

func viewWhy(a sched.WhyAnswer) whyView {
	return whyView{Set: int64(a.Task.Set), Index: a.Task.Index, State: string(a.State), Class: a.Class, Reason: string(a.Reason),
		ReasonText: whyText(a), Position: a.Position, JobsAhead: a.JobsAhead, TasksAhead: a.TasksAhead, Exact: a.Exact,
		FreeSlots: a.FreeSlots, Slots: a.Slots, MaxRunning: a.MaxRunning, Running: a.Running,
		StartInSeconds: a.StartInSeconds, FinishInSeconds: a.FinishInSeconds, Assumptions: a.Assumptions,
		PositionExact: a.PositionExact, TasksAheadExact: a.AheadExact, StartIsLowerBound: a.StartLowerBound,
		FinishIsLowerBound: a.FinishLowerBound, PastEstimate: a.PastEstimate}
}

// whyColumn asks why each waiting task of tasks waits, for status's WHY
// column: the reason, keyed by index. A server that cannot answer leaves
// the column empty, with a warning.
func whyColumn(c *cli.Context, cl *client.Client, set sched.SetID, tasks []sched.Task) map[int32]string {
	var idx []int32
	for _, t := range tasks {
		if t.State == sched.TaskDisclosed || t.State == sched.TaskRequested {
			idx = append(idx, t.Index)
		}
	}
	out := map[int32]string{}
	if len(idx) == 0 {
		return out
	}
	as, err := cl.Why(c.Context, set, idx)
	if err != nil {
		fmt.Fprintf(c.App.ErrWriter, "batchctl: warning: the server did not say why tasks wait: %s\n", errorText(err))
		return out
	}
	for _, a := range as {
		out[a.Task.Index] = a.Reason.Short()
	}
	return out
}

// whyText is an answer's reason for people: its Detail where it has one.
func whyText(a sched.WhyAnswer) string {
	if a.Detail != "" {
		return a.Detail
	}
	return a.Reason.Text()
}
