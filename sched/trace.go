package sched

// A Trace is a recorded workload: what a server's store kept (the store
// exports it, so that the simulator never reads a database), or a workload
// a benchmark drove a live server with. Replay runs it under any
// scheduler configuration in virtual time: the same arrivals, requests,
// cancels and estimates, and each copy's run time from what was observed.
type Trace struct {
	// Start is the time the trace's clock counts from (Unix seconds);
	// every time below is absolute on the same clock.
	Start float64
	// Config is the scheduler configuration the server ran with when the
	// trace was recorded (zero: unknown).
	Config Config
	// ConfigText describes the recorded configuration for people.
	ConfigText string
	Workers    []TraceWorker
	Sets       []TraceSet
	// CopyDuration, when not nil, gives the run time of copy k (0 = the
	// first) of a task, instead of the recorded copies (a benchmark that
	// knows its tasks' draws).
	CopyDuration func(set SetID, index int32, k int) float64
	// Latency is the median, over the recorded winning copies, of the
	// time from the scheduler's start decision to its learning of the end
	// minus the copy's run time (the assignment's and the report's trips,
	// the fork): what a live copy holds its slot beyond its run. Replay
	// adds it only when asked (ReplayOptions.Latency).
	Latency float64
	// ProgressEvery, when positive, makes every running copy report its
	// exact fraction done every ProgressEvery seconds of its run (tasks
	// that report progress); 0: no reports.
	ProgressEvery float64
}

// TraceWorker is a worker of the trace, up from Up (Unix seconds; 0: from
// the start) to Down (0: to the end).
type TraceWorker struct {
	ID         WorkerID
	Slots      int32
	CanSuspend bool
	MemoryMB   int64
	GPUs       int32
	// BoundUser is the one owner whose tasks it runs ("": anyone's).
	BoundUser string
	Up, Down  float64
}

// TraceSet is one task set.
type TraceSet struct {
	ID         SetID
	Owner      string
	MaxRunning int32
	Tasks      []TraceTask
}

// TraceTask is one task: when it was disclosed, requested and canceled
// (Unix seconds; 0 = never), what the scheduler was told about it, and the
// run times of its recorded copies in the order they started: a positive
// value is a copy that ran to its end (the winner, or a loser whose result
// came in first), a negative −x a copy killed after x seconds (a lost race,
// a cancel: it would have run at least x), NaN a copy lost with its worker.
type TraceTask struct {
	Index           int32
	EstimateSeconds float64
	NoSpeculation   bool
	DeadlineSeconds float64
	Cpus            int32
	MemoryMB        int64
	GPUs            int32
	DisclosedAt     float64
	RequestedAt     float64
	// HeardAt, when after RequestedAt, is when the live scheduler heard of
	// the request: a request is stamped when its write began, and heard
	// once the write (and the others it was committed with) committed
	// (0: at RequestedAt). ReplayOptions.RequestHeard replays it then.
	HeardAt    float64
	CanceledAt float64
	// ExecutedAt is when the recorded winning copy ended (0: never); the
	// replay does not use it (Recorded does).
	ExecutedAt float64
	Copies     []float64
}

// Tasks counts the trace's tasks.
func (tr *Trace) Tasks() int {
	n := 0
	for i := range tr.Sets {
		n += len(tr.Sets[i].Tasks)
	}
	return n
}
