package store_test

import (
	"context"
	"fmt"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// BenchmarkFinishRequested records the ends of b.N requested tasks' copies
// (winners, with their bill lines) in batches of 30, as the server's group
// commit does; one op is one finish. The set's b.N tasks are disclosed and
// their copies started before the timer.
//
//	go test -run '^$' -bench FinishRequested -benchtime 3000x -count 3 ./store/
func BenchmarkFinishRequested(b *testing.B) {
	db := openBench(b)
	// A request's context, as the server passes: cancellable.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	startedSet(b, db, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i += 30 {
		var ins []store.FinishInput
		for j := i; j < min(i+30, b.N); j++ {
			ins = append(ins, store.FinishInput{Worker: "w", Copy: sched.CopyID(j + 1), RunSeconds: 0.001})
		}
		outs, err := db.FinishCopies(ctx, ins)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			if o.Err != nil || !o.Result.Won || o.Result.Bill == nil {
				b.Fatalf("finish: %+v", o)
			}
		}
	}
}

// BenchmarkDiscloseOne is the store's part of a request's way to its
// start (BenchmarkRequestToStart): a one-task set disclosed requested with
// an idempotency key, as batchctl and the Go client send it, and then its
// copy's start decision recorded; one op is both transactions. The user
// already holds 5,000 finished sets, as after a day of work.
//
//	go test -run '^$' -bench DiscloseOne -benchtime 3000x -count 3 ./store/
func BenchmarkDiscloseOne(b *testing.B) {
	db := openBench(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "w", Slots: 64}); err != nil {
		b.Fatal(err)
	}
	spec := []sched.TaskSpec{{Argv: []string{"date", "+%s%N"}, NoSpeculation: true}}
	copyID := sched.CopyID(0)
	one := func(i int, key string) {
		res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: spec, Request: true, IdempotencyKey: key})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.GetUserLoad(ctx, "u"); err != nil {
			b.Fatal(err)
		}
		copyID++
		if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionStart, Copy: copyID,
			Task: sched.TaskRef{Set: res.Set.ID, Index: 0}, Slot: sched.SlotRef{Worker: "w", Slot: int32(i % 64)}}}); err != nil {
			b.Fatal(err)
		}
		if _, err := db.FinishCopies(ctx, []store.FinishInput{{Worker: "w", Copy: copyID, RunSeconds: 0.001}}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 5000; i++ {
		one(i, fmt.Sprintf("warm-%d", i))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		one(i, fmt.Sprintf("key-%d", i))
	}
}

// openBench opens a database in the benchmark's own directory, closed
// when it ends.
func openBench(b *testing.B) *store.DB {
	b.Helper()
	db := store.NewDB(b.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// trueSpecs is n tasks of `true`.
func trueSpecs(n int) []sched.TaskSpec {
	specs := make([]sched.TaskSpec, n)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"true"}}
	}
	return specs
}

// startedSet discloses n requested `true` tasks of owner u on a worker
// "w" of 64 slots and starts a copy of each (copy i+1 for task i); it
// returns the set's id.
func startedSet(b *testing.B, db *store.DB, n int) sched.SetID {
	b.Helper()
	ctx := context.Background()
	specs := trueSpecs(n)
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
	return res.Set.ID
}

// finishedSet is startedSet with each copy's end recorded, with stdout
// (500 ends a call).
func finishedSet(b *testing.B, db *store.DB, n int, stdout []byte) sched.SetID {
	b.Helper()
	set := startedSet(b, db, n)
	for i := 0; i < n; i += 500 {
		var ins []store.FinishInput
		for j := i; j < min(i+500, n); j++ {
			ins = append(ins, store.FinishInput{Worker: "w", Copy: sched.CopyID(j + 1), RunSeconds: 0.001, Stdout: stdout})
		}
		if _, err := db.FinishCopies(context.Background(), ins); err != nil {
			b.Fatal(err)
		}
	}
	return set
}

// BenchmarkStopRule records the result that fires a 10,000-task set's stop
// rule: one finish whose transaction cancels the other 9,999 tasks (64 of
// them running). One op is one such finish, on a fresh set.
//
//	go test -run '^$' -bench StopRule -benchtime 10x ./store/
func BenchmarkStopRule(b *testing.B) {
	const n = 10_000
	db := openBench(b)
	ctx := context.Background()
	specs := trueSpecs(n)
	if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "w", Slots: 64}); err != nil {
		b.Fatal(err)
	}
	next := sched.CopyID(1)
	for b.Loop() {
		b.StopTimer()
		res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: specs, Stop: sched.StopRule{OnSuccess: true}})
		if err != nil {
			b.Fatal(err)
		}
		first := next
		ds := make([]sched.Decision, 64)
		for i := range ds {
			ds[i] = sched.Decision{Kind: sched.DecisionStart, Copy: next, Task: sched.TaskRef{Set: res.Set.ID, Index: int32(i)}, Slot: sched.SlotRef{Worker: "w", Slot: int32(i)}}
			next++
		}
		if _, err := db.ApplyDecisions(ctx, ds); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		r, err := db.FinishCopy(ctx, store.FinishInput{Worker: "w", Copy: first, RunSeconds: 1})
		if err != nil || r.Stopped == nil || r.Stopped.Fired.Canceled != n-1 {
			b.Fatalf("finish: %+v, %v", r.Stopped, err)
		}
	}
}
