package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"

	"batchd/sched"
	"batchd/sched/sim"
)

// replayRun measures a live run as recorded and replays it with the real
// scheduler in virtual time, every copy drawing the run time its live copy
// of that number slept, three ways:
//
//   - sim: the draws alone, each copy reporting its exact progress every
//     second of its run: the simulator's own model;
//   - sim + overheads: each copy also runs the median overhead (the task
//     process's start, its sleeps' slack) and holds its slot the median
//     latency (start decision to report, minus the run time) longer;
//   - sim + live: per copy its own overhead (recorded where the copy ran to
//     its end live, else a draw from the recorded ones), the recorded latency of the
//     start decision nearest its own (latency comes in bursts), the run time without it reported at the copy's end (so that
//     the scheduler learns the latency and judges running copies by it,
//     as the live server does: sched/lag.go), progress heard at the
//     workers' heartbeats as pm says, the scheduler run on the events a
//     server acts on and its dispatch tick, not after progress alone, and
//     each request heard when the live scheduler heard it: after its
//     write committed (sched.TraceTask.HeardAt), its visible response
//     still counted from its stamp.
//
// serverTick is `batchd serve`'s dispatch tick (server.Config.TickInterval).
const serverTick = 1.0

func replayRun(ctx context.Context, rec record, pm progressModel) (outcome, error) {
	out := outcome{workload: rec.Workload, mode: rec.Mode, seed: rec.Seed, liveBeta: rec.LiveBeta, liveSpec: rec.LiveSpec, wall: rec.Wall,
		latQ90: quantile(rec.Latencies, 0.9)}
	tr := traceOf(rec)
	d := func(set sched.SetID, idx int32, k int) float64 {
		return draw(rec.Seed, rec.Keys[set], idx, k, rec.Beta, rec.Scale, rec.Limit)
	}
	out.live = sim.Recorded(&tr)
	out.overhead = overhead(&tr, d)
	out.latency = tr.Latency
	tr.CopyDuration = d
	tr.ProgressEvery = 1
	var err error
	if out.sim, err = sim.Replay(ctx, &tr, tr.Config, sim.ReplayOptions{Seed: rec.Seed}); err != nil {
		return out, err
	}
	tr.CopyDuration = func(set sched.SetID, idx int32, k int) float64 {
		return d(set, idx, k) + math.Max(0, out.overhead)
	}
	if out.simLat, err = sim.Replay(ctx, &tr, tr.Config, sim.ReplayOptions{Seed: rec.Seed, Latency: tr.Latency}); err != nil {
		return out, err
	}
	tr.CopyDuration = ownOverhead(rec, d)
	out.simLive, err = sim.Replay(ctx, &tr, tr.Config, liveOptions(rec, &tr, pm))
	return out, err
}

// traceOf is a copy of rec's trace whose latency is the median of rec's
// own samples (suspensions left out) where it has them: records made
// before the store left suspensions out of a trace's latency kept it in.
func traceOf(rec record) sched.Trace {
	tr := *rec.Trace
	if len(rec.Latencies) > 0 {
		s := slices.Clone(rec.Latencies)
		slices.Sort(s)
		tr.Latency = s[len(s)/2]
	}
	return tr
}

// liveOptions are sim + live's replay options for rec, whose trace tr is.
func liveOptions(rec record, tr *sched.Trace, pm progressModel) sim.ReplayOptions {
	o := pm.apply(tr, rec.Seed, tr.Latency)
	o.LatencyAt, o.ReportRunTime, o.Tick = latencyAt(rec.Latencies, rec.LatencyAt), true, serverTick
	o.RequestHeard = true // when the live scheduler heard each request (records from before: at its stamp)
	if o.LatencyAt == nil {
		o.Latencies = rec.Latencies // a record without decision times
	}
	return o
}

// ownOverhead gives every copy its draw plus its own overhead: the run time
// the live copy of that number reported when it ran to its end (its own
// start and sleeps' slack, which vary with the machine's load), else its
// draw plus an overhead drawn from those recorded (keyed by the seed and
// the copy).
func ownOverhead(rec record, d func(sched.SetID, int32, int) float64) func(sched.SetID, int32, int) float64 {
	tr := rec.Trace
	byID := make(map[sched.SetID]int, len(tr.Sets))
	var ov []float64
	for i, st := range tr.Sets {
		byID[st.ID] = i
		for _, tk := range st.Tasks {
			for k, c := range tk.Copies {
				if c > 0 {
					ov = append(ov, math.Max(0, c-d(st.ID, tk.Index, k)))
				}
			}
		}
	}
	slices.Sort(ov)
	return func(set sched.SetID, idx int32, k int) float64 {
		if i, ok := byID[set]; ok && int(idx) < len(tr.Sets[i].Tasks) {
			if c := tr.Sets[i].Tasks[idx].Copies; k < len(c) && c[k] > 0 {
				return c[k]
			}
		}
		if len(ov) == 0 {
			return d(set, idx, k)
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "overhead/%d/%d/%d/%d", rec.Seed, set, idx, k)
		return d(set, idx, k) + ov[int(h.Sum64()%uint64(len(ov)))]
	}
}

// ownLatency gives every copy that won live its own recorded latency (from
// its start decision to its report, less its run time and its time
// suspended), keyed as the trace numbers copies: by start among its
// task's copies.
func ownLatency(rec record) func(sched.SetID, int32, int) (float64, bool) {
	type key struct {
		set sched.SetID
		idx int32
		k   int
	}
	own := map[key]float64{}
	n := map[taskKey]int{}
	for _, c := range rec.Copies {
		tk := taskKey{c.Set, c.Index}
		k := n[tk]
		n[tk]++
		if c.State == "won" && c.Ended > c.Started {
			own[key{c.Set, c.Index, k}] = copyLatency(int64(c.Started*1e9), int64(c.Ended*1e9), c.Run, c.Suspended)
		}
	}
	return func(set sched.SetID, idx int32, k int) (float64, bool) {
		x, ok := own[key{set, idx, k}]
		return x, ok
	}
}
