package sched

// This file is the scheduler's contract with its two drivers, the server's
// dispatch loop and the simulator: events in, decisions out. The scheduler
// reads no clock, no database and no network; the time of every event and
// decision is handed in, and randomness comes from Config.Seed only.
//
// The driver:
//
//	s, err := sched.New(cfg)
//	s.Apply(ev)            // for each event, in the order they happened
//	ds := s.Decide(now)    // whenever something changed: kills, suspends,
//	                       // resumes and starts to carry out, already
//	                       // applied to the scheduler's own state
//
// A Start decision has already taken its slot and got its CopyID when
// Decide returns it; the driver persists it and tells the worker. A Kill or
// Suspend decision has already freed its slot. A copy's end comes back as
// EventCopyFinished or EventCopyLost.

// Time is seconds on the driver's clock: Unix seconds in the server,
// virtual seconds in the simulator.
type Time = float64

// EventKind says what happened.
type EventKind int

const (
	// EventWorkerUp: a worker with Slots slots joined (or rejoined). Fields:
	// Worker, Slots, CanSuspend, MemoryMB, BoundUser, EndsAt.
	EventWorkerUp EventKind = iota + 1
	// EventWorkerDown: a worker left or its lease lapsed; its live copies
	// are lost and their tasks queue again. Fields: Worker.
	EventWorkerDown
	// EventDisclosed: tasks were added to a set (a new set when Set is not
	// yet known). Fields: Set, Owner, Tasks, MaxRunning (a positive value
	// sets the set's cap; 0 leaves it as it was). A TaskInfo with a State other
	// than "" or TaskDisclosed restores a task from the store after a restart.
	EventDisclosed
	// EventRequested: tasks were requested; executed ones finish at once.
	// Fields: Set, Indexes (nil = every unrequested task of the set).
	EventRequested
	// EventCanceled: tasks were canceled; their live copies get Kill
	// decisions. Fields: Set, Indexes (nil = every unrequested task).
	EventCanceled
	// EventCopyAttached: a copy that is running on a worker is known again
	// (after a server restart, or a worker re-attaching). Fields: Copy,
	// Task, Slot, Speculative, StartedAt, Suspended.
	EventCopyAttached
	// EventCopyProgress: a running copy reported a fraction done in [0,1].
	// Fields: Copy, Progress.
	EventCopyProgress
	// EventCopyFinished: a copy ran to its end (any exit status). The first
	// finish of a live task wins; the task's other copies get Kill decisions.
	// Fields: Copy, and Duration when the driver knows how long the copy
	// ran (suspension excluded): the run time the worker reported and the
	// store kept, which is what β and t_new learn from. Without it (0) the
	// scheduler uses the time from its start decision to the event, which
	// on a live server includes the fork and the report's trip.
	EventCopyFinished
	// EventCopyLost: a copy died without a result (not by the scheduler's
	// order); the task queues again. Fields: Copy.
	EventCopyLost
	// EventDurationObserved: a winning copy of a task of Set (owned by
	// Owner) ran Duration seconds, suspension excluded (with Censored: a
	// losing copy was killed after Duration seconds). It restores the
	// history behind β and t_new after a restart: replay the store's
	// winning copies oldest first, after EventDisclosed and before
	// EventCopyAttached. Live drivers never send it (EventCopyFinished
	// records the same). The set need not be known. Fields: Set, Owner,
	// Duration.
	EventDurationObserved
	// EventRetried: tasks that needed no more runs (executed, finished or
	// canceled) run again in place as a new attempt. Fields: Set, Tasks
	// (Index, and State: TaskRequested or TaskDisclosed, the class the
	// task goes back to; RequestedAt for a requested one, 0 = Time).
	EventRetried
	// EventLateResult: a copy the scheduler no longer holds (lost with its
	// worker's lease) delivered a result after all, and the driver made it
	// its task's: the task is executed (or finished, when requested) and
	// its live copies, the re-runs, get Kill decisions. A task already
	// done or canceled is left as it is. Fields: Task.
	EventLateResult
	// EventStopped: the set's stop rule fired on the result of Task: every
	// task of Set that still needs a run (disclosed or requested) is
	// canceled and its live copies get Kill decisions ("stopped");
	// executed and finished tasks stay as they are. Fields: Set, Task.
	// See stop.go.
	EventStopped
	// EventHeld: tasks of Set are held: they leave both classes' queues
	// and start no copy, speculative ones included, until released. Their
	// running copies go on, or, with Suspend, are suspended (Suspend
	// decisions, "held") on workers that can suspend. Fields: Set,
	// Indexes (nil = every task that needs a run; tasks the scheduler does
	// not hold, which ended, are skipped), Suspend. See hold.go.
	EventHeld
	// EventReleased: held tasks of Set go back to their class; their
	// suspended copies resume as any suspended copy does. Fields: Set,
	// Indexes (nil = every held task).
	EventReleased
	// EventWaitEnded: the dependencies of a set disclosed with After
	// ended as it asked (Resolve): its tasks join their queues, in the
	// state requests and cancels left them. A set not waiting is left as
	// it is. Fields: Set.
	EventWaitEnded
	// EventWorkerStopping: a worker stops taking copies from Time on (a
	// pilot that began handing its copies back): it gets no new copy,
	// its running ones go on until they end or are lost. A later
	// EventWorkerUp sets its end again. Fields: Worker. See workerend.go.
	EventWorkerStopping
)

// TaskInfo is what the scheduler knows of one task.
type TaskInfo struct {
	Index           int32
	EstimateSeconds float64 // 0 = unknown
	NoSpeculation   bool
	DeadlineSeconds float64 // 0 = exact job
	// Cpus is how many slots of one worker a copy takes (0 or 1: one);
	// MemoryMB the memory, in MiB, a copy needs free on its worker (0:
	// none asked). See resource.go.
	Cpus     int32
	MemoryMB int64
	// GPUs is how many GPUs of one worker a copy takes (0: none; at most
	// MaxGPUs), counted like slots against the worker's GPUs. See gpu.go.
	GPUs int32
	// State and RequestedAt restore a task after a restart; "" means
	// TaskDisclosed.
	State       TaskState
	RequestedAt Time
	// Held restores a held task after a restart (EventHeld).
	Held bool
}

// Event is one thing that happened, at Time.
type Event struct {
	Kind EventKind
	Time Time

	Worker     WorkerID
	Slots      int32
	CanSuspend bool
	// BoundUser is the one user whose tasks a worker runs (EventWorkerUp;
	// "": anyone's). See isolation.go.
	BoundUser string
	// MemoryMB is the memory a worker advertises (EventWorkerUp), MiB;
	// 0: none, so that tasks asking for memory never run there.
	MemoryMB int64
	// GPUs is how many GPUs a worker offers (EventWorkerUp; 0: none, so
	// that tasks asking for GPUs never run there).
	GPUs int32
	// EndsAt is when a worker stops taking copies (EventWorkerUp; 0:
	// never): a pilot's allocation end less its margin. See workerend.go.
	EndsAt Time
	// Route is a worker's pool and partition (EventWorkerUp), or a set's
	// route (EventDisclosed and EventRetried that make the set; ignored
	// for a set held already). See route.go.
	Route Route

	Set     SetID
	Owner   string
	Tasks   []TaskInfo
	Indexes []int32

	Copy        CopyID
	Task        TaskRef
	Slot        SlotRef
	Speculative bool
	StartedAt   Time
	Suspended   bool
	Progress    float64

	// MaxRunning caps the running copies of Set, speculative copies
	// included (EventDisclosed; 0 = leave the cap as it is; NoMaxRunning,
	// in an event without tasks, removes the cap).
	MaxRunning int32
	// After, on the EventDisclosed of a new set, is what it waits for
	// (depend.go): its tasks are in neither class until EventWaitEnded, or
	// until cancels end every task. Later tasks of a waiting set wait with
	// it (After is then ignored).
	After []Dependency

	Duration float64 // EventDurationObserved, EventCopyFinished
	// Censored marks an EventDurationObserved of a copy that lost a race:
	// killed after running Duration, so its duration is at least that. It
	// feeds β only (the censored Hill estimator), not t_new. Replay such
	// observations in the order the copies ended, after the winner's.
	Censored bool

	// Suspend asks EventHeld to suspend the held tasks' running copies.
	Suspend bool
}

// DecisionKind says what the driver must do.
type DecisionKind int

const (
	// DecisionStart: run a new copy of Task on Slot with id Copy.
	DecisionStart DecisionKind = iota + 1
	// DecisionKill: kill Copy (its slot is already free).
	DecisionKill
	// DecisionSuspend: SIGSTOP Copy (its slot is already free).
	DecisionSuspend
	// DecisionResume: SIGCONT Copy on its slot Slot.
	DecisionResume
)

// Decision is one thing the driver must do.
type Decision struct {
	Kind        DecisionKind
	Copy        CopyID
	Task        TaskRef
	Slot        SlotRef
	Speculative bool
	// Reason says why, for logs and tests: "requested", "disclosed",
	// "speculate-gs", "speculate-ras", "lost-race", "canceled", "preempted",
	// "resume"; also "speculate-late" (best-effort-late and budgeted
	// copies), "speculate-disclosed" (a copy of a disclosed straggler) and
	// "replaced" (a suspended copy killed because a new copy of its task
	// started elsewhere).
	Reason string
}

// ApplyResult tells the driver what an event did.
type ApplyResult struct {
	// Won is set for EventCopyFinished when the copy's result became the
	// task's result.
	Won bool
	// FinishedAtOnce lists tasks an EventRequested finished immediately
	// because they had executed while disclosed.
	FinishedAtOnce []TaskRef
	// Canceled counts the tasks an EventStopped canceled.
	Canceled int
	// Suspended counts the copies an EventHeld suspended.
	Suspended int
}
