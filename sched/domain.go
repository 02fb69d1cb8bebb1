package sched

import "time"

// This file holds the domain records that store, server and client pass
// between them. Protobuf messages are converted to and from these at the
// server's and client's edges.

// SetID identifies a task set.
type SetID int64

// CopyID identifies one run of a task on one slot.
type CopyID int64

// WorkerID identifies a registered worker.
type WorkerID string

// TaskRef names one task: its set and its index in the set.
type TaskRef struct {
	Set   SetID
	Index int32
}

// SlotRef names one slot of one worker.
type SlotRef struct {
	Worker WorkerID
	Slot   int32
}

// TaskState is where a task stands in its life (DESIGN.md, Petrou Fig. 3).
type TaskState string

const (
	// TaskDisclosed: the user may need the result. Set by Disclose; left by
	// Request (to TaskRequested, or TaskFinished when already executed), by
	// the winning copy's finish (to TaskExecuted) and by Cancel.
	TaskDisclosed TaskState = "disclosed"
	// TaskExecuted: ran while disclosed; output kept but not readable. Set
	// by a winning copy of a disclosed task; left by Request (to
	// TaskFinished, visible response time 0), by Cancel (output dropped)
	// and, when the run failed or timed out, by a retry (Retry, or the
	// set's retry policy in the finish's own transaction: its next attempt,
	// TaskDisclosed).
	TaskExecuted TaskState = "executed"
	// TaskRequested: the user needs the result now. Set by Request (and by a
	// retry of a task that had been requested); left by the winning copy's
	// finish (to TaskFinished, billed) and by Cancel (to TaskCanceled,
	// billed for what it used).
	TaskRequested TaskState = "requested"
	// TaskFinished: requested and run; output readable, each attempt billed
	// exactly once. Ends the attempt: no scheduler event leaves it, but a
	// retry of a failed or timed-out run (Retry, or the set's retry policy
	// in the finish's own transaction) starts the next attempt, as
	// TaskRequested.
	TaskFinished TaskState = "finished"
	// TaskCanceled: canceled before or after its request. Ends the attempt:
	// no scheduler event leaves it, but Retry starts the next attempt in
	// the class the task had (TaskRequested when it had been requested,
	// else TaskDisclosed).
	TaskCanceled TaskState = "canceled"
)

// Valid reports whether s is one of the task states.
func (s TaskState) Valid() bool {
	switch s {
	case TaskDisclosed, TaskExecuted, TaskRequested, TaskFinished, TaskCanceled:
		return true
	}
	return false
}

// Final reports whether s ends the task's current attempt: no scheduler
// event moves a task out of it, and only a retry (which starts a new
// attempt) does.
func (s TaskState) Final() bool { return s == TaskFinished || s == TaskCanceled }

// CopyState is where one copy stands.
type CopyState string

const (
	// CopyRunning: started by a Start decision (or re-attached); left by its
	// finish (won or killed), a Kill decision, a Suspend decision, or loss of
	// its worker.
	CopyRunning CopyState = "running"
	// CopySuspended: stopped with SIGSTOP by a Suspend decision; left by a
	// Resume decision, a Kill decision or loss of its worker.
	CopySuspended CopyState = "suspended"
	// CopyWon: finished first (or late, from CopyLost); its result is the
	// result of the attempt it ran for. Final: a retry starts a new
	// attempt and leaves the old attempt's copies as they are.
	CopyWon CopyState = "won"
	// CopyKilled: stopped on the scheduler's order, or ended after its task
	// no longer wanted its result. Final.
	CopyKilled CopyState = "killed"
	// CopyLost: its worker went away (its lease lapsed, it registered
	// without the copy, or stopped reporting it), or killed it on its own;
	// never billed. Left only by a late result: a copy lost before its
	// worker reported its end, which it ran to while its task still wants
	// a result, wins (CopyWon), and the task's re-runs are killed.
	CopyLost CopyState = "lost"
)

// Live reports whether the copy still holds (or may resume on) a slot.
func (s CopyState) Live() bool { return s == CopyRunning || s == CopySuspended }

// TaskSpec is one command to run once.
type TaskSpec struct {
	Argv            []string
	Env             map[string]string
	Dir             string
	EstimateSeconds float64 // 0 = unknown
	NoSpeculation   bool
	TimeoutSeconds  float64 // 0 = none
	DeadlineSeconds float64 // 0 = none (exact job)
	// Cpus is how many slots of one worker a copy takes (0 or 1: one);
	// MemoryMB the memory, MiB, it needs on its worker (0: none asked).
	Cpus     int32 `json:",omitempty"`
	MemoryMB int64 `json:",omitempty"`
	// GPUs is how many GPUs of one worker a copy takes (0: none).
	GPUs int32 `json:",omitempty"`
	// Keep lists glob patterns of files the task leaves in its scratch
	// directory that are kept with its result (CheckKeepPattern).
	Keep []string `json:",omitempty"`
}

// TaskCounts counts the tasks of a set in each state.
type TaskCounts struct {
	Disclosed, Executed, Requested, Finished, Canceled int64
	Running                                            int64 // tasks with a live copy
	Held                                               int64 // tasks that need a run and are held
	Total                                              int64
}

// TaskSet is an ordered list of tasks owned by one user.
type TaskSet struct {
	ID                         SetID
	Name                       string
	Owner                      string
	CreatedAt                  time.Time
	Counts                     TaskCounts
	BilledSlotSeconds          float64
	MeanVisibleResponseSeconds float64
	// MaxRunning caps the set's running copies, speculative ones
	// included; 0 = no cap.
	MaxRunning int32
	// Retry is the set's retry policy (zero: no automatic retries).
	Retry RetryPolicy
	// Route is where the set's copies may run (zero: anywhere; route.go).
	Route Route
	// Stop is the set's stop rule (zero: none); Stopped says which task
	// fired it (nil until one did).
	Stop    StopRule
	Stopped *StopFired
	// TimeoutSeconds, when positive, replaces the tasks' own timeouts for
	// copies started from now on (set by an update of the set).
	TimeoutSeconds float64
	// State is where the set stands as a whole (setstate.go); Failed
	// counts its requested tasks that failed.
	State  SetState
	Failed int64
	// Waiting: the set waits for After to end (depend.go). After is read
	// where a set is shown in detail or listed.
	Waiting bool
	After   []Dependency
	// CanceledReason says why the server canceled the set ("": it did
	// not; a user's cancel leaves it empty).
	CanceledReason string
	// Labels are the set's labels, by key (read where sets are listed).
	Labels []Label
}

// Task is one task of a set.
type Task struct {
	Set                    SetID
	Index                  int32
	Spec                   TaskSpec
	State                  TaskState
	DisclosedAt            time.Time
	RequestedAt            time.Time // zero until requested
	ExecutedAt             time.Time // zero until a copy won
	FinishedAt             time.Time
	CanceledAt             time.Time
	VisibleResponseSeconds float64
	ServiceSeconds         float64
	ExitCode               int32
	TimedOut               bool
	Progress               float64 // -1 when none reported
	// Held: the task is held (it starts no copy until released).
	Held bool
	// Attempt numbers the task's runs in place: 1 until it is first
	// retried. The fields above describe the current attempt.
	Attempt int32
	// FailReason says why the server ended the task itself, such as
	// losing it too often to pilot ends ("" when it did not).
	FailReason string
	// Copies are the task's copies, of every attempt (Copy.Attempt says
	// which), by id.
	Copies []Copy
	// Attempts are the earlier attempts, oldest first (read only where a
	// task is shown in detail).
	Attempts []Attempt
}

// Attempt is how an earlier attempt of a task ended.
type Attempt struct {
	Attempt int32
	// State is how it ended: TaskExecuted, TaskFinished, TaskCanceled, or
	// AttemptLost (its copy was lost and the policy retries on lost).
	State                                           TaskState
	RequestedAt, ExecutedAt, FinishedAt, CanceledAt time.Time
	ExitCode                                        int32
	TimedOut                                        bool
	ServiceSeconds                                  float64
	WinCopy                                         CopyID
	RetriedAt                                       time.Time
	// RetriedBy is RetriedByUser or RetriedByPolicy.
	RetriedBy string
	// HasOutput: its output was kept (GetOutput with its number reads it).
	HasOutput bool
}

// AttemptLost is the state of an earlier attempt whose copy was lost with
// its worker, retried because the set's policy retries on lost.
const AttemptLost TaskState = "lost"

// Who retried an attempt.
const (
	RetriedByUser   = "user"
	RetriedByPolicy = "policy"
)

// Copy is one run of a task on one slot.
type Copy struct {
	ID          CopyID
	Task        TaskRef
	Slot        SlotRef
	Speculative bool
	State       CopyState
	StartedAt   time.Time
	EndedAt     time.Time
	Progress    float64 // -1 when none reported
	CPUSeconds  float64
	RunSeconds  float64
	// Attempt is the attempt of its task the copy ran for.
	Attempt int32
	// ExitCode, Signal (0: none) and TimedOut are how it ended, as its
	// worker reported (zero while live, or when it never reported).
	ExitCode int32
	Signal   int32
	TimedOut bool
}

// Worker is a registered worker and its slots.
type Worker struct {
	ID         WorkerID
	Name       string
	Hostname   string
	Slots      int32
	BusySlots  int32
	CanSuspend bool
	MemoryMB   int64 // memory offered to tasks, MiB (0: none)
	GPUs       int32 // GPUs offered to tasks (0: none)
	// Isolation is how the worker keeps a task from the worker, the
	// server and other users' tasks (one of Isolations).
	Isolation string
	// BoundUser is the one user whose tasks the worker runs ("": anyone's).
	BoundUser string
	// Limits says what the worker enforces per copy, for people.
	Limits        string
	State         string // "up", "lease-lapsed", "gone"
	LastHeartbeat time.Time
	RegisteredAt  time.Time
	// EndsAt is when the worker stops taking copies (zero: never);
	// HandBack says it is a pilot that hands its copies back; LeftAt is
	// when it left (state "gone"; zero while known).
	EndsAt, LeftAt time.Time
	HandBack       bool
	// Route is the worker's pool and partition (route.go).
	Route Route
}

// Output is what a finished task printed and how it ended.
type Output struct {
	Stdout, Stderr                   []byte
	StdoutSize, StderrSize           int64
	StdoutTruncated, StderrTruncated bool
	ExitCode                         int32
	TimedOut                         bool
	CPUSeconds, SlotSeconds          float64
	Copy                             CopyID
	Worker                           WorkerID
	State                            TaskState
	// Attempt is the attempt the output belongs to.
	Attempt int32
	// Files are the files the attempt left that match its keep patterns,
	// in path order, kept or not (KeptFile.NotKept says why).
	Files []KeptFile
}

// BillLine is one entry of the append-only ledger.
type BillLine struct {
	ID    int64
	Owner string
	Task  TaskRef
	// Attempt is the attempt of the task the line bills (one charge per
	// requested attempt).
	Attempt     int32
	SetName     string
	Copy        CopyID
	SlotSeconds float64
	CPUSeconds  float64
	BilledAt    time.Time
	Reason      string // "finished", "executed-then-requested", "canceled-after-request", "correction"

	// Kind is "charge" (the one line of a requested task) or "correction"
	// (a later line amending Corrects; the ledger is never edited).
	Kind string
	// PriceSlotSecond and PriceCPUSecond are the prices the line was
	// written with; Amount = SlotSeconds·PriceSlotSecond +
	// CPUSeconds·PriceCPUSecond (a correction's amount may be negative).
	PriceSlotSecond, PriceCPUSecond, Amount float64
	// Corrects is the id of the line a correction amends (0 for charges).
	Corrects int64
	// Note says why a correction was written.
	Note string
	// ReportedSlotSeconds and ReportedCPUSeconds are what the worker
	// reported; Clamped says SlotSeconds was cut to the run time the
	// server observed (see README, Billing).
	ReportedSlotSeconds, ReportedCPUSeconds float64
	Clamped                                 bool
}

// Bill line kinds.
const (
	BillKindCharge     = "charge"
	BillKindCorrection = "correction"
	BillCorrection     = "correction" // the reason of a correction line
)

// Bill reasons.
const (
	BillFinished             = "finished"
	BillExecutedThenRequest  = "executed-then-requested"
	BillCanceledAfterRequest = "canceled-after-request"
)

// FreePart names one of the four parts of free work (DESIGN.md, Metrics):
// slot-seconds that ran and nobody pays for. The same identifiers name the
// parts in the store, the API, /metrics, batchctl and the page.
type FreePart string

// The four parts of free work.
const (
	// FreeExecutedUnrequested: a winning copy of a task that was disclosed
	// and never requested (or canceled after it executed).
	FreeExecutedUnrequested FreePart = "executed_unrequested"
	// FreeSpeculativeLost: a copy that lost to another copy of its task (a
	// speculative race, or a copy the scheduler replaced or preempted by
	// killing it).
	FreeSpeculativeLost FreePart = "speculative_lost"
	// FreeCanceled: a copy stopped because its task was canceled (except
	// the one a canceled requested task is billed for).
	FreeCanceled FreePart = "canceled"
	// FreeLostWithWorker: a copy lost with its worker (lease lapsed, worker
	// gone or restarted without it, or killed by the worker on its own).
	FreeLostWithWorker FreePart = "lost_with_worker"
)

// FreeParts lists the parts of free work in the order they are shown.
var FreeParts = []FreePart{FreeExecutedUnrequested, FreeSpeculativeLost, FreeCanceled, FreeLostWithWorker}

// Label returns the part's name in DESIGN.md's words, for people.
func (p FreePart) Label() string {
	switch p {
	case FreeExecutedUnrequested:
		return "executed but never requested"
	case FreeSpeculativeLost:
		return "losing speculative copies"
	case FreeCanceled:
		return "canceled"
	case FreeLostWithWorker:
		return "lost with a worker"
	}
	return string(p)
}

// FreeWork is free work in slot-seconds, split into its four parts.
type FreeWork struct {
	ExecutedUnrequestedSlotSeconds float64
	SpeculativeLostSlotSeconds     float64
	CanceledSlotSeconds            float64
	LostWithWorkerSlotSeconds      float64
}

// Part returns the slot-seconds of part p.
func (f FreeWork) Part(p FreePart) float64 {
	if v := f.field(p); v != nil {
		return *v
	}
	return 0
}

// Add adds v slot-seconds to part p (an unknown part adds nothing).
func (f *FreeWork) Add(p FreePart, v float64) {
	if x := f.field(p); x != nil {
		*x += v
	}
}

// Total returns the four parts' sum.
func (f FreeWork) Total() float64 {
	return f.ExecutedUnrequestedSlotSeconds + f.SpeculativeLostSlotSeconds + f.CanceledSlotSeconds + f.LostWithWorkerSlotSeconds
}

func (f *FreeWork) field(p FreePart) *float64 {
	switch p {
	case FreeExecutedUnrequested:
		return &f.ExecutedUnrequestedSlotSeconds
	case FreeSpeculativeLost:
		return &f.SpeculativeLostSlotSeconds
	case FreeCanceled:
		return &f.CanceledSlotSeconds
	case FreeLostWithWorker:
		return &f.LostWithWorkerSlotSeconds
	}
	return nil
}

// BillTotals sums a bill and sets it beside the work nobody pays for.
type BillTotals struct {
	Lines             int64
	BilledSlotSeconds float64
	BilledCPUSeconds  float64
	// FreeSlotSeconds is Free.Total().
	FreeSlotSeconds          float64
	Free                     FreeWork
	RequestedWorkSlotSeconds float64
	ScaledBilledResources    float64
	// Amount is the sum of the lines' amounts.
	Amount float64
}

// ArrayValueEnv is the variable that carries a task array's value to each
// of its tasks (the task's index in its set is BATCH_TASK_INDEX, as for
// every task).
const ArrayValueEnv = "BATCH_ARRAY_VALUE"
