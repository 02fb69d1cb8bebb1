package sched

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
)

// TestPropertyRetry plays the random workloads to their end, then retries
// a random part of the finished and canceled tasks, some back to the
// requested class and some to the disclosed, and runs again: every retried
// task is started again after its retry (as a copy the scheduler never ran
// before), no copy from before the retry is live, the invariants hold
// throughout, and every task ends final once everything is requested.
func TestPropertyRetry(t *testing.T) {
	t.Parallel()
	for ci, cfg := range propertyConfigs {
		t.Run(fmt.Sprintf("%d-%s", ci, cfg.String()), func(t *testing.T) {
			t.Parallel()
			for seed := int64(1); seed <= 30; seed++ {
				cfg := cfg
				cfg.Seed = seed
				script, dur := workload(seed)
				d := newDriver(t, cfg)
				d.dur = dur
				d.tick = 1
				d.check = checkInvariants
				playScript(d, script, math.Inf(1))
				d.run(10000)

				r := rand.New(rand.NewSource(seed))
				before := CopyID(0)
				for _, x := range d.log {
					before = max(before, x.Copy)
				}
				retried := map[TaskRef]TaskState{}
				var sets []SetID
				for id := range d.s.sets {
					sets = append(sets, id)
				}
				slices.Sort(sets)
				for _, id := range sets {
					var infos []TaskInfo
					for _, tk := range d.s.sets[id].tasks {
						if tk == nil || !tk.done() || r.Intn(3) != 0 {
							continue
						}
						st := TaskDisclosed
						if r.Intn(2) == 0 {
							st = TaskRequested
						}
						infos = append(infos, TaskInfo{Index: tk.index, State: st})
						retried[tk.ref()] = st
						delete(d.finished, tk.ref()) // the new attempt may win once more
					}
					if len(infos) > 0 {
						d.apply(Event{Kind: EventRetried, Set: id, Tasks: infos})
					}
				}
				for ref, st := range retried {
					tk := d.s.sets[ref.Set].task(ref.Index)
					if got := toTaskState(tk.state); got != st {
						t.Fatalf("seed %d: retried task %v is %s, want %s", seed, ref, got, st)
					}
					if len(tk.copies) != 0 {
						t.Fatalf("seed %d: retried task %v keeps %d live copies", seed, ref, len(tk.copies))
					}
				}
				mark := len(d.log)
				d.decide()
				// Request everything, so that disclosed retries run too
				// under the interactive policies, and run to the end.
				d.now++
				for _, id := range sets {
					d.apply(Event{Kind: EventRequested, Set: id})
				}
				d.decide()
				d.run(30000)
				started := map[TaskRef]bool{}
				for _, x := range d.log[mark:] {
					if x.Kind == DecisionStart {
						if x.Copy <= before {
							t.Fatalf("seed %d: copy id %d reused after the retry", seed, x.Copy)
						}
						started[x.Task] = true
					}
					if x.Copy <= before && x.Kind != DecisionKill {
						t.Fatalf("seed %d: decision %+v on a copy from before the retry", seed, x)
					}
				}
				for ref := range retried {
					if !started[ref] {
						t.Fatalf("seed %d: retried task %v was never started again", seed, ref)
					}
					if _, ok := d.finished[ref]; !ok {
						t.Fatalf("seed %d: retried task %v did not finish its new attempt", seed, ref)
					}
				}
				for id := range d.s.copies {
					if id <= before {
						t.Fatalf("seed %d: copy %d from before the retry is live", seed, id)
					}
				}
				for _, st := range d.s.sets {
					for _, tk := range st.tasks {
						if tk != nil && !tk.done() {
							t.Fatalf("seed %d: task %v ended in state %s", seed, tk.ref(), toTaskState(tk.state))
						}
					}
				}
				if st := d.s.Stats(); st.RunningCopies != 0 || st.QueuedRequested != 0 || st.BusySlots != 0 {
					t.Fatalf("seed %d: left over %+v", seed, st)
				}
			}
		})
	}
}

// TestRetryRefused: a task that still needs a run cannot be retried, a
// set the scheduler does not hold needs the event's owner, and a bad class
// is refused, with nothing changed.
func TestRetryRefused(t *testing.T) {
	t.Parallel()
	d := newDriver(t, Config{})
	d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 0}, {Index: 1}}})
	for _, ev := range []Event{
		{Kind: EventRetried, Set: 1, Tasks: []TaskInfo{{Index: 0, State: TaskRequested}}},
		{Kind: EventRetried, Set: 2, Tasks: []TaskInfo{{Index: 0, State: TaskRequested}}},
		{Kind: EventRetried, Set: 1, Tasks: []TaskInfo{{Index: 5, State: TaskRequested}, {Index: 0, State: TaskRequested}}},
	} {
		if _, err := d.s.Apply(ev); err == nil {
			t.Fatalf("Apply(%+v) = nil error", ev)
		}
	}
	d.apply(Event{Kind: EventCanceled, Set: 1, Indexes: []int32{1}})
	if _, err := d.s.Apply(Event{Kind: EventRetried, Set: 1, Tasks: []TaskInfo{{Index: 1, State: TaskExecuted}}}); ErrorCode(err) != EINVALID {
		t.Fatalf("retry to executed: %v, want EINVALID", err)
	}
	if got := toTaskState(d.s.sets[1].task(1).state); got != TaskCanceled {
		t.Fatalf("task 1 is %s after refused retries", got)
	}
}

func TestParseRetryOn(t *testing.T) {
	t.Parallel()
	p, err := ParseRetryOn(" 3,1,timeout,lost,3 ")
	if err != nil || p.RetryOn() != "1,3,timeout,lost" {
		t.Fatalf("ParseRetryOn = %+v, %v", p, err)
	}
	if !p.RetriesExit(3, false) || p.RetriesExit(2, false) || !p.RetriesExit(0, true) || p.RetriesExit(0, false) {
		t.Fatalf("RetriesExit wrong for %+v", p)
	}
	for _, bad := range []string{"0", "256", "oom", "1;2"} {
		if _, err := ParseRetryOn(bad); ErrorCode(err) != EINVALID {
			t.Fatalf("ParseRetryOn(%q) = %v, want EINVALID", bad, err)
		}
	}
	if err := (RetryPolicy{Retries: 2}).Validate(); err == nil {
		t.Fatal("retries without retry-on accepted")
	}
}

// A retry of a task the scheduler no longer holds (its set was closed and
// forgotten, or the server restarted since it ended) queues it anew from
// the event's TaskInfo, in its set made anew for the event's owner.
func TestRetryForgottenTask(t *testing.T) {
	t.Parallel()
	d := newDriver(t, Config{Speculation: SpecNone})
	d.dur = func(TaskRef, int, bool) float64 { return 1 }
	d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2})
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(3, 1)})
	d.apply(Event{Kind: EventRequested, Set: 1})
	d.decide()
	d.run(1e9)
	if d.s.sets[1] != nil {
		t.Fatal("set 1 is held after every task finished")
	}
	d.apply(Event{Kind: EventRetried, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 2, State: TaskRequested, EstimateSeconds: 1}}})
	st := d.s.sets[1]
	if st == nil || st.task(2) == nil || st.task(2).state != stRequested || st.owner != "u" {
		t.Fatalf("after the retry: %+v, want set 1 of u holding task 2 requested", st)
	}
	delete(d.finished, TaskRef{Set: 1, Index: 2})
	d.decide()
	d.run(2e9)
	if _, ok := d.finished[TaskRef{Set: 1, Index: 2}]; !ok {
		t.Fatal("the retried task did not run again")
	}
	if d.s.sets[1] != nil {
		t.Fatal("set 1 is held after its retried task finished")
	}
}
