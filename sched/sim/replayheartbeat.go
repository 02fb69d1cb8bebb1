package sim

import (
	"math"
	"slices"

	"batchd/sched"
)

// Heartbeats models how a live worker tells the scheduler its copies'
// progress, in place of Trace.ProgressEvery's exact report every so many
// seconds of each copy's own run. The task writes its fraction done every
// Step of its run; the worker reads the file every Poll from the copy's
// start, and sends what it read with its heartbeat, which comes every Every
// (per worker, at a phase of its own) while its copies' progress changes.
// So the scheduler hears of a copy's progress only at its worker's
// heartbeats, and what it hears is the fraction of the last write before
// the last read: a copy reports nothing before it has run Step + Poll,
// and what it reports is up to Step + Poll old.
type Heartbeats struct {
	Every float64 // seconds between a worker's heartbeats
	Poll  float64 // seconds between the worker's reads of a copy's progress
	Step  float64 // seconds between the task's writes of its progress
}

// Valid says whether every period is positive.
func (h Heartbeats) Valid() bool { return h.Every > 0 && h.Poll > 0 && h.Step > 0 }

// reported is the fraction done a worker's heartbeat carries for a copy of
// work seconds that has run run seconds (0: nothing yet). A write due at
// the instant of a read is not yet read: the task's clock starts after
// the worker's, with the process.
func (h Heartbeats) reported(run, work float64) float64 {
	const eps = 1e-9 // periods' multiples are not exact in binary
	read := math.Floor(run/h.Poll+eps) * h.Poll
	k := math.Ceil(read/h.Step-eps) - 1
	if k <= 0 || work <= 0 {
		return 0
	}
	return math.Min(1, k*h.Step/work)
}

// hbState is the replay's heartbeat bookkeeping.
type hbState struct {
	pending int                      // heartbeat events in the queue
	sent    map[sched.CopyID]float64 // the last fraction reported per copy
}

// startHeartbeats queues each worker's first heartbeat, at a phase drawn
// from the seed within one period of its start.
func (r *replay) startHeartbeats() error {
	h := r.o.Heartbeats
	if h == nil {
		return nil
	}
	if !h.Valid() {
		return sched.Errorf(sched.EINVALID, "heartbeats: every period must be positive (%+v)", *h)
	}
	r.hb.sent = map[sched.CopyID]float64{}
	for wi, w := range r.tr.Workers {
		g := newRNG(r.o.Seed, 11, uint64(wi))
		r.push(rpEvent{t: w.Up + g.float()*h.Every, kind: rpHeartbeat, w: wi})
		r.hb.pending++
	}
	return nil
}

// heartbeat sends worker wi's heartbeat: the progress of each of its
// running copies that changed since its last report. The next heartbeat
// comes a period later while anything else is still to happen.
func (r *replay) heartbeat(wi int) error {
	h := r.o.Heartbeats
	r.hb.pending--
	id := r.tr.Workers[wi].ID
	var ids []sched.CopyID
	for cid, c := range r.copies {
		if c.running && !c.ended && c.slot.Worker == id {
			ids = append(ids, cid)
		}
	}
	slices.Sort(ids)
	for _, cid := range ids {
		c := r.copies[cid]
		p := h.reported(r.taskClock(c, c.done+r.now-c.from))
		if p <= 0 || p == r.hb.sent[cid] {
			continue
		}
		r.hb.sent[cid] = p
		if _, err := r.apply(sched.Event{Kind: sched.EventCopyProgress, Time: r.now, Copy: cid, Progress: p}); err != nil {
			return err
		}
	}
	if r.q.Len() > r.hb.pending {
		r.push(rpEvent{t: r.now + h.Every, kind: rpHeartbeat, w: wi})
		r.hb.pending++
	}
	return nil
}

// taskClock is what a heartbeat's fraction counts for copy c that has been
// running run seconds since its start decision: without
// ReplayOptions.TaskWork, run of c.work (the whole of it, latency and
// overhead included); with it, the task's own clock, which starts once the
// assignment reached the worker (half the copy's latency) and the process
// started (the rest of c.work beyond its latency and the task's work), of
// the task's work.
func (r *replay) taskClock(c *rpCopy, run float64) (float64, float64) {
	f := r.o.TaskWork
	if f == nil {
		return run, c.work
	}
	w := f(r.tr.Sets[c.set].ID, int32(c.task), c.k)
	if !(w > 0) {
		return run, c.work
	}
	start := c.lat/2 + max(0, c.work-c.lat-w)
	return max(0, run-start), w
}
