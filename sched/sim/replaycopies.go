package sim

import "batchd/sched"

// CopyTrace is one replayed copy as it ended, for comparing a replay with
// its live run copy by copy (ReplayOptions.OnCopy). Times are on the
// trace's clock.
type CopyTrace struct {
	Set  sched.SetID
	Task int32
	K    int     // its number among its task's copies, in start order
	Lat  float64 // the latency it was given (replaylatency.go)
	// Start is its start decision; End its end, or the decision that
	// killed it.
	Start, End float64
	Won        bool
	Killed     bool
	// SchedLag is the scheduler's latency estimate (Scheduler.Lag) once
	// it heard of this end.
	SchedLag float64
}

// copyEnded tells ReplayOptions.OnCopy of c's end now: a kill, or a run to
// its end that won or not.
func (r *replay) copyEnded(c *rpCopy, won, killed bool) {
	if r.o.OnCopy == nil {
		return
	}
	r.o.OnCopy(CopyTrace{Set: r.tr.Sets[c.set].ID, Task: int32(c.task), K: c.k, Lat: c.lat, Start: c.began, End: r.now, Won: won, Killed: killed, SchedLag: r.s.Lag()})
}
