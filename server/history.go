package server

import (
	"context"
	"sync"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// HistoryInterval is how often the server samples the cluster's and each
// open set's queues, running copies and throughput for GetHistory.
const HistoryInterval = 10 * time.Second

// historyLen is how many samples a ring keeps: the last hour.
const historyLen = int(time.Hour / HistoryInterval)

// histSample is one sample of the cluster or of a set.
type histSample struct {
	at               time.Time
	queuedRequested  int64
	queuedDisclosed  int64
	running, done    int64
	slots, busySlots int32
}

// histRing holds the last historyLen samples.
type histRing struct {
	buf  []histSample
	next int
}

func (r *histRing) add(s histSample) {
	if len(r.buf) < historyLen {
		r.buf = append(r.buf, s)
		return
	}
	r.buf[r.next] = s
	r.next = (r.next + 1) % historyLen
}

// all returns the samples oldest first.
func (r *histRing) all() []histSample {
	out := make([]histSample, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// last returns the newest sample (the zero sample when there is none).
func (r *histRing) last() histSample {
	if len(r.buf) == 0 {
		return histSample{}
	}
	return r.buf[(r.next+len(r.buf)-1)%len(r.buf)]
}

// setHist is one set's ring and what its next sample's throughput is
// counted from.
type setHist struct {
	histRing
	lastDone, lastTotal int
	gone                bool // the scheduler forgot it (every task final)
}

// history is the server's memory of the last hour, sampled every
// HistoryInterval; a restart starts it afresh.
type history struct {
	mu      sync.Mutex
	started bool
	// finished is the requested tasks finished at the last sample (the
	// metrics' count), for the cluster's throughput.
	finished int64
	cluster  histRing
	sets     map[sched.SetID]*setHist
}

// add records one sample at now from the scheduler's stats, its open
// sets' loads and the count of requested tasks finished so far. The
// cluster's throughput is the growth of that count (exact, however short
// the tasks). A set's is the growth of its tasks that need no more runs; a
// set the scheduler forgot since (all its tasks final) counts the rest of
// its tasks and gets a last, empty sample (a set that began and ended
// between two samples is never seen). A set's ring goes an hour after its
// last sample.
func (h *history) add(now time.Time, st sched.Stats, loads []sched.SetLoad, finished int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sets == nil {
		h.sets = map[sched.SetID]*setHist{}
	}
	seen := make(map[sched.SetID]bool, len(loads))
	for _, l := range loads {
		seen[l.Set] = true
		sh := h.sets[l.Set]
		if sh == nil {
			sh = &setHist{}
			// At the first sample (a fresh start) the tasks already done are
			// the baseline, not an hour's throughput in ten seconds.
			if !h.started {
				sh.lastDone = l.Done
			}
			h.sets[l.Set] = sh
		}
		d := int64(max(0, l.Done-sh.lastDone))
		sh.lastDone, sh.lastTotal, sh.gone = l.Done, l.Total, false
		sh.add(histSample{at: now, queuedRequested: int64(l.Queued), running: int64(l.Running), done: d})
	}
	for id, sh := range h.sets {
		switch {
		case seen[id]:
		case !sh.gone:
			d := int64(max(0, sh.lastTotal-sh.lastDone))
			sh.gone, sh.lastDone = true, sh.lastTotal
			sh.add(histSample{at: now, done: d})
		case now.Sub(sh.last().at) > time.Hour:
			delete(h.sets, id)
		}
	}
	done := finished - h.finished
	if !h.started {
		done = 0
	}
	h.started, h.finished = true, finished
	h.cluster.add(histSample{at: now, queuedRequested: int64(st.QueuedRequested), queuedDisclosed: int64(st.QueuedDisclosed),
		running: int64(st.RunningCopies), done: done, slots: int32(st.Slots), busySlots: int32(st.BusySlots)})
}

// samples returns the cluster's samples (set 0) or a set's, oldest first.
func (h *history) samples(id sched.SetID) []histSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	if id == 0 {
		return h.cluster.all()
	}
	if sh := h.sets[id]; sh != nil {
		return sh.all()
	}
	return nil
}

// SampleHistory takes one history sample now. The dispatch loop's
// companion does it every HistoryInterval; tests call it.
func (s *Server) SampleHistory() {
	s.mu.Lock()
	loads := s.sched.SetLoads()
	st := s.sched.Stats()
	s.mu.Unlock()
	s.metrics.mu.Lock()
	finished := s.metrics.nFinished
	s.metrics.mu.Unlock()
	s.history.add(s.now(), st, loads, finished)
}

// startHistory samples every HistoryInterval until the server closes.
func (s *Server) startHistory() {
	go func() {
		t := time.NewTicker(HistoryInterval)
		defer t.Stop()
		s.SampleHistory()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.SampleHistory()
			}
		}
	}()
}

// GetHistory returns the last hour of the cluster's samples, or of one
// set's (its owner's or an admin's; another's set is not found).
func (h clusterHandler) GetHistory(ctx context.Context, req *batchv1.GetHistoryRequest) (*batchv1.GetHistoryResponse, error) {
	s := h.s
	if err := checkSetID("set_id", req.SetId); err != nil {
		return nil, err
	}
	id := sched.SetID(req.SetId)
	if id != 0 {
		owner, err := s.ownerFor(ctx, id)
		if err != nil {
			return nil, err
		}
		if _, err := s.db.GetTaskSet(ctx, owner, id); err != nil {
			return nil, err
		}
	}
	out := &batchv1.GetHistoryResponse{IntervalSeconds: int32(HistoryInterval / time.Second)}
	for _, x := range s.history.samples(id) {
		out.Samples = append(out.Samples, &batchv1.HistorySample{At: ts(x.at), QueuedRequested: x.queuedRequested, QueuedDisclosed: x.queuedDisclosed,
			Running: x.running, Done: x.done, Slots: x.slots, BusySlots: x.busySlots})
	}
	return out, nil
}
