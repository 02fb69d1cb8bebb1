package sched

import "testing"

// grassSkewed runs one task of a one-task job (estimate 10 s) on 10 free
// slots whose every copy progresses 1% per 50 s, as a skewed task's copies
// do (each takes the task's long duration), and returns how many
// speculative copies GRASS started by t = 200.
func grassSkewed(t *testing.T, cfg Config) int {
	t.Helper()
	cfg.Speculation = SpecGRASS
	b := setup(t, cfg)
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 10})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 10)})
	b.apply(Event{Kind: EventRequested, Set: 1})
	type run struct {
		id CopyID
		at Time
	}
	var started []run
	for _, d := range b.s.Decide(0) {
		started = append(started, run{d.Copy, 0})
	}
	spec := 0
	for now := Time(50); now <= 200; now += 50 {
		for _, r := range started {
			b.apply(Event{Kind: EventCopyProgress, Time: now, Copy: r.id, Progress: 0.01 * float64(now-r.at) / 50})
		}
		for _, d := range b.s.Decide(now) {
			if d.Kind == DecisionStart && d.Speculative {
				spec++
				started = append(started, run{d.Copy, now})
			}
		}
	}
	return spec
}

// The first speculative copy of a straggler comes as before; a further
// copy of a task whose copies all run long does not, under per-task
// estimates (its copies show a new one takes as long) or under the
// last-wave bound; GRASS as written copies it again and again.
func TestGrassPerTaskAndLastWaveCopies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  Config
		want func(int) bool
	}{
		{"GRASS as written", Config{}, func(n int) bool { return n >= 3 }},
		{"per-task estimates", Config{GrassPerTask: true}, func(n int) bool { return n == 1 }},
		{"last-wave bound 2", Config{LastWaveCopies: 2}, func(n int) bool { return n == 1 }},
		{"last-wave bound 3", Config{LastWaveCopies: 3}, func(n int) bool { return n == 2 }},
	} {
		if n := grassSkewed(t, c.cfg); !c.want(n) {
			t.Errorf("%s: %d speculative copies", c.name, n)
		}
	}
}

// A task one slow copy delays still gets a copy under per-task estimates:
// its only copy says nothing about a fresh one.
func TestGrassPerTaskFirstCopy(t *testing.T) {
	t.Parallel()
	got := lateSetup(t, Config{Speculation: SpecGRASS, GrassPerTask: true}, 1, func(int) float64 { return 0.01 })
	if got["speculate-gs"]+got["speculate-ras"] != 1 {
		t.Fatalf("decisions %v, want one speculative copy", got)
	}
}
