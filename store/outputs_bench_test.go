package store_test

import (
	"context"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// BenchmarkGetOutputsSet reads the outputs of a set of 10,000 finished
// tasks (one short line of stdout each, no kept files) a page at a time,
// as batchctl output SET --dir does; one op is the whole set.
//
//	go test -run '^$' -bench GetOutputsSet -benchtime 20x -count 3 ./store/
func BenchmarkGetOutputsSet(b *testing.B) {
	const n = 10_000
	db := openBench(b)
	ctx := context.Background()
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
	ds := make([]sched.Decision, n)
	for i := range ds {
		ds[i] = sched.Decision{Kind: sched.DecisionStart, Copy: sched.CopyID(i + 1), Task: sched.TaskRef{Set: res.Set.ID, Index: int32(i)},
			Slot: sched.SlotRef{Worker: "w", Slot: int32(i % 64)}}
	}
	if _, err := db.ApplyDecisions(ctx, ds); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i += 500 {
		var ins []store.FinishInput
		for j := i; j < min(i+500, n); j++ {
			ins = append(ins, store.FinishInput{Worker: "w", Copy: sched.CopyID(j + 1), RunSeconds: 0.001, Stdout: []byte("result line\n")})
		}
		if _, err := db.FinishCopies(ctx, ins); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		read, from := 0, store.OutputsCursor{}
		for {
			page, err := db.GetOutputs(ctx, store.OutputsInput{Owner: "u", Set: res.Set.ID, From: from})
			if err != nil {
				b.Fatal(err)
			}
			read += len(page.Outputs)
			if page.Next == nil {
				break
			}
			from = *page.Next
		}
		if read != n {
			b.Fatalf("read %d outputs, want %d", read, n)
		}
	}
}
