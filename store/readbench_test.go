package store_test

import (
	"context"
	"testing"

	"batchd/store"
)

// BenchmarkGetTasks reads 64 changed tasks of a finished set of 2000, each
// with its copy, as a watch's message does (sendSome); per op.
func BenchmarkGetTasks(b *testing.B) {
	db := openBench(b)
	ctx := context.Background()
	const n = 2000
	set := finishedSet(b, db, n, nil)
	idx := make([]int32, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		first := int32(i*64) % (n - 64)
		for j := range idx {
			idx[j] = first + int32(j)
		}
		if _, tasks, err := db.GetTasks(ctx, "u", set, idx); err != nil || len(tasks) != 64 {
			b.Fatal(len(tasks), err)
		}
	}
}

// BenchmarkGetTaskSet reads a set of 20,000 requested tasks with its
// counts, as each event of a counts-only watch and batchctl status do;
// per op.
func BenchmarkGetTaskSet(b *testing.B) {
	db := openBench(b)
	ctx := context.Background()
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: trueSpecs(20000), Request: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if set, err := db.GetTaskSet(ctx, "u", res.Set.ID); err != nil || set.Counts.Requested != 20000 {
			b.Fatal(set.Counts, err)
		}
	}
}
