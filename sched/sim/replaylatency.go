package sim

// A live copy's latency (the assignment's trip, the fork, the report's
// trip) is not one figure: on a loaded machine it has a long tail, and
// the live scheduler, which learns it from the worker's run times
// (sched/lag.go), judges running copies by a high quantile of it. With
// ReplayOptions.Latencies each replayed copy draws its own latency from
// the recorded ones (with ReplayOptions.LatencyAt, the latency of its
// start's moment: on a loaded machine latencies come in bursts), and with
// ReplayOptions.ReportRunTime its end tells
// the scheduler its run time without that latency, as a worker's report
// does: the replay's scheduler then learns the latency and applies the
// same rule as the live one.

// copyLatency is the latency of copy k of task ti of set si, started now:
// its own (ReplayOptions.OwnLatency) where it has one, else
// ReplayOptions.LatencyAt's, else a draw from ReplayOptions.Latencies when
// given, else ReplayOptions.Latency.
func (r *replay) copyLatency(si, ti, k int) float64 {
	if f := r.o.OwnLatency; f != nil {
		if x, ok := f(r.tr.Sets[si].ID, int32(ti), k); ok {
			return max(0, x)
		}
	}
	if f := r.o.LatencyAt; f != nil {
		return max(0, f(r.now))
	}
	xs := r.o.Latencies
	if len(xs) == 0 {
		return r.o.Latency
	}
	g := newRNG(r.o.Seed, 13, uint64(r.tr.Sets[si].ID), uint64(ti), uint64(k))
	return xs[int(g.float()*float64(len(xs)))%len(xs)]
}

// reportedRun is the run time a copy's end reports to the scheduler: its
// run without its latency with ReportRunTime, else none (0: the scheduler
// counts by its own clock).
func (r *replay) reportedRun(c *rpCopy) float64 {
	if !r.o.ReportRunTime {
		return 0
	}
	return max(c.work-c.lat, 1e-6)
}
