package main

import (
	"fmt"
	"strconv"
	"strings"

	"batchd/sched"
	"batchd/sched/sim"
)

// progressModel is how the replay's copies report their progress to the
// scheduler.
type progressModel struct {
	kind  string  // "exact", "heartbeat" or "none"
	every float64 // exact: seconds of run time between reports
	hb    sim.Heartbeats
}

const (
	defaultProgress = "heartbeat:1,0.25,0.25"
	progressHelp    = "how copies of the sim + live replay report progress: heartbeat:E,P,W (as the worker: a heartbeat every E s per worker carrying what it read every P s of what the task wrote every W s), exact:S (the exact fraction done every S s of run time), none"
)

func parseProgressModel(s string) (progressModel, error) {
	kind, arg, _ := strings.Cut(s, ":")
	switch kind {
	case "none":
		return progressModel{kind: kind}, nil
	case "exact":
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(v > 0) {
			return progressModel{}, fmt.Errorf("progress %q: exact:S with S > 0 seconds", s)
		}
		return progressModel{kind: kind, every: v}, nil
	case "heartbeat":
		var v [3]float64
		parts := strings.Split(arg, ",")
		ok := len(parts) == 3
		for i := 0; ok && i < 3; i++ {
			x, err := strconv.ParseFloat(parts[i], 64)
			v[i], ok = x, err == nil && x > 0
		}
		if !ok {
			return progressModel{}, fmt.Errorf("progress %q: heartbeat:E,P,W with three positive periods in seconds", s)
		}
		return progressModel{kind: kind, hb: sim.Heartbeats{Every: v[0], Poll: v[1], Step: v[2]}}, nil
	}
	return progressModel{}, fmt.Errorf("progress %q: heartbeat:E,P,W, exact:S or none", s)
}

func (p progressModel) String() string {
	switch p.kind {
	case "exact":
		return fmt.Sprintf("exact fraction done every %g s of run time", p.every)
	case "heartbeat":
		return fmt.Sprintf("as the worker reports it: a heartbeat every %g s per worker with the fraction it read every %g s of what the task wrote every %g s", p.hb.Every, p.hb.Poll, p.hb.Step)
	}
	return "no reports"
}

// apply sets tr's and the options' progress reports for a replay under
// seed with latency added to every copy (the worker's default: its
// heartbeat at most once a second while progress changes, its poll and
// the task's write every 250 ms).
func (p progressModel) apply(tr *sched.Trace, seed int64, latency float64) sim.ReplayOptions {
	tr.ProgressEvery = 0
	if p.kind == "exact" {
		tr.ProgressEvery = p.every
	}
	o := sim.ReplayOptions{Seed: seed, Latency: latency}
	if p.kind == "heartbeat" {
		hb := p.hb
		o.Heartbeats = &hb
	}
	return o
}
