package store_test

import (
	"context"
	"testing"

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
	set := finishedSet(b, db, n, []byte("result line\n"))
	b.ResetTimer()
	for range b.N {
		read, from := 0, store.OutputsCursor{}
		for {
			page, err := db.GetOutputs(ctx, store.OutputsInput{Owner: "u", Set: set, From: from})
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
