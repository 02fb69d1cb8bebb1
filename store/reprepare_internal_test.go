package store

import (
	"context"
	"strings"
	"testing"

	"batchd/sched"
)

// TestNoReprepare runs what the server does once per task (disclose and
// request, start, heartbeat, finish: won, killed and lost) and checks,
// through SQLite's sqlite_stmt table, that no statement run per task is
// planned again at each run (see noJoinNote). sqlite_stmt exists only when
// SQLite is compiled with SQLITE_ENABLE_STMTVTAB, so the test skips
// otherwise; `make test-go` runs it with that flag:
//
//	CGO_CFLAGS=-DSQLITE_ENABLE_STMTVTAB go test -run NoReprepare ./store/
func TestNoReprepare(t *testing.T) {
	db := NewDB(t.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	const n = 120
	specs := make([]sched.TaskSpec, n)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"true"}}
	}
	if _, err := db.RegisterWorker(ctx, RegisterInput{Worker: "w", Slots: 64}); err != nil {
		t.Fatal(err)
	}
	req, err := db.Disclose(ctx, DiscloseInput{Owner: "u", Tasks: specs, Request: true})
	if err != nil {
		t.Fatal(err)
	}
	dis, err := db.Disclose(ctx, DiscloseInput{Owner: "u", Tasks: specs})
	if err != nil {
		t.Fatal(err)
	}
	id := sched.CopyID(0)
	for i := 0; i < n; i += 10 {
		var ds []sched.Decision
		var ins []FinishInput
		var prog []CopyProgress
		for j := i; j < i+10; j++ {
			for _, set := range []sched.SetID{req.Set.ID, dis.Set.ID} {
				id++
				ds = append(ds, sched.Decision{Kind: sched.DecisionStart, Copy: id, Task: sched.TaskRef{Set: set, Index: int32(j)},
					Slot: sched.SlotRef{Worker: "w", Slot: int32(j % 64)}})
				prog = append(prog, CopyProgress{Copy: id, Progress: 0.5})
				ins = append(ins, FinishInput{Worker: "w", Copy: id, RunSeconds: 0.001, Killed: j%7 == 0})
			}
			// A speculative copy of the requested task, killed when the
			// original wins.
			id++
			ds = append(ds, sched.Decision{Kind: sched.DecisionStart, Copy: id, Speculative: true, Task: sched.TaskRef{Set: req.Set.ID, Index: int32(j)},
				Slot: sched.SlotRef{Worker: "w", Slot: int32(j % 64)}})
			ins = append(ins, FinishInput{Worker: "w", Copy: id, RunSeconds: 0.001})
		}
		if _, err := db.ApplyDecisions(ctx, ds); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Heartbeat(ctx, "w", prog); err != nil {
			t.Fatal(err)
		}
		outs, err := db.FinishCopies(ctx, ins)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
		}
		if _, err := db.Request(ctx, RequestInput{Owner: "u", SetID: dis.Set.ID, Indexes: []int32{int32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.wconn.QueryContext(ctx, `SELECT reprep, run, sql FROM sqlite_stmt`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			t.Skip("SQLite built without SQLITE_ENABLE_STMTVTAB: run with CGO_CFLAGS=-DSQLITE_ENABLE_STMTVTAB")
		}
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var reprep, run int
		var sql string
		if err := rows.Scan(&reprep, &run, &sql); err != nil {
			t.Fatal(err)
		}
		seen++
		// A statement run per task runs at least n times here; one planned
		// again at every run has reprep close to run.
		if run >= n && reprep > run/10 {
			t.Errorf("planned again at %d of its %d runs: %s", reprep, run, strings.Join(strings.Fields(sql), " "))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen < 8 {
		t.Fatalf("sqlite_stmt listed %d statements: not the write connection's", seen)
	}
}

// TestNoReprepareReads: the same for the API's reads (the sets and tasks
// a page or batchctl lists, a task in detail, outputs, a bill), on one read
// connection.
func TestNoReprepareReads(t *testing.T) {
	db := NewDB(t.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.ro.SetMaxOpenConns(1)
	ctx := context.Background()
	specs := make([]sched.TaskSpec, 20)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"true"}}
	}
	var sets []sched.SetID
	for k := 0; k < 10; k++ {
		r, err := db.Disclose(ctx, DiscloseInput{Owner: "u", Tasks: specs, Request: k%2 == 0})
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, r.Set.ID)
	}
	const n = 30
	for i := 0; i < n; i++ {
		s := sets[i%len(sets)]
		_, _, _ = db.ListTaskSets(ctx, "u", int32(5+i%7), "")
		_, _, _, _ = db.ListTasks(ctx, "u", s, TaskPage{PageSize: int32(5 + i%7)})
		_, _, _, _ = db.ListTasks(ctx, "u", s, TaskPage{PageSize: 50, States: []sched.TaskState{sched.TaskRequested}})
		_, _, _ = db.GetTasks(ctx, "u", s, []int32{int32(i % 20)})
		_, _ = db.GetTaskSet(ctx, "u", s)
		_, _, _ = db.GetTask(ctx, "u", sched.TaskRef{Set: s, Index: int32(i % 20)})
	}
	c, err := db.ro.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.QueryContext(ctx, `SELECT reprep, run, sql FROM sqlite_stmt`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			t.Skip("SQLite built without SQLITE_ENABLE_STMTVTAB: run with CGO_CFLAGS=-DSQLITE_ENABLE_STMTVTAB")
		}
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var reprep, run int
		var sql string
		if err := rows.Scan(&reprep, &run, &sql); err != nil {
			t.Fatal(err)
		}
		seen++
		if run >= n && reprep > run/10 {
			t.Errorf("planned again at %d of its %d runs: %s", reprep, run, strings.Join(strings.Fields(sql), " "))
		}
	}
	if seen < 5 {
		t.Fatalf("sqlite_stmt listed %d statements", seen)
	}
}
