package pool

import (
	"context"
	"slices"
	"testing"

	batchv1 "batchd/proto/batch/v1"
)

// partitionsSubmitted counts the submitted pilots per partition ("":
// the pool's own).
func partitionsSubmitted(e *engine) map[string]int {
	out := map[string]int{}
	for _, sp := range e.submitted {
		out[sp.Partition]++
	}
	return out
}

// The pool brings pilots up only for the work it may run (the server
// counts it per partition), in the partition that work names, and each
// pilot registers in the pool.
func TestPoolPilotsPerPartition(t *testing.T) {
	t.Parallel()
	// 9 queued in all, 4 of them routed to another pool: the server
	// leaves those out of partition_queues.
	e, s := &engine{}, &server{requested: 9, parts: []*batchv1.PartitionQueue{
		{QueuedRequested: 2}, {Partition: "long", QueuedRequested: 3}}}
	p := newTestPool(t, Config{Name: "slurm", Slots: 1, MaxPilots: 10}, e, s)
	ctx := context.Background()
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if got := partitionsSubmitted(e); got[""] != 2 || got["long"] != 3 || len(got) != 2 {
		t.Fatalf("submitted per partition %v, want 2 in the pool's own and 3 in long", got)
	}
	for _, sp := range e.submitted {
		if i := slices.Index(sp.Argv, "--pool"); i < 0 || i+1 >= len(sp.Argv) || sp.Argv[i+1] != "slurm" {
			t.Fatalf("pilot argv %q does not name the pool", sp.Argv)
		}
	}
	// The next round counts the pending pilots where they are: nothing
	// more, nothing cancelled.
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if len(e.submitted) != 5 || len(e.cancelled) != 0 {
		t.Fatalf("second round: %d submitted, cancelled %v; want 5 and none", len(e.submitted), e.cancelled)
	}
	// The long work is gone: its pending pilots go, the others stay.
	s.parts = []*batchv1.PartitionQueue{{QueuedRequested: 2}}
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if len(e.cancelled) != 3 {
		t.Fatalf("cancelled %v, want the 3 pilots of partition long", e.cancelled)
	}
	for _, pl := range e.pilots {
		if slices.Contains(e.cancelled, pl.ID) != (pl.Partition == "long") {
			t.Fatalf("pilot %s in %q: cancelled %v", pl.ID, pl.Partition, e.cancelled)
		}
	}
}

// Work routed only to another pool brings no pilot up.
func TestPoolIgnoresOtherPoolsWork(t *testing.T) {
	t.Parallel()
	e, s := &engine{}, &server{requested: 7, disclosed: 7, parts: []*batchv1.PartitionQueue{{}}}
	p := newTestPool(t, Config{Slots: 1, MaxPilots: 10, Disclosed: 10}, e, s)
	if err := p.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(e.submitted) != 0 {
		t.Fatalf("submitted %d pilots for work routed elsewhere", len(e.submitted))
	}
}

// A partition the batch system refuses is tried once, said once, and
// left alone; the pool does not back off for it, and its other
// partitions get their pilots.
func TestPoolRefusedPartition(t *testing.T) {
	t.Parallel()
	e, s := &engine{badParts: []string{"nope"}}, &server{parts: []*batchv1.PartitionQueue{
		{QueuedRequested: 1}, {Partition: "nope", QueuedRequested: 3}}}
	p := newTestPool(t, Config{Slots: 1, MaxPilots: 10}, e, s)
	ctx := context.Background()
	for range 5 {
		if err := p.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if e.refused != 1 {
		t.Fatalf("the refused partition was tried %d times in 5 rounds, want once", e.refused)
	}
	if got := partitionsSubmitted(e); got[""] != 1 {
		t.Fatalf("submitted %v, want the pool's own partition's pilot", got)
	}
	if !p.notBefore.IsZero() || p.lastErr != "" {
		t.Fatalf("the pool backed off (%v, %q) for a refused partition", p.notBefore, p.lastErr)
	}
}
