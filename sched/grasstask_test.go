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

// lastWaveSpread runs job 1 (one task) and job 2 (three tasks), both
// requested, on 24 free slots, every copy progressing 1% per 50 s as a
// skewed task's copies do, for 40 rounds of GRASS (speculation sp), and
// returns the most copies any task of each job ran at once.
func lastWaveSpread(t *testing.T, sp Speculation, cfg Config) (job1, job2 int) {
	t.Helper()
	cfg.Speculation = sp
	b := setup(t, cfg)
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 24})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 10)})
	b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: tasksWithEstimate(3, 10)})
	b.apply(Event{Kind: EventRequested, Set: 1})
	b.apply(Event{Kind: EventRequested, Set: 2})
	type run struct {
		id CopyID
		at Time
	}
	var started []run
	live := map[TaskRef]int{}
	record := func(now Time) {
		for _, d := range b.s.Decide(now) {
			switch d.Kind {
			case DecisionStart:
				started = append(started, run{d.Copy, now})
				live[d.Task]++
			case DecisionKill:
				t.Fatalf("copy %d killed (%s): the test expects none", d.Copy, d.Reason)
			}
		}
		for ref, n := range live {
			if ref.Set == 1 {
				job1 = max(job1, n)
			} else {
				job2 = max(job2, n)
			}
		}
	}
	record(0)
	for now := Time(50); now <= 2000; now += 50 {
		for _, r := range started {
			b.apply(Event{Kind: EventCopyProgress, Time: now, Copy: r.id, Progress: min(0.01*float64(now-r.at)/50, 0.9)})
		}
		record(now)
	}
	return job1, job2
}

// With the share bound, a task in its job's last wave runs at most
// ⌈S/(N·R)⌉ live copies: 24 slots over 2 jobs give job 1 (one task) up to
// 12 and each of job 2's three tasks up to 4, never less than the floor;
// GRASS as written spreads copies over the tasks and gives job 2's tasks
// more than its share, and a fixed bound of 4 holds job 1 to 4 as well.
func TestLastWaveShareCopies(t *testing.T) {
	t.Parallel()
	for _, sp := range []Speculation{SpecGRASS, SpecHopperGRASS} {
		t.Run(string(sp), func(t *testing.T) {
			cfg := Config{LastWaveShare: true, VirtualFactor: 8}
			if j1, j2 := lastWaveSpread(t, sp, cfg); j2 != 4 || j1 <= 4 || j1 > 12 {
				t.Errorf("share bound: job 1's task ran %d copies at once (want 5..12), job 2's tasks %d (want 4)", j1, j2)
			}
			cfg.LastWaveCopies = 6
			if j1, j2 := lastWaveSpread(t, sp, cfg); j2 != 6 || j1 > 12 {
				t.Errorf("share bound, floor 6: job 1's task ran %d copies at once (want ≤ 12), job 2's tasks %d (want the floor, 6)", j1, j2)
			}
			if j1, j2 := lastWaveSpread(t, sp, Config{VirtualFactor: 8}); j2 <= 4 {
				t.Errorf("GRASS as written: job 1's task ran %d copies at once, job 2's tasks %d (want more than 4)", j1, j2)
			}
			if j1, j2 := lastWaveSpread(t, sp, Config{LastWaveCopies: 4, VirtualFactor: 8}); j1 != 4 || j2 != 4 {
				t.Errorf("fixed bound 4: copies at once %d and %d, want 4 and 4", j1, j2)
			}
		})
	}
}

// shareCopies is the ceiling of the slots over jobs × remaining tasks.
func TestShareCopies(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{LastWaveShare: true})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 25})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 10)})
	b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: tasksWithEstimate(3, 10)})
	b.apply(Event{Kind: EventDisclosed, Set: 3, Owner: "u", Tasks: tasksWithEstimate(40, 10)})
	for id := SetID(1); id <= 3; id++ {
		b.apply(Event{Kind: EventRequested, Set: id})
	}
	for _, c := range []struct {
		id        SetID
		share, lw int
	}{{1, 9, 9}, {2, 3, 3}, {3, 1, 2}} { // ⌈25/3⌉, ⌈25/9⌉, ⌈25/120⌉ (floor: MaxEarlyCopies)
		st := b.s.sets[c.id]
		if got := b.s.shareCopies(st); got != c.share {
			t.Errorf("set %d: shareCopies %d, want %d", c.id, got, c.share)
		}
		if got := b.s.lastWaveCopies(st); got != c.lw {
			t.Errorf("set %d: lastWaveCopies %d, want %d", c.id, got, c.lw)
		}
	}
}
