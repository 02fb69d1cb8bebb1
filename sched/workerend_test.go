package sched

import (
	"fmt"
	"testing"
)

// TestWorkerEnds: a worker that ends (a pilot's time limit) gets no copy
// that would not end before it stops taking copies, and none at all once
// that time has come; a task with no estimate at all may start until
// then; a worker without an end takes what the ending one cannot; Why
// says when the workers' ends are what a task waits for.
func TestWorkerEnds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		workers []Event // EventWorkerUp, at t=0
		at      Time    // when the tasks come and the scheduler decides
		tasks   []TaskInfo
		want    map[TaskRef]WorkerID
		why     map[TaskRef]WhyReason
	}{
		{
			name:    "a task longer than what remains waits",
			workers: []Event{{Worker: "pilot", Slots: 2, EndsAt: 100}},
			at:      10,
			tasks:   []TaskInfo{{Index: 0, EstimateSeconds: 200}, {Index: 1, EstimateSeconds: 50}},
			want:    map[TaskRef]WorkerID{{1, 1}: "pilot"},
			why:     map[TaskRef]WhyReason{{1, 0}: WhyNoTimeLeft},
		},
		{
			name:    "a worker without an end takes it",
			workers: []Event{{Worker: "pilot", Slots: 2, EndsAt: 100}, {Worker: "host", Slots: 1}},
			at:      10,
			tasks:   []TaskInfo{{Index: 0, EstimateSeconds: 200}},
			want:    map[TaskRef]WorkerID{{1, 0}: "host"},
		},
		{
			name:    "no estimate: it may start until the end",
			workers: []Event{{Worker: "pilot", Slots: 1, EndsAt: 100}},
			at:      99,
			tasks:   []TaskInfo{{Index: 0}},
			want:    map[TaskRef]WorkerID{{1, 0}: "pilot"},
		},
		{
			name:    "nothing starts once the end has come",
			workers: []Event{{Worker: "pilot", Slots: 1, EndsAt: 100}},
			at:      100,
			tasks:   []TaskInfo{{Index: 0}},
			want:    map[TaskRef]WorkerID{},
			why:     map[TaskRef]WhyReason{{1, 0}: WhyNoTimeLeft},
		},
		{
			name:    "a worker without an end is not held back",
			workers: []Event{{Worker: "host", Slots: 1}},
			at:      1e9,
			tasks:   []TaskInfo{{Index: 0, EstimateSeconds: 1e6}},
			want:    map[TaskRef]WorkerID{{1, 0}: "host"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, Config{Speculation: SpecNone})
			d.dur = func(TaskRef, int, bool) float64 { return 10 }
			for _, w := range tc.workers {
				w.Kind = EventWorkerUp
				d.apply(w)
			}
			d.now = tc.at
			d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "alice", Tasks: tc.tasks})
			d.apply(Event{Kind: EventRequested, Set: 1})
			got := startsOf(d.decide())
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("starts %v, want %v", got, tc.want)
			}
			for ref, want := range tc.why {
				a, err := d.s.Why(ref, d.now)
				if err != nil {
					t.Fatal(err)
				}
				if a.Reason != want {
					t.Errorf("Why(%v) = %s (%s), want %s", ref, a.Reason, a.Detail, want)
				}
			}
		})
	}

	t.Run("an end time that is not a time is refused", func(t *testing.T) {
		d := newDriver(t, Config{})
		if _, err := d.s.Apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1, EndsAt: -1}); ErrorCode(err) != EINVALID {
			t.Errorf("EndsAt -1: %v, want EINVALID", err)
		}
	})

	t.Run("a worker that re-registers without an end takes every task again", func(t *testing.T) {
		d := newDriver(t, Config{Speculation: SpecNone})
		d.dur = func(TaskRef, int, bool) float64 { return 10 }
		d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1, EndsAt: 5})
		d.now = 10
		d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "alice", Tasks: tasksWithEstimate(1, 10)})
		d.apply(Event{Kind: EventRequested, Set: 1})
		if got := startsOf(d.decide()); len(got) != 0 {
			t.Fatalf("starts %v on a worker past its end", got)
		}
		d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
		if got := startsOf(d.decide()); got[TaskRef{1, 0}] != "w" {
			t.Fatalf("starts %v, want 1/0 on w", got)
		}
	})
}

// TestWorkerStopping: a worker that begins to stop (a pilot handing its
// copies back) gets no new copy from then on, even of a task with no
// estimate and with its slots free; a worker that comes up again takes
// copies again.
func TestWorkerStopping(t *testing.T) {
	t.Parallel()
	d := newDriver(t, Config{Speculation: SpecNone})
	d.dur = func(TaskRef, int, bool) float64 { return 10 }
	d.apply(Event{Kind: EventWorkerUp, Worker: "pilot", Slots: 2, EndsAt: 1000})
	d.apply(Event{Kind: EventWorkerUp, Worker: "other", Slots: 1})
	d.now = 10
	d.apply(Event{Kind: EventWorkerStopping, Worker: "pilot"})
	d.apply(Event{Kind: EventWorkerStopping, Worker: "unknown"})
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "alice", Tasks: []TaskInfo{{Index: 0}, {Index: 1}}})
	d.apply(Event{Kind: EventRequested, Set: 1})
	d.now = 11
	if got := startsOf(d.decide()); fmt.Sprint(got) != fmt.Sprint(map[TaskRef]WorkerID{{1, 0}: "other"}) {
		t.Fatalf("starts %v, want only 1/0 on other (the stopping pilot takes none)", got)
	}
	d.apply(Event{Kind: EventWorkerUp, Worker: "pilot", Slots: 2})
	if got := startsOf(d.decide()); got[TaskRef{1, 1}] != "pilot" {
		t.Fatalf("starts %v, want 1/1 on pilot once it is up again", got)
	}
	if _, err := d.s.Apply(Event{Kind: EventWorkerStopping, Worker: "pilot", Time: 0}); ErrorCode(err) != EINVALID {
		t.Errorf("stopping at 0: %v, want EINVALID", err)
	}
}
