package store_test

import (
	"context"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// BenchmarkGetTasks reads 64 changed tasks of a finished set of 2000, each
// with its copy, as a watch's message does (sendSome); per op.
func BenchmarkGetTasks(b *testing.B) {
	db := store.NewDB(b.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	const n = 2000
	specs := make([]sched.TaskSpec, n)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"true"}}
	}
	if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "w", Slots: 64}); err != nil {
		b.Fatal(err)
	}
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: specs, Request: true})
	if err != nil {
		b.Fatal(err)
	}
	var ds []sched.Decision
	var ins []store.FinishInput
	for i := range n {
		id := sched.CopyID(i + 1)
		ds = append(ds, sched.Decision{Kind: sched.DecisionStart, Copy: id, Task: sched.TaskRef{Set: res.Set.ID, Index: int32(i)},
			Slot: sched.SlotRef{Worker: "w", Slot: int32(i % 64)}})
		ins = append(ins, store.FinishInput{Worker: "w", Copy: id, RunSeconds: 0.001})
	}
	if _, err := db.ApplyDecisions(ctx, ds); err != nil {
		b.Fatal(err)
	}
	if _, err := db.FinishCopies(ctx, ins); err != nil {
		b.Fatal(err)
	}
	idx := make([]int32, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		first := int32(i*64) % (n - 64)
		for j := range idx {
			idx[j] = first + int32(j)
		}
		if _, tasks, err := db.GetTasks(ctx, "u", res.Set.ID, idx); err != nil || len(tasks) != 64 {
			b.Fatal(len(tasks), err)
		}
	}
}
