package sched

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

// benchSizes are the points of the cost curve: queued tasks, jobs, slots.
var benchSizes = []struct{ tasks, jobs, slots int }{
	{1_000, 10, 10},
	{10_000, 100, 100},
	{100_000, 1_000, 1_000},
	{1_000_000, 10_000, 10_000},
	{1_000_000, 10, 1_000},
	{1_000_000, 10_000, 100},
	{1_000_000, 5_000, 10_000}, // ε-fairness binds: fewer jobs than 0.9·slots
}

// benchSetup builds a scheduler holding tasks queued tasks in jobs sets
// (requested when req, else disclosed) on slots slots (workers of 16),
// fills the slots, and reports the heap bytes held per queued task.
func benchSetup(b *testing.B, cfg Config, tasks, jobs, slots int, req bool) (*Scheduler, []CopyID, float64) {
	b.Helper()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for w := 0; w*16 < slots; w++ {
		n := min(16, slots-w*16)
		if _, err := s.Apply(Event{Kind: EventWorkerUp, Worker: WorkerID(fmt.Sprintf("w%05d", w)), Slots: int32(n), CanSuspend: true}); err != nil {
			b.Fatal(err)
		}
	}
	per := tasks / jobs
	ts := make([]TaskInfo, per)
	for j := range jobs {
		for i := range ts {
			ts[i] = TaskInfo{Index: int32(i), EstimateSeconds: float64(5 + (i*7+j)%11)}
		}
		if _, err := s.Apply(Event{Kind: EventDisclosed, Set: SetID(j + 1), Owner: "u", Tasks: ts}); err != nil {
			b.Fatal(err)
		}
		if req {
			if _, err := s.Apply(Event{Kind: EventRequested, Set: SetID(j + 1)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	ts = nil
	runtime.GC()
	runtime.ReadMemStats(&m1)
	perTask := float64(m1.HeapAlloc-m0.HeapAlloc) / float64(tasks)
	var running []CopyID
	for _, d := range s.Decide(0) {
		if d.Kind == DecisionStart {
			running = append(running, d.Copy)
		}
	}
	return s, running, perTask
}

// benchLoop finishes the oldest running copy and decides, b.N times: the
// steady state of a busy cluster, one slot freeing at a time. Each task that
// finishes is replaced by a new one in its set (outside the timed part), so
// the queue keeps its size. It reports the median time of finish+Decide
// (ns-median/op); ns/op also counts the refill's two events.
func benchLoop(b *testing.B, s *Scheduler, running []CopyID, slots int, req bool) {
	dt := 10.0 / float64(slots) // a copy lives about 10 s, its estimate
	now := 0.0
	lat := make([]time.Duration, 0, b.N)
	decisions := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now += dt
		t0 := time.Now()
		if len(running) > 0 {
			c := running[0]
			running = running[1:]
			if _, err := s.Apply(Event{Kind: EventCopyFinished, Time: now, Copy: c}); err != nil {
				b.Fatal(err)
			}
		}
		ds := s.Decide(now)
		lat = append(lat, time.Since(t0))
		for _, d := range ds {
			if d.Kind != DecisionStart || d.Speculative {
				continue
			}
			// Keep the queue's length: a finished original's set gets a
			// new task (the finish of the copy this start replaces).
			st := s.sets[d.Task.Set]
			ev := Event{Kind: EventDisclosed, Time: now, Set: d.Task.Set, Tasks: []TaskInfo{{Index: st.lo + int32(len(st.tasks)), EstimateSeconds: float64(5 + len(st.tasks)%11)}}}
			if _, err := s.Apply(ev); err != nil {
				b.Fatal(err)
			}
			if req {
				if _, err := s.Apply(Event{Kind: EventRequested, Time: now, Set: d.Task.Set, Indexes: []int32{ev.Tasks[0].Index}}); err != nil {
					b.Fatal(err)
				}
			}
		}
		decisions += len(ds)
		for _, d := range ds {
			if d.Kind == DecisionStart {
				running = append(running, d.Copy)
			}
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(s.jobs.n+s.discJobs), "jobs-at-end")
	if len(lat) > 0 && decisions > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "ns-median/op")
		b.ReportMetric(float64(decisions)/float64(b.N), "decisions/op")
	}
}

// BenchmarkDecideRequested measures the requested class under Hopper and
// GRASS (the default configuration): tasks queued in jobs requested sets.
// Run with -benchtime=20000x: each op finishes one task.
func BenchmarkDecideRequested(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("tasks=%d/jobs=%d/slots=%d", sz.tasks, sz.jobs, sz.slots), func(b *testing.B) {
			s, running, perTask := benchSetup(b, Config{}, sz.tasks, sz.jobs, sz.slots, true)
			benchLoop(b, s, running, sz.slots, true)
			b.ReportMetric(perTask, "B/queued-task") // after the loop: ResetTimer drops metrics
		})
	}
}

// BenchmarkDecideRequestedNoFloor is BenchmarkDecideRequested with
// ε = 1 (no fairness floor), where Decide walks only the jobs that get
// slots; with the floor binding (fewer jobs than 0.9·slots) it visits every
// job.
func BenchmarkDecideRequestedNoFloor(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("tasks=%d/jobs=%d/slots=%d", sz.tasks, sz.jobs, sz.slots), func(b *testing.B) {
			s, running, perTask := benchSetup(b, Config{Epsilon: 1}, sz.tasks, sz.jobs, sz.slots, true)
			benchLoop(b, s, running, sz.slots, true)
			b.ReportMetric(perTask, "B/queued-task")
		})
	}
}

// BenchmarkDecideDisclosed measures the disclosed class (FCFS).
func BenchmarkDecideDisclosed(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("tasks=%d/jobs=%d/slots=%d", sz.tasks, sz.jobs, sz.slots), func(b *testing.B) {
			s, running, perTask := benchSetup(b, Config{}, sz.tasks, sz.jobs, sz.slots, false)
			benchLoop(b, s, running, sz.slots, false)
			b.ReportMetric(perTask, "B/queued-task") // after the loop: ResetTimer drops metrics
		})
	}
}

// BenchmarkDecideIdle measures a Decide with nothing free to do: the
// server calls it every second whatever happens.
func BenchmarkDecideIdle(b *testing.B) {
	s, _, _ := benchSetup(b, Config{}, 1_000_000, 10_000, 10_000, true)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Decide(1)
	}
}

// BenchmarkWhy asks Why about queued tasks deep in a queue of 10^6 tasks
// (1,000 sets of 1,000, all requested or all disclosed, 1,000 slots busy):
// the last tasks of the last sets, whose counts reach WhyScanLimit.
func BenchmarkWhy(b *testing.B) {
	for _, req := range []bool{true, false} {
		b.Run(fmt.Sprintf("requested=%v", req), func(b *testing.B) {
			s, _, _ := benchSetup(b, Config{Seed: 1}, 1_000_000, 1_000, 1_000, req)
			refs := make([]TaskRef, 0, 64)
			for j := 0; j < 64; j++ {
				refs = append(refs, TaskRef{Set: SetID(1000 - j), Index: int32(999 - j)})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Why(refs[i%len(refs)], 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFinishedHeld runs b.N one-second requested tasks in sets of
// 100 on 64 slots to the end and reports the heap the scheduler still
// holds per finished task (live heap after a collection, against before
// the sets were disclosed):
//
//	go test -run '^$' -bench FinishedHeld -benchtime 200000x ./sched/
func BenchmarkFinishedHeld(b *testing.B) {
	d := newDriver(b, Config{Speculation: SpecNone})
	d.dur = func(TaskRef, int, bool) float64 { return 1 }
	d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 64})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for set := 0; set*100 < b.N; set++ {
		d.apply(Event{Kind: EventDisclosed, Set: SetID(set + 1), Owner: "u", Tasks: tasksWithEstimate(min(100, b.N-set*100), 1)})
		d.apply(Event{Kind: EventRequested, Set: SetID(set + 1)})
	}
	d.decide()
	d.run(1e12)
	// The driver's own records of every task, not the scheduler's.
	d.finished, d.nCopies, d.ended, d.log, d.logTimes, d.history = nil, nil, nil, nil, nil, nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "held-B/finished-task")
	b.ReportMetric(float64(len(d.s.sets)), "sets-held")
}
