package store

import (
	"context"
	"encoding/binary"
	"os"
	"runtime"
	"sort"
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
// 50 (a size the batched statements pad: valuesrows.go), and the sizes
// the local pipeline gathers (1 to 16; about 9 at 64 slots), where the
// cost per commit that does not grow with its size dominates. Beside the
// CPU per task it reports the CPU per commit and, exact at any load, the
// statements run from Go (stmts/commit) and cgo calls (cgo/commit) per
// commit.
//
// BENCH_WAL=1 stops the checkpointer and counts the pages each commit
// appends to the WAL (wal-frames/commit), and logs them by the table or
// index they belong to when SQLite has dbstat (run with
// CGO_CFLAGS=-DSQLITE_ENABLE_DBSTAT_VTAB).
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
	for _, slots := range []int{64, 50, 16, 9, 4, 1} {
		b.Run("slots="+strconv.Itoa(slots), func(b *testing.B) { benchGroupCommit(b, slots) })
	}
}

func benchGroupCommit(b *testing.B, slots int) {
	path := b.TempDir() + "/batchd.db"
	db := NewDB(path)
	walCount := os.Getenv("BENCH_WAL") != ""
	if walCount {
		// No checkpoint: the WAL keeps every commit's pages.
		db.checkpointAfter = func(time.Duration) <-chan time.Time { return nil }
	}
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
	commits0, busy0 := db.WriteStats()
	stmts0, cgo0 := db.WriteStatements(), runtime.NumCgoCall()
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
	cpu, cgo := cpuTime()-cpu0, runtime.NumCgoCall()-cgo0
	commits, busy := db.WriteStats()
	commits -= commits0
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/task")
	b.ReportMetric(float64(cpu)/1e6/float64(commits), "cpu-ms/commit")
	b.ReportMetric((busy-busy0)*1e3/float64(b.N), "writer-ms/task")
	b.ReportMetric(float64(db.WriteStatements()-stmts0)/float64(commits), "stmts/commit")
	b.ReportMetric(float64(cgo)/float64(commits), "cgo/commit")
	if walCount {
		walFrames(b, db, path, commits)
	}
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

// walFrames reports the pages the WAL at path holds per commit (the
// checkpointer stopped, it holds every commit's since the timer began:
// the setup's were checkpointed out, TRUNCATE), and logs them by table
// or index when dbstat is there.
func walFrames(b *testing.B, db *DB, path string, commits int64) {
	wal, err := os.ReadFile(path + "-wal")
	if err != nil {
		b.Fatal(err)
	}
	if len(wal) < 32 {
		b.Fatalf("WAL of %d bytes", len(wal))
	}
	size := int(binary.BigEndian.Uint32(wal[8:12]))
	pages := map[uint32]int{} // frames by page number
	frames := 0
	for off := 32; off+24+size <= len(wal); off += 24 + size {
		pages[binary.BigEndian.Uint32(wal[off:off+4])]++
		frames++
	}
	b.ReportMetric(float64(frames)/float64(commits), "wal-frames/commit")
	names := map[uint32]string{}
	rows, err := db.wconn.QueryContext(context.Background(), `SELECT name, pageno FROM dbstat`)
	if err != nil {
		b.Logf("dbstat: %v", err)
	} else {
		for rows.Next() {
			var name string
			var page uint32
			if err := rows.Scan(&name, &page); err != nil {
				b.Fatal(err)
			}
			names[page] = name
		}
		rows.Close()
	}
	by := map[string]int{}
	for p, n := range pages {
		name, ok := names[p]
		if !ok {
			name = "(other)"
		}
		by[name] += n
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return by[keys[i]] > by[keys[j]] })
	for _, k := range keys {
		b.Logf("%-32s %8.2f frames/commit", k, float64(by[k])/float64(commits))
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
