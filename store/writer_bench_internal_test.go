package store

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"batchd/sched"
)

// BenchmarkGroupCommit is the writer's work per task at full rate: one
// group commit (FinishThenDecide) records the ends of a slot group's
// copies (requested tasks that win, with a line of stdout and a bill
// line each) and starts the next task on each freed slot. One op is one
// task: its end plus its successor's start. Slots is the group's size: 64,
// and 50, a size the batched statements pad (valuesrows.go).
//
// The ends carry the server's memory of their copies (FinishInput.Known),
// as the server gives it; BENCH_READ=1 leaves it out, and each end is read.
//
// BENCH_ABLATE names schema objects (indexes, triggers) to drop before the
// timer, comma-separated, to measure what each costs: a measurement only,
// never a setting.
//
//	go test -run '^$' -bench GroupCommit -benchtime 20000x -count 3 ./store/
func BenchmarkGroupCommit(b *testing.B) {
	for _, slots := range []int{64, 50} {
		b.Run("slots="+strconv.Itoa(slots), func(b *testing.B) { benchGroupCommit(b, slots) })
	}
}

func benchGroupCommit(b *testing.B, slots int) {
	db := NewDB(b.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ablate(b, db, os.Getenv("BENCH_ABLATE"))
	n := b.N + slots
	specs := make([]sched.TaskSpec, n)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"echo", "hi"}}
	}
	if _, err := db.RegisterWorker(ctx, RegisterInput{Worker: "w", Slots: int32(slots)}); err != nil {
		b.Fatal(err)
	}
	res, err := db.Disclose(ctx, DiscloseInput{Owner: "u", Tasks: specs, Request: true})
	if err != nil {
		b.Fatal(err)
	}
	set := res.Set.ID
	start := func(task int) sched.Decision {
		return sched.Decision{Kind: sched.DecisionStart, Copy: sched.CopyID(task + 1), Task: sched.TaskRef{Set: set, Index: int32(task)},
			Slot: sched.SlotRef{Worker: "w", Slot: int32(task % slots)}}
	}
	first := make([]sched.Decision, slots)
	for i := range first {
		first[i] = start(i)
	}
	started, err := db.ApplyDecisions(ctx, first)
	if err != nil {
		b.Fatal(err)
	}
	// The server's memory of the copies it started, given to their ends
	// as the server gives it (server/finishknown.go); BENCH_READ set: none,
	// each end read.
	known := map[sched.CopyID]FinishKnown{}
	remember := func(started []Started) {
		if os.Getenv("BENCH_READ") == "" {
			for _, st := range started {
				known[st.Decision.Copy] = st.Known
			}
		}
	}
	remember(started)
	out := []byte("hi\n")
	// The disclose's pages out of the WAL before the timer: the
	// checkpoint of b.N tasks' rows is the setup's cost, not the writer's.
	if _, err := db.wconn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	_, busy0 := db.WriteStats()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i += slots {
		var ins []FinishInput
		var next []sched.Decision
		for j := i; j < min(i+slots, b.N); j++ {
			in := FinishInput{Worker: "w", Copy: sched.CopyID(j + 1), RunSeconds: 0.001, CPUSeconds: 0.001, Stdout: out}
			if k, ok := known[in.Copy]; ok {
				in.Known = &k
				delete(known, in.Copy)
			}
			ins = append(ins, in)
			next = append(next, start(j+slots))
		}
		outs, _, started, decErr, err := db.FinishThenDecide(ctx, ins, func([]FinishOutcome) []sched.Decision { return next })
		if err != nil || decErr != nil {
			b.Fatal(err, decErr)
		}
		remember(started)
		for _, o := range outs {
			if o.Err != nil || !o.Result.Won {
				b.Fatalf("finish: %+v", o)
			}
		}
	}
	b.StopTimer()
	// CPU time, the process's (the checkpointer's included): on a machine
	// shared at load 10-30, wall time measures the machine, not the writer.
	b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/task")
	_, busy := db.WriteStats()
	b.ReportMetric((busy-busy0)*1e3/float64(b.N), "writer-ms/task")
	if taken, stale := db.FinishKnownStats(); stale != 0 || (os.Getenv("BENCH_READ") == "") != (taken > 0) {
		b.Fatalf("%d commits from memory, %d stale", taken, stale)
	}
	if os.Getenv("BENCH_STMTS") != "" {
		stmtSteps(b, db)
	}
}

// stmtSteps logs the write connection's statements by the virtual machine
// steps they took (SQLite built with SQLITE_ENABLE_STMTVTAB: run with
// CGO_CFLAGS=-DSQLITE_ENABLE_STMTVTAB), most first: what each costs.
func stmtSteps(b *testing.B, db *DB) {
	rows, err := db.wconn.QueryContext(context.Background(), `SELECT nstep, run, reprep, sql FROM sqlite_stmt ORDER BY nstep DESC LIMIT 25`)
	if err != nil {
		b.Logf("sqlite_stmt: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var nstep, run, reprep int64
		var q string
		if err := rows.Scan(&nstep, &run, &reprep, &q); err != nil {
			b.Fatal(err)
		}
		b.Logf("%10d steps %7d runs %5d repreps  %.160s", nstep, run, reprep, strings.Join(strings.Fields(q), " "))
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ablate drops the named indexes and triggers (a measurement only).
func ablate(b *testing.B, db *DB, names string) {
	if names == "" {
		return
	}
	ctx := context.Background()
	for _, name := range strings.Split(names, ",") {
		if err := db.write(ctx, func(tx *Tx) error {
			var kind string
			if err := tx.QueryRowContext(ctx, `SELECT type FROM sqlite_master WHERE name = ?`, name).Scan(&kind); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `DROP `+strings.ToUpper(kind)+` `+name)
			return err
		}); err != nil {
			b.Fatalf("ablate %s: %v", name, err)
		}
	}
}
