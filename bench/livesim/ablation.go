package main

import (
	"context"
	"fmt"
	"math"

	"batchd/sched"
	"batchd/sched/sim"
)

// ablation is sim + live with one of its parts taken out or changed.
type ablation struct {
	name string
	opts func(rec record, o *sim.ReplayOptions, tr *sched.Trace)
}

var ablations = []ablation{
	{"sim + live", func(record, *sim.ReplayOptions, *sched.Trace) {}},
	{"requests heard at their stamp, not when the live scheduler heard them", func(_ record, o *sim.ReplayOptions, _ *sched.Trace) { o.RequestHeard = false }},
	{"without the run time reported (no latency rule)", func(_ record, o *sim.ReplayOptions, _ *sched.Trace) { o.ReportRunTime = false }},
	{"latency drawn independently, not by moment", func(rec record, o *sim.ReplayOptions, _ *sched.Trace) {
		o.LatencyAt, o.Latencies = nil, rec.Latencies
	}},
	{"suspensions counted as latency (the earlier reading)", func(rec record, o *sim.ReplayOptions, _ *sched.Trace) {
		if len(rec.LatencySuspended) != len(rec.Latencies) {
			return // a record from before suspensions were kept
		}
		lat := make([]float64, len(rec.Latencies))
		for i, x := range rec.Latencies {
			lat[i] = x + rec.LatencySuspended[i]
		}
		o.LatencyAt = latencyAt(lat, rec.LatencyAt)
	}},
	{"median latency for every copy", func(_ record, o *sim.ReplayOptions, tr *sched.Trace) {
		o.LatencyAt, o.Latencies, o.Latency = nil, nil, tr.Latency
	}},
	{"median overhead for every copy", func(rec record, _ *sim.ReplayOptions, tr *sched.Trace) {
		d := func(set sched.SetID, idx int32, k int) float64 {
			return draw(rec.Seed, rec.Keys[set], idx, k, rec.Beta, rec.Scale, rec.Limit)
		}
		ovh := math.Max(0, overhead(rec.Trace, d))
		tr.CopyDuration = func(set sched.SetID, idx int32, k int) float64 { return d(set, idx, k) + ovh }
	}},
	{"each copy that won live with its own latency", func(rec record, o *sim.ReplayOptions, _ *sched.Trace) {
		if len(rec.Copies) > 0 {
			o.OwnLatency = ownLatency(rec)
		}
	}},
	{"scheduler also run where a killed copy would have ended", func(_ record, o *sim.ReplayOptions, _ *sched.Trace) { o.DecideAtStaleEnds = true }},
	{"the live scheduler's latency estimate, as polled", func(rec record, o *sim.ReplayOptions, _ *sched.Trace) {
		if len(rec.Lag) > 0 {
			o.LagAt = liveLag(rec.Lag)
		}
	}},
	{"progress a fraction of the draw, from the task's start", func(rec record, o *sim.ReplayOptions, _ *sched.Trace) {
		o.TaskWork = func(set sched.SetID, idx int32, k int) float64 {
			return draw(rec.Seed, rec.Keys[set], idx, k, rec.Beta, rec.Scale, rec.Limit)
		}
	}},
	{"scheduler run after every progress report too (no tick)", func(_ record, o *sim.ReplayOptions, _ *sched.Trace) { o.Tick = 0 }},
	{"exact progress every second of run, not heartbeats", func(_ record, o *sim.ReplayOptions, tr *sched.Trace) {
		o.Heartbeats, tr.ProgressEvery = nil, 1
	}},
}

// printAblations replays every speculative record under each ablation and
// prints, per workload, the paired ratio live / replay over the
// speculative rows (per seed, geometric mean over modes) and the mean
// speculative copies per run.
func printAblations(recs []record, wls []string, pm progressModel) error {
	fmt.Println("\nWhat each part of sim + live does: the paired ratio live / replay over the speculative rows (per seed, geometric mean over the three modes; 95% interval, Student's t on logs) and speculative copies per run, live against the replay.")
	fmt.Println()
	fmt.Println("| workload | replay | live / replay | above / below | sign p | verdict | spec. copies live | spec. copies replay |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | --- | ---: | ---: |")
	for _, wl := range wls {
		for _, ab := range ablations {
			logs := map[int64][]float64{}
			var seeds []int64
			var sl, sr []float64
			for _, rec := range recs {
				if rec.Workload != wl || rec.Mode == "none" {
					continue
				}
				d := func(set sched.SetID, idx int32, k int) float64 {
					return draw(rec.Seed, rec.Keys[set], idx, k, rec.Beta, rec.Scale, rec.Limit)
				}
				tr := traceOf(rec)
				tr.CopyDuration = ownOverhead(rec, d)
				o := liveOptions(rec, &tr, pm)
				ab.opts(rec, &o, &tr)
				res, err := sim.Replay(context.Background(), &tr, tr.Config, o)
				if err != nil {
					return fmt.Errorf("%s under %q: %w", rec.file(), ab.name, err)
				}
				if _, ok := logs[rec.Seed]; !ok {
					seeds = append(seeds, rec.Seed)
				}
				logs[rec.Seed] = append(logs[rec.Seed], math.Log(sim.Recorded(rec.Trace).MeanVisibleResponse/res.MeanVisibleResponse))
				sl, sr = append(sl, float64(rec.LiveSpec)), append(sr, float64(res.SpeculativeStarted))
			}
			var rs []float64
			for _, s := range seeds {
				rs = append(rs, math.Exp(meanOf(logs[s])))
			}
			p := pairedTest(rs)
			fmt.Printf("| %s | %s | %s | %s | %s |\n", wl, ab.name, pairedCells(p), ci(sl, "%.0f"), ci(sr, "%.0f"))
		}
	}
	return nil
}
