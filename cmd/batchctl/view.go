package main

import (
	"time"

	"batchd/client"
	"batchd/sched"
)

// The types in this file are batchctl's --json output. Their field names are
// a stable interface for scripts: add fields, never rename or remove them.

type countsView struct {
	Disclosed int64 `json:"disclosed"`
	Executed  int64 `json:"executed"`
	Requested int64 `json:"requested"`
	Finished  int64 `json:"finished"`
	Canceled  int64 `json:"canceled"`
	Running   int64 `json:"running"`
	Total     int64 `json:"total"`
	Held      int64 `json:"held"`
}

type setView struct {
	ID                         int64      `json:"id"`
	Name                       string     `json:"name"`
	Owner                      string     `json:"owner"`
	CreatedAt                  *time.Time `json:"created_at,omitempty"`
	Counts                     countsView `json:"counts"`
	BilledSlotSeconds          float64    `json:"billed_slot_seconds"`
	MeanVisibleResponseSeconds float64    `json:"mean_visible_response_seconds"`
	// MaxRunning is the set's --max-running cap (0 = none).
	MaxRunning int32 `json:"max_running"`
	// Retries and RetryOn are the set's retry policy (0 and "": none).
	Retries int32  `json:"retries"`
	RetryOn string `json:"retry_on"`
	// Stop is the set's stop rule (nil: none); Stopped says which task
	// fired it (nil: none did).
	Stop    *stopView    `json:"stop,omitempty"`
	Stopped *stoppedView `json:"stopped,omitempty"`
	// TimeoutSeconds replaces the tasks' own timeouts (0: theirs).
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// State is where the set stands as a whole (waiting, queued, running,
	// done, failed, canceled); Failed counts its requested tasks that
	// failed.
	State  string `json:"state,omitempty"`
	Failed int64  `json:"failed"`
	// After lists what the set waits (or waited) for, as disclose --after
	// takes it (12, 12:any, 12/3).
	After []string `json:"after,omitempty"`
	// CanceledReason says why the server canceled the set.
	CanceledReason string            `json:"canceled_reason,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	// Pool and Partition route the set's copies (empty: anywhere).
	Pool      string `json:"pool,omitempty"`
	Partition string `json:"partition,omitempty"`
}

type stopView struct {
	OnSuccess bool    `json:"on_success,omitempty"`
	OnExit    []int32 `json:"on_exit,omitempty"`
	OnOutput  string  `json:"on_output,omitempty"`
	After     int32   `json:"after,omitempty"`
}

type stoppedView struct {
	Index    int32      `json:"index"`
	Attempt  int32      `json:"attempt"`
	At       *time.Time `json:"at,omitempty"`
	Why      string     `json:"why"`
	Canceled int64      `json:"canceled"`
}

type specView struct {
	Argv            []string          `json:"argv"`
	Env             map[string]string `json:"env,omitempty"`
	Dir             string            `json:"dir,omitempty"`
	EstimateSeconds float64           `json:"estimate_seconds,omitempty"`
	NoSpeculation   bool              `json:"no_speculation,omitempty"`
	TimeoutSeconds  float64           `json:"timeout_seconds,omitempty"`
	DeadlineSeconds float64           `json:"deadline_seconds,omitempty"`
	Cpus            int32             `json:"cpus,omitempty"`
	MemoryMB        int64             `json:"memory_mb,omitempty"`
	GPUs            int32             `json:"gpus,omitempty"`
	Keep            []string          `json:"keep,omitempty"`
}

type copyView struct {
	ID          int64      `json:"id"`
	Worker      string     `json:"worker"`
	Slot        int32      `json:"slot"`
	Speculative bool       `json:"speculative"`
	State       string     `json:"state"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
	Progress    float64    `json:"progress"`
	Attempt     int32      `json:"attempt"`
	ExitCode    int32      `json:"exit_code"`
	Signal      int32      `json:"signal"`
	TimedOut    bool       `json:"timed_out"`
	CPUSeconds  float64    `json:"cpu_seconds"`
	RunSeconds  float64    `json:"run_seconds"`
}

type taskView struct {
	Set                    int64      `json:"set"`
	Index                  int32      `json:"index"`
	State                  string     `json:"state"`
	Spec                   specView   `json:"spec"`
	DisclosedAt            *time.Time `json:"disclosed_at,omitempty"`
	RequestedAt            *time.Time `json:"requested_at,omitempty"`
	ExecutedAt             *time.Time `json:"executed_at,omitempty"`
	FinishedAt             *time.Time `json:"finished_at,omitempty"`
	CanceledAt             *time.Time `json:"canceled_at,omitempty"`
	VisibleResponseSeconds float64    `json:"visible_response_seconds"`
	ServiceSeconds         float64    `json:"service_seconds"`
	ExitCode               int32      `json:"exit_code"`
	TimedOut               bool       `json:"timed_out"`
	Progress               float64    `json:"progress"`
	// Attempt is the current attempt (1 until the task is retried).
	Attempt int32 `json:"attempt"`
	// Held: the task starts no copy until released.
	Held bool `json:"held,omitempty"`
	// FailReason says why the server ended the task itself (a canceled
	// task lost too often to pilot ends).
	FailReason string     `json:"fail_reason,omitempty"`
	Copies     []copyView `json:"copies"`
	// Attempts are the earlier attempts (status SET/I only).
	Attempts []attemptView `json:"attempts,omitempty"`
}

type attemptView struct {
	Attempt        int32      `json:"attempt"`
	State          string     `json:"state"`
	RequestedAt    *time.Time `json:"requested_at,omitempty"`
	ExecutedAt     *time.Time `json:"executed_at,omitempty"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
	CanceledAt     *time.Time `json:"canceled_at,omitempty"`
	ExitCode       int32      `json:"exit_code"`
	TimedOut       bool       `json:"timed_out"`
	ServiceSeconds float64    `json:"service_seconds"`
	WinCopy        int64      `json:"win_copy,omitempty"`
	RetriedAt      *time.Time `json:"retried_at,omitempty"`
	RetriedBy      string     `json:"retried_by"`
	HasOutput      bool       `json:"has_output"`
}

type outputView struct {
	Set             int64   `json:"set"`
	Index           int32   `json:"index"`
	State           string  `json:"state"`
	ExitCode        int32   `json:"exit_code"`
	TimedOut        bool    `json:"timed_out"`
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	StdoutSize      int64   `json:"stdout_size"`
	StderrSize      int64   `json:"stderr_size"`
	StdoutTruncated bool    `json:"stdout_truncated"`
	StderrTruncated bool    `json:"stderr_truncated"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	SlotSeconds     float64 `json:"slot_seconds"`
	Copy            int64   `json:"copy"`
	Worker          string  `json:"worker"`
	Attempt         int32   `json:"attempt"`
	// Files are the files the attempt left that its keep patterns
	// matched, kept or not.
	Files []keptView `json:"files,omitempty"`
}

// keptView is a kept file in --json: not_kept says why it was not kept.
type keptView struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Mode    uint32 `json:"mode"`
	NotKept string `json:"not_kept,omitempty"`
}

type billLineView struct {
	ID          int64     `json:"id"`
	Owner       string    `json:"owner"`
	Set         int64     `json:"set"`
	Index       int32     `json:"index"`
	SetName     string    `json:"set_name"`
	Copy        int64     `json:"copy"`
	SlotSeconds float64   `json:"slot_seconds"`
	CPUSeconds  float64   `json:"cpu_seconds"`
	BilledAt    time.Time `json:"billed_at"`
	Reason      string    `json:"reason"`
	Kind        string    `json:"kind"`
	PriceSlot   float64   `json:"price_slot_second"`
	PriceCPU    float64   `json:"price_cpu_second"`
	Amount      float64   `json:"amount"`
	Corrects    int64     `json:"corrects,omitempty"`
	Note        string    `json:"note,omitempty"`
	// What the worker reported, and whether slot_seconds was cut to the
	// run time the server observed.
	ReportedSlotSeconds float64 `json:"reported_slot_seconds"`
	ReportedCPUSeconds  float64 `json:"reported_cpu_seconds"`
	Clamped             bool    `json:"clamped"`
	Attempt             int32   `json:"attempt"`
}

type billGroupView struct {
	Owner       string  `json:"owner"`
	Set         int64   `json:"set,omitempty"`
	SetName     string  `json:"set_name,omitempty"`
	Lines       int64   `json:"lines"`
	SlotSeconds float64 `json:"slot_seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	Amount      float64 `json:"amount"`
}

func viewBillGroups(gs []client.BillGroup) []billGroupView {
	out := []billGroupView{}
	for _, g := range gs {
		out = append(out, billGroupView{Owner: g.Owner, Set: int64(g.Set), SetName: g.SetName, Lines: g.Lines,
			SlotSeconds: g.SlotSeconds, CPUSeconds: g.CPUSeconds, Amount: g.Amount})
	}
	return out
}

type billTotalsView struct {
	Lines                    int64    `json:"lines"`
	BilledSlotSeconds        float64  `json:"billed_slot_seconds"`
	BilledCPUSeconds         float64  `json:"billed_cpu_seconds"`
	FreeSlotSeconds          float64  `json:"free_slot_seconds"`
	Free                     freeView `json:"free"`
	RequestedWorkSlotSeconds float64  `json:"requested_work_slot_seconds"`
	ScaledBilledResources    float64  `json:"scaled_billed_resources"`
	Amount                   float64  `json:"amount"`
}

// freeView is free work in its four parts, named as in the API.
type freeView struct {
	ExecutedUnrequestedSlotSeconds float64 `json:"executed_unrequested_slot_seconds"`
	SpeculativeLostSlotSeconds     float64 `json:"speculative_lost_slot_seconds"`
	CanceledSlotSeconds            float64 `json:"canceled_slot_seconds"`
	LostWithWorkerSlotSeconds      float64 `json:"lost_with_worker_slot_seconds"`
}

func viewFree(f sched.FreeWork) freeView { return freeView(f) }

// freeRows are the table rows of free work: its four parts in DESIGN.md's
// words, then the total.
func freeRows(f sched.FreeWork, extra ...any) [][]any {
	var rows [][]any
	for _, p := range sched.FreeParts {
		rows = append(rows, append([]any{"free: " + p.Label(), secs(f.Part(p))}, extra...))
	}
	return append(rows, append([]any{"free: total", secs(f.Total())}, extra...))
}

type workerView struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	Hostname      string     `json:"hostname"`
	Slots         int32      `json:"slots"`
	BusySlots     int32      `json:"busy_slots"`
	CanSuspend    bool       `json:"can_suspend"`
	State         string     `json:"state"`
	LastHeartbeat *time.Time `json:"last_heartbeat,omitempty"`
	RegisteredAt  *time.Time `json:"registered_at,omitempty"`
	MemoryMB      int64      `json:"memory_mb"`
	GPUs          int32      `json:"gpus,omitempty"`
	Pool          string     `json:"pool,omitempty"`
	Partition     string     `json:"partition,omitempty"`
	Isolation     string     `json:"isolation"`
	BoundUser     string     `json:"bound_user,omitempty"`
	Limits        string     `json:"limits,omitempty"`
}

type clusterView struct {
	Version     string       `json:"version"`
	Policy      string       `json:"policy"`
	Speculation string       `json:"speculation"`
	Preemption  string       `json:"preemption"`
	StartedAt   *time.Time   `json:"started_at,omitempty"`
	Slots       int32        `json:"slots"`
	BusySlots   int32        `json:"busy_slots"`
	Workers     []workerView `json:"workers"`
	Queues      queuesView   `json:"queues"`
	Metrics     metricsView  `json:"metrics"`
	Pilots      []pilotView  `json:"pilots"`
	Pools       []poolView   `json:"pools"`
	FairShare   bool         `json:"fair_share"`
	Users       []shareView  `json:"users"`
	// ShareUnisolated: workers without isolation run any user's tasks.
	ShareUnisolated bool `json:"share_unisolated_workers"`
}

// shareView is one user's fair-share standing.
type shareView struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
	Held   int     `json:"held_slots"`
	Queued int     `json:"queued_requested"`
	Share  float64 `json:"share_slots"`
	Usage  float64 `json:"usage_slot_seconds"`
}

func viewShares(us []sched.UserShare) []shareView {
	out := make([]shareView, 0, len(us))
	for _, u := range us {
		out = append(out, shareView{Name: u.User, Weight: u.Weight, Held: u.Held, Queued: u.Queued, Share: u.Share, Usage: u.Usage})
	}
	return out
}

type pilotView struct {
	Pool        string     `json:"pool"`
	ID          string     `json:"id"`
	State       string     `json:"state"`
	Reason      string     `json:"reason,omitempty"`
	Node        string     `json:"node,omitempty"`
	Slots       int32      `json:"slots"`
	Worker      string     `json:"worker"`
	Partition   string     `json:"partition,omitempty"`
	Class       string     `json:"class,omitempty"`
	SubmittedAt *time.Time `json:"submitted_at,omitempty"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
}

type poolView struct {
	Name       string     `json:"name"`
	Engine     string     `json:"engine"`
	ReportedAt *time.Time `json:"reported_at,omitempty"`
	LastError  string     `json:"last_error,omitempty"`
}

type metricsView struct {
	FinishedTasks              int64    `json:"finished_tasks"`
	MeanVisibleResponseSeconds float64  `json:"mean_visible_response_seconds"`
	MeanVisibleSlowdown        float64  `json:"mean_visible_slowdown"`
	TasksPerHour               float64  `json:"tasks_per_hour"`
	Load                       float64  `json:"load"`
	BilledSlotSeconds          float64  `json:"billed_slot_seconds"`
	FreeSlotSeconds            float64  `json:"free_slot_seconds"`
	Free                       freeView `json:"free"`
	SpeculativeCopiesStarted   int64    `json:"speculative_copies_started"`
	SpeculativeCopiesWon       int64    `json:"speculative_copies_won"`
	Beta                       float64  `json:"beta"`
	BetaSamples                int64    `json:"beta_samples"`
	ScaledBilledResources      float64  `json:"scaled_billed_resources"`
}

type queuesView struct {
	Requested         int64 `json:"requested"`
	Disclosed         int64 `json:"disclosed"`
	SuspendedCopies   int64 `json:"suspended_copies"`
	RunningCopies     int64 `json:"running_copies"`
	SpeculativeCopies int64 `json:"speculative_copies"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func viewSet(s sched.TaskSet) setView {
	c := s.Counts
	return setView{
		ID:        int64(s.ID),
		Name:      s.Name,
		Owner:     s.Owner,
		CreatedAt: timePtr(s.CreatedAt),
		Counts: countsView{
			Disclosed: c.Disclosed, Executed: c.Executed, Requested: c.Requested,
			Finished: c.Finished, Canceled: c.Canceled, Running: c.Running, Total: c.Total, Held: c.Held,
		},
		BilledSlotSeconds:          s.BilledSlotSeconds,
		MeanVisibleResponseSeconds: s.MeanVisibleResponseSeconds,
		Retries:                    s.Retry.Retries,
		RetryOn:                    s.Retry.RetryOn(),
		MaxRunning:                 s.MaxRunning,
		Stop:                       viewStop(s.Stop),
		Stopped:                    viewStopped(s.Stopped),
		TimeoutSeconds:             s.TimeoutSeconds,
		State:                      string(s.State),
		Failed:                     s.Failed,
		After:                      afterStrings(s.After),
		CanceledReason:             s.CanceledReason,
		Labels:                     labelMap(s.Labels),
		Pool:                       s.Route.Pool,
		Partition:                  s.Route.Partition,
	}
}

func viewStop(r sched.StopRule) *stopView {
	if r.IsZero() {
		return nil
	}
	return &stopView{OnSuccess: r.OnSuccess, OnExit: r.OnExit, OnOutput: r.OnOutput, After: r.After}
}

func viewStopped(f *sched.StopFired) *stoppedView {
	if f == nil {
		return nil
	}
	return &stoppedView{Index: f.Task.Index, Attempt: f.Attempt, At: timePtr(f.At), Why: f.Why, Canceled: f.Canceled}
}

func viewTask(t sched.Task) taskView {
	v := taskView{
		Set:   int64(t.Set),
		Index: t.Index,
		State: string(t.State),
		Spec: specView{
			Argv: t.Spec.Argv, Env: t.Spec.Env, Dir: t.Spec.Dir,
			EstimateSeconds: t.Spec.EstimateSeconds, NoSpeculation: t.Spec.NoSpeculation,
			TimeoutSeconds: t.Spec.TimeoutSeconds, DeadlineSeconds: t.Spec.DeadlineSeconds,
			Cpus: t.Spec.Cpus, MemoryMB: t.Spec.MemoryMB, GPUs: t.Spec.GPUs, Keep: t.Spec.Keep,
		},
		DisclosedAt:            timePtr(t.DisclosedAt),
		RequestedAt:            timePtr(t.RequestedAt),
		ExecutedAt:             timePtr(t.ExecutedAt),
		FinishedAt:             timePtr(t.FinishedAt),
		CanceledAt:             timePtr(t.CanceledAt),
		VisibleResponseSeconds: t.VisibleResponseSeconds,
		ServiceSeconds:         t.ServiceSeconds,
		ExitCode:               t.ExitCode,
		TimedOut:               t.TimedOut,
		Progress:               t.Progress,
		Attempt:                t.Attempt,
		Held:                   t.Held,
		FailReason:             t.FailReason,
		Copies:                 []copyView{},
	}
	for _, c := range t.Copies {
		v.Copies = append(v.Copies, copyView{
			ID: int64(c.ID), Worker: string(c.Slot.Worker), Slot: c.Slot.Slot,
			Speculative: c.Speculative, State: string(c.State),
			StartedAt: timePtr(c.StartedAt), EndedAt: timePtr(c.EndedAt), Progress: c.Progress,
			Attempt: c.Attempt, ExitCode: c.ExitCode, Signal: c.Signal, TimedOut: c.TimedOut,
			CPUSeconds: c.CPUSeconds, RunSeconds: c.RunSeconds,
		})
	}
	for _, a := range t.Attempts {
		v.Attempts = append(v.Attempts, attemptView{Attempt: a.Attempt, State: string(a.State),
			RequestedAt: timePtr(a.RequestedAt), ExecutedAt: timePtr(a.ExecutedAt), FinishedAt: timePtr(a.FinishedAt),
			CanceledAt: timePtr(a.CanceledAt), ExitCode: a.ExitCode, TimedOut: a.TimedOut, ServiceSeconds: a.ServiceSeconds,
			WinCopy: int64(a.WinCopy), RetriedAt: timePtr(a.RetriedAt), RetriedBy: a.RetriedBy, HasOutput: a.HasOutput})
	}
	return v
}

func viewTasks(ts []sched.Task) []taskView {
	out := make([]taskView, 0, len(ts))
	for _, t := range ts {
		out = append(out, viewTask(t))
	}
	return out
}

func viewOutput(ref sched.TaskRef, o sched.Output) outputView {
	return outputView{
		Set: int64(ref.Set), Index: ref.Index, State: string(o.State),
		ExitCode: o.ExitCode, TimedOut: o.TimedOut,
		Stdout: string(o.Stdout), Stderr: string(o.Stderr),
		StdoutSize: o.StdoutSize, StderrSize: o.StderrSize,
		StdoutTruncated: o.StdoutTruncated, StderrTruncated: o.StderrTruncated,
		CPUSeconds: o.CPUSeconds, SlotSeconds: o.SlotSeconds,
		Copy: int64(o.Copy), Worker: string(o.Worker), Attempt: o.Attempt,
		Files: viewKept(o.Files),
	}
}

func viewBillLine(l sched.BillLine) billLineView {
	return billLineView{
		ID: l.ID, Owner: l.Owner, Set: int64(l.Task.Set), Index: l.Task.Index, SetName: l.SetName,
		Copy: int64(l.Copy), SlotSeconds: l.SlotSeconds, CPUSeconds: l.CPUSeconds,
		BilledAt: l.BilledAt.UTC(), Reason: l.Reason,
		Kind: l.Kind, PriceSlot: l.PriceSlotSecond, PriceCPU: l.PriceCPUSecond, Amount: l.Amount, Corrects: l.Corrects, Note: l.Note,
		ReportedSlotSeconds: l.ReportedSlotSeconds, ReportedCPUSeconds: l.ReportedCPUSeconds, Clamped: l.Clamped, Attempt: l.Attempt,
	}
}

func viewBillTotals(t sched.BillTotals) billTotalsView {
	return billTotalsView{
		Lines: t.Lines, BilledSlotSeconds: t.BilledSlotSeconds, BilledCPUSeconds: t.BilledCPUSeconds,
		FreeSlotSeconds: t.FreeSlotSeconds, Free: viewFree(t.Free),
		RequestedWorkSlotSeconds: t.RequestedWorkSlotSeconds,
		ScaledBilledResources:    t.ScaledBilledResources,
		Amount:                   t.Amount,
	}
}

func viewCluster(c client.Cluster) clusterView {
	m, q := c.Metrics, c.Queues
	v := clusterView{
		Version: c.Version, Policy: c.Policy, Speculation: c.Speculation, Preemption: c.Preemption,
		StartedAt: timePtr(c.StartedAt), Slots: c.Slots, BusySlots: c.BusySlots,
		Workers: []workerView{}, FairShare: c.FairShare, ShareUnisolated: c.ShareUnisolated, Users: viewShares(c.Users),
		Queues: queuesView{
			Requested: q.Requested, Disclosed: q.Disclosed, SuspendedCopies: q.SuspendedCopies,
			RunningCopies: q.RunningCopies, SpeculativeCopies: q.SpeculativeCopies,
		},
		Metrics: metricsView{
			FinishedTasks: m.FinishedTasks, MeanVisibleResponseSeconds: m.MeanVisibleResponseSeconds,
			MeanVisibleSlowdown: m.MeanVisibleSlowdown, TasksPerHour: m.TasksPerHour, Load: m.Load,
			BilledSlotSeconds: m.BilledSlotSeconds, FreeSlotSeconds: m.FreeSlotSeconds,
			Free:                     viewFree(m.Free),
			SpeculativeCopiesStarted: m.SpeculativeCopiesStarted, SpeculativeCopiesWon: m.SpeculativeCopiesWon,
			Beta: m.Beta, BetaSamples: m.BetaSamples, ScaledBilledResources: m.ScaledBilledResources,
		},
	}
	for _, w := range c.Workers {
		v.Workers = append(v.Workers, workerView{
			ID: string(w.ID), Name: w.Name, Hostname: w.Hostname, Slots: w.Slots, BusySlots: w.BusySlots,
			CanSuspend: w.CanSuspend, State: w.State,
			LastHeartbeat: timePtr(w.LastHeartbeat), RegisteredAt: timePtr(w.RegisteredAt), MemoryMB: w.MemoryMB, GPUs: w.GPUs, Pool: w.Route.Pool, Partition: w.Route.Partition,
			Isolation: isolationText(w.Isolation), BoundUser: w.BoundUser, Limits: w.Limits,
		})
	}
	v.Pilots, v.Pools = []pilotView{}, []poolView{}
	for _, p := range c.Pilots {
		v.Pilots = append(v.Pilots, pilotView{Pool: p.Pool, ID: p.ID, State: p.State, Reason: p.Reason, Node: p.Node,
			Slots: p.Slots, Worker: p.Worker, Partition: p.Partition, Class: p.Class,
			SubmittedAt: timePtr(p.SubmittedAt), StartedAt: timePtr(p.StartedAt)})
	}
	for _, p := range c.Pools {
		v.Pools = append(v.Pools, poolView{Name: p.Name, Engine: p.Engine, ReportedAt: timePtr(p.ReportedAt), LastError: p.LastError})
	}
	return v
}
