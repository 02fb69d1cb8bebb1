package sched

import "testing"

// GPUs are counted like slots: a worker with 4 slots and 2 GPUs runs at
// most 2 copies of 1-GPU tasks at once, a worker without GPUs none, and
// a copy's end gives its GPU back.
func TestGPUsFit(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone})
	b.apply(Event{Kind: EventWorkerUp, Worker: "cpu", Slots: 4})
	b.apply(Event{Kind: EventWorkerUp, Worker: "gpu", Slots: 4, GPUs: 2})
	ts := make([]TaskInfo, 3)
	for i := range ts {
		ts[i] = TaskInfo{Index: int32(i), GPUs: 1}
	}
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: ts})
	b.apply(Event{Kind: EventRequested, Set: 1})
	ds := b.s.Decide(0)
	if len(ds) != 2 {
		t.Fatalf("Decide = %+v, want 2 copies (2 GPUs)", ds)
	}
	for _, d := range ds {
		if d.Slot.Worker != "gpu" {
			t.Fatalf("copy on %s, want gpu: %+v", d.Slot.Worker, ds)
		}
	}
	if more := b.s.Decide(1); len(more) != 0 {
		t.Fatalf("with both GPUs held: %+v, want nothing", more)
	}
	b.apply(Event{Kind: EventCopyFinished, Time: 2, Copy: ds[0].Copy})
	if ds := b.s.Decide(2); len(ds) != 1 || ds[0].Slot.Worker != "gpu" || ds[0].Task != (TaskRef{1, 2}) {
		t.Fatalf("after one ended: %+v, want task 2 on gpu", ds)
	}
	if _, err := b.s.Apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: []TaskInfo{{Index: 0, GPUs: MaxGPUs + 1}}}); err == nil {
		t.Fatal("a task asking for more than MaxGPUs was taken")
	}
}
