package main

import (
	"context"
	"math"

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
//   - sim + live: the overhead, per copy the recorded latency of the
//     start decision nearest its own (latency comes in bursts), the run time without it reported at the copy's end (so that
//     the scheduler learns the latency and judges running copies by it,
//     as the live server does: sched/lag.go), and progress heard at the
//     workers' heartbeats as pm says.
func replayRun(ctx context.Context, rec record, pm progressModel) (outcome, error) {
	out := outcome{workload: rec.Workload, mode: rec.Mode, seed: rec.Seed, liveBeta: rec.LiveBeta, liveSpec: rec.LiveSpec, wall: rec.Wall,
		latQ90: quantile(rec.Latencies, 0.9)}
	tr := *rec.Trace
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
	o := pm.apply(&tr, rec.Seed, tr.Latency)
	o.LatencyAt, o.ReportRunTime = latencyAt(rec.Latencies, rec.LatencyAt), true
	if o.LatencyAt == nil {
		o.Latencies = rec.Latencies // a record without decision times
	}
	out.simLive, err = sim.Replay(ctx, &tr, tr.Config, o)
	return out, err
}
