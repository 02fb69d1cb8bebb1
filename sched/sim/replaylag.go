package sim

// The scheduler's latency estimate (sched/lag.go) decides when a running
// copy counts as a straggler and whether a new copy is worth its latency.
// A replay's scheduler learns its own estimate from the latencies the
// replay gives its copies; with ReplayOptions.LagAt it uses another (a
// live scheduler's, as recorded) instead, to tell how much of a replay's
// difference from its live run the estimate alone makes.

// pinLag sets the scheduler's latency estimate for the events at r.now.
func (r *replay) pinLag() {
	if r.o.LagAt != nil {
		r.s.PinLag(r.o.LagAt(r.now))
	}
}
