package sim

import "batchd/sched"

// A live server runs its scheduler when something it must act on happens
// (a disclose, a request, a cancel, a copy's end, a worker's arrival or
// departure) and on its dispatch tick, not when a heartbeat brings
// progress: a copy that becomes a straggler with time or with its
// progress gets its speculative copy at the next such moment. With
// ReplayOptions.Tick the replay decides the same way: on those events and
// every Tick seconds (at a phase drawn from the seed), not after progress
// reports alone.

// startTicks queues the first tick.
func (r *replay) startTicks() {
	if r.o.Tick <= 0 {
		return
	}
	g := newRNG(r.o.Seed, 17)
	r.push(rpEvent{t: r.first + g.float()*r.o.Tick, kind: rpTick})
	r.hb.pending++ // a tick, like a heartbeat, does not keep the replay going
}

// tick queues the next tick while anything else is still to happen.
func (r *replay) tick() {
	r.hb.pending--
	if r.q.Len() > r.hb.pending {
		r.push(rpEvent{t: r.now + r.o.Tick, kind: rpTick})
		r.hb.pending++
	}
}

// decides says whether an event of kind k makes the replay run the
// scheduler afterwards.
func (r *replay) decides(k rpEvKind) bool {
	return r.o.Tick <= 0 || (k != rpProgress && k != rpHeartbeat)
}

// stale says whether e is the end or progress of a copy that no longer
// runs as it did when e was queued (killed, suspended or lost since): the
// replay drops it, and a live server never hears of it, so it is no
// moment to run the scheduler at either. Deciding there gave the replay's
// scheduler a look at its stragglers wherever a killed copy would have
// ended, which a live one gets only at its next event or tick.
func (r *replay) stale(e rpEvent) bool {
	if e.kind != rpCopyEnd && e.kind != rpProgress {
		return false
	}
	c := r.copies[sched.CopyID(e.cp)]
	return c == nil || c.gen != e.gen || !c.running
}
