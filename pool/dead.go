package pool

import (
	"fmt"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// A pilot whose worker died or hangs while its job runs would hold its
// allocation, and its place under MaxPilots, until the batch system's
// time limit (none, on a partition without one). The pilot's script ends
// the job when the worker process dies; for the rest (a worker stopped or
// wedged, a script killed with it) the pool cancels a running pilot whose
// registered worker has been silent longer than the server's lease and
// SilentMargin.

// DefaultSilentMargin is Config.SilentMargin when zero.
const DefaultSilentMargin = 10 * time.Second

// liveWorkers splits the server's answer into the workers up (by name)
// and how long each live worker has been silent. A server that lists only
// workers up leaves State empty.
func liveWorkers(ws []*batchv1.PoolWorker) (up map[string]bool, silent map[string]time.Duration) {
	up, silent = map[string]bool{}, map[string]time.Duration{}
	for _, w := range ws {
		if w.GetState() == "" || w.GetState() == "up" {
			up[w.GetName()] = true
		}
		silent[w.GetName()] = time.Duration(w.GetSilentSeconds() * float64(time.Second))
	}
	return up, silent
}

// silentPilots returns the running pilots whose worker registered and
// has been silent longer than lease + SilentMargin: to be cancelled.
func (p *Pool) silentPilots(pilots []Pilot, silent map[string]time.Duration, lease time.Duration) []string {
	if lease <= 0 {
		return nil // a server that does not say its lease
	}
	limit := lease + p.cfg.SilentMargin
	var out []string
	for _, pl := range pilots {
		if pl.State != Running || !p.registered[pl.ID] || p.silenced[pl.ID] {
			continue
		}
		d, ok := silent[p.eng.WorkerName(pl.ID)]
		if !ok || d <= limit {
			continue
		}
		p.silenced[pl.ID] = true
		p.log.Warn("cancelling a pilot whose worker is silent", "pilot", pl.ID, "worker", p.eng.WorkerName(pl.ID),
			"silent", d.Round(time.Second), "limit", limit)
		p.lastErr = fmt.Sprintf("pilot %s cancelled: its worker was silent for %s (died or hangs; see its log)", pl.ID, d.Round(time.Second))
		out = append(out, pl.ID)
	}
	return out
}
