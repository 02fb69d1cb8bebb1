package sched

import (
	"strings"
	"testing"
)

// Why says when GPUs are what a task waits for: none of the workers up has
// as many (no worker fits), or none has them free now (resources); a task
// held back by slots alone gets no GPU detail. The capacity check refuses
// a task asking for more GPUs than any worker up has, unless a pool
// reports pilots (they ask their batch system for GPUs).
func TestWhyGPUs(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone})
	b.apply(Event{Kind: EventWorkerUp, Worker: "cpu", Slots: 8})
	b.apply(Event{Kind: EventWorkerUp, Worker: "gpu", Slots: 4, GPUs: 2})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{
		{Index: 0, GPUs: 1}, {Index: 1, GPUs: 2}, {Index: 2, GPUs: 3}, {Index: 3, Cpus: 9}}})
	b.apply(Event{Kind: EventRequested, Set: 1})
	ds := b.s.Decide(0)
	if len(ds) != 1 || ds[0].Task != (TaskRef{1, 0}) || ds[0].Slot.Worker != "gpu" {
		t.Fatalf("Decide = %+v, want task 0 alone, on gpu", ds)
	}
	cases := []struct {
		index  int32
		reason WhyReason
		detail []string // substrings; none: no detail
	}{
		{1, WhyResources, []string{"waiting for GPUs", "2 GPUs", "the most free on one is 1"}},
		{2, WhyNeverFits, []string{"waiting for GPUs", "3 GPUs", "no worker up has that many (the most is 2)"}},
		{3, WhyNeverFits, nil},
	}
	for _, tc := range cases {
		a, err := b.s.Why(TaskRef{1, tc.index}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if a.Reason != tc.reason {
			t.Errorf("Why(1/%d) = %s (%q), want %s", tc.index, a.Reason, a.Detail, tc.reason)
		}
		if len(tc.detail) == 0 && a.Detail != "" {
			t.Errorf("Why(1/%d) detail %q, want none", tc.index, a.Detail)
		}
		for _, s := range tc.detail {
			if !strings.Contains(a.Detail, s) {
				t.Errorf("Why(1/%d) detail %q, want it to say %q", tc.index, a.Detail, s)
			}
		}
	}

	c := b.s.Capacity()
	if c.MaxGPUs != 2 || !c.Holds(Need{GPUs: 2}) || c.Holds(Need{GPUs: 3}) {
		t.Fatalf("capacity %+v: want at most 2 GPUs, holding 2 and not 3", c)
	}
	err := c.Refuse(Need{Cpus: 2, GPUs: 3})
	if ErrorCode(err) != EFAILEDPRECONDITION || !strings.Contains(ErrorMessage(err), "asks for 2 slots and 3 GPUs") ||
		!strings.Contains(ErrorMessage(err), "has 8 slots, no memory and 2 GPUs") {
		t.Errorf("Refuse(3 GPUs) = %v; want FailedPrecondition naming 3 GPUs asked and 2 had", err)
	}
	c.Pool, c.PilotSlots = true, 1
	if !c.Holds(Need{GPUs: 3}) {
		t.Errorf("with a pool: %+v does not hold 3 GPUs", c)
	}
	if got := PoolGPUDetail(3, "waiting for GPUs: ..."); !strings.Contains(got, "3 GPUs") || !strings.Contains(got, "pool") {
		t.Errorf("PoolGPUDetail = %q", got)
	}
	if got := PoolGPUDetail(0, ""); got != "" {
		t.Errorf("PoolGPUDetail of no GPUs = %q, want none", got)
	}
}
