package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"batchd/sched"
	"batchd/store"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// setup opens a store in a temp dir with a clock the test moves.
func setup(t *testing.T) (*store.DB, *time.Time) {
	t.Helper()
	now := t0
	db := store.NewDB(filepath.Join(t.TempDir(), "batchd.db"))
	db.Now = func() time.Time { return now }
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, &now
}

func code(t *testing.T, err error, want string) {
	t.Helper()
	if got := sched.ErrorCode(err); got != want {
		t.Fatalf("error %v: code %q, want %q", err, got, want)
	}
}

func echo(n int) []sched.TaskSpec {
	out := make([]sched.TaskSpec, n)
	for i := range out {
		out[i] = sched.TaskSpec{Argv: []string{"echo", "x"}, Env: map[string]string{"A": "b"}, EstimateSeconds: 2}
	}
	return out
}

func start(t *testing.T, db *store.DB, id sched.CopyID, set sched.SetID, idx int32, w sched.WorkerID) {
	t.Helper()
	started, err := db.ApplyDecisions(context.Background(), []sched.Decision{{Kind: sched.DecisionStart, Copy: id,
		Task: sched.TaskRef{Set: set, Index: idx}, Slot: sched.SlotRef{Worker: w}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(started) != 1 || started[0].Owner != "u" || started[0].Spec.Argv[0] != "echo" || started[0].Spec.Env["A"] != "b" {
		t.Fatalf("started: %+v", started)
	}
}

func TestDisclose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		db, _ := setup(t)
		res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "n", Tasks: echo(3), IdempotencyKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Replayed || !res.Created || res.Count != 3 || res.Set.Counts.Disclosed != 3 || !res.Set.CreatedAt.Equal(t0) {
			t.Fatalf("%+v", res)
		}
		again, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "n", Tasks: echo(3), IdempotencyKey: "k"})
		if err != nil || !again.Replayed || again.Set.ID != res.Set.ID {
			t.Fatalf("replay %+v %v", again, err)
		}
		// The same key of another owner is another call.
		other, err := db.Disclose(ctx, store.DiscloseInput{Owner: "v", Tasks: echo(1), IdempotencyKey: "k"})
		if err != nil || other.Replayed || other.Set.ID == res.Set.ID {
			t.Fatalf("other owner %+v %v", other, err)
		}
		_, tasks, _, err := db.ListTasks(ctx, "u", res.Set.ID, store.TaskPage{})
		if err != nil || len(tasks) != 3 || !tasks[2].DisclosedAt.Equal(t0) || tasks[2].Spec.EstimateSeconds != 2 {
			t.Fatalf("tasks %+v %v", tasks, err)
		}
	})
	t.Run("ErrNoTasks", func(t *testing.T) {
		db, _ := setup(t)
		_, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u"})
		code(t, err, sched.EINVALID)
	})
	t.Run("ErrOtherOwner", func(t *testing.T) {
		db, _ := setup(t)
		res, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1)})
		_, err := db.Disclose(ctx, store.DiscloseInput{Owner: "v", SetID: res.Set.ID, Tasks: echo(1)})
		code(t, err, sched.ENOTFOUND)
		_, err = db.GetTaskSet(ctx, "v", res.Set.ID)
		code(t, err, sched.ENOTFOUND)
	})
}

// Two copies of one requested task finish: the first wins and is billed,
// the second is discarded; a replay gets the first answer; the ledger has
// one line and refuses edits.
func TestBillingExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	res, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: echo(1), Request: true})
	set := res.Set.ID
	start(t, db, 1, set, 0, "a")
	start(t, db, 2, set, 0, "b")
	*now = now.Add(5 * time.Second)
	f1, err := db.FinishCopy(ctx, store.FinishInput{Worker: "a", Copy: 1, Stdout: []byte("one"), CPUSeconds: 1, RunSeconds: 5})
	if err != nil || !f1.Won || f1.Bill == nil || f1.Task.State != sched.TaskFinished || f1.Task.VisibleResponseSeconds != 5 {
		t.Fatalf("first: %+v %v", f1, err)
	}
	// The scheduler kills the loser; then it reports.
	if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionKill, Copy: 2}}); err != nil {
		t.Fatal(err)
	}
	f2, err := db.FinishCopy(ctx, store.FinishInput{Worker: "b", Copy: 2, Killed: true, RunSeconds: 5})
	if err != nil || f2.Won || f2.WasLive || f2.Bill != nil {
		t.Fatalf("second: %+v %v", f2, err)
	}
	replay, err := db.FinishCopy(ctx, store.FinishInput{Worker: "a", Copy: 1})
	if err != nil || !replay.Won || !replay.Replayed || replay.Bill != nil {
		t.Fatalf("replay: %+v %v", replay, err)
	}
	lines, tot, _, err := db.GetBill(ctx, store.BillInput{Owner: "u", IncludeLines: true})
	if err != nil || len(lines) != 1 || tot.BilledSlotSeconds != 5 || tot.Free.SpeculativeLostSlotSeconds != 5 || !lines[0].BilledAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("bill %+v %+v %v", lines, tot, err)
	}
	out, err := db.GetOutput(ctx, "u", sched.TaskRef{Set: set}, 0, 0)
	if err != nil || string(out.Stdout) != "one" || out.Copy != 1 {
		t.Fatalf("output %+v %v", out, err)
	}
	// The ledger is append-only, whatever SQL runs against it.
	raw, err := sql.Open("sqlite3", db.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE bill_lines SET slot_seconds = 0`); err == nil {
		t.Fatal("UPDATE of the ledger succeeded")
	}
	if _, err := raw.Exec(`DELETE FROM bill_lines`); err == nil {
		t.Fatal("DELETE from the ledger succeeded")
	}
	if _, err := raw.Exec(`INSERT INTO bill_lines (owner, set_id, idx, slot_seconds, cpu_seconds, billed_at, reason) VALUES ('u', ?, 0, 1, 1, 1, 'finished')`, set); err == nil {
		t.Fatal("a second line for one task was accepted")
	}
}

func TestFinishErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := setup(t)
	res, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1)})
	start(t, db, 7, res.Set.ID, 0, "a")
	t.Run("ErrUnknownCopy", func(t *testing.T) {
		_, err := db.FinishCopy(ctx, store.FinishInput{Worker: "a", Copy: 8})
		code(t, err, sched.EFAILEDPRECONDITION)
	})
	t.Run("ErrOtherWorker", func(t *testing.T) {
		_, err := db.FinishCopy(ctx, store.FinishInput{Worker: "b", Copy: 7})
		code(t, err, sched.EPERMISSION)
	})
	t.Run("ErrStartUnknownTask", func(t *testing.T) {
		_, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionStart, Copy: 9, Task: sched.TaskRef{Set: res.Set.ID, Index: 5}, Slot: sched.SlotRef{Worker: "a"}}})
		if err == nil {
			t.Fatal("start of an unknown task recorded")
		}
	})
}

// Reopening the file gives the same state, and Load returns what the
// scheduler needs.
func TestReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "a", Slots: 2, CanSuspend: true}); err != nil {
		t.Fatal(err)
	}
	res, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(4)})
	set := res.Set.ID
	if _, err := db.Request(ctx, store.RequestInput{Owner: "u", SetID: set, Indexes: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Cancel(ctx, store.CancelInput{Owner: "u", SetID: set, Indexes: []int32{3}}); err != nil {
		t.Fatal(err)
	}
	start(t, db, 40, set, 0, "a")
	*now = now.Add(3 * time.Second)
	if _, err := db.FinishCopy(ctx, store.FinishInput{Worker: "a", Copy: 40, RunSeconds: 3}); err != nil {
		t.Fatal(err)
	}
	start(t, db, 41, set, 1, "a")
	db.Close()
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	snap, err := db.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.MaxCopyID != 41 || len(snap.Workers) != 1 || snap.Workers[0].Slots != 2 || len(snap.Copies) != 1 || snap.Copies[0].Slot.Worker != "a" {
		t.Fatalf("snapshot %+v", snap)
	}
	if len(snap.Sets) != 1 || len(snap.Sets[0].Tasks) != 3 || snap.Sets[0].Tasks[1].State != sched.TaskRequested || snap.Sets[0].Tasks[1].RequestedAt == 0 {
		t.Fatalf("sets %+v", snap.Sets)
	}
	if snap.Sets[0].Tasks[0].State != sched.TaskExecuted {
		t.Fatalf("task 0: %+v", snap.Sets[0].Tasks[0])
	}
	if len(snap.Durations) != 1 || snap.Durations[0] != (store.Duration{Set: set, Owner: "u", Seconds: 3}) {
		t.Fatalf("durations %+v", snap.Durations)
	}
	// The worker comes back without the copy: lost.
	reg, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "a", Slots: 2})
	if err != nil || len(reg.Lost) != 1 || reg.Lost[0].ID != 41 {
		t.Fatalf("register %+v %v", reg, err)
	}
}

// TestLoadCensoredDurations checks that a restart replays the copies that
// lost a race as censored run times right after their winner, so β is
// fitted from the same samples as before the restart.
func TestLoadCensoredDurations(t *testing.T) {
	db, now := setup(t)
	ctx := context.Background()
	if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "a", Slots: 2}); err != nil {
		t.Fatal(err)
	}
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(2)})
	if err != nil {
		t.Fatal(err)
	}
	set := res.Set.ID
	start(t, db, 1, set, 0, "a") // the original, at t0
	*now = now.Add(4 * time.Second)
	start(t, db, 2, set, 0, "a") // a speculative copy, at t0+4s
	*now = now.Add(2 * time.Second)
	if _, err := db.FinishCopy(ctx, store.FinishInput{Worker: "a", Copy: 2, RunSeconds: 2}); err != nil {
		t.Fatal(err)
	}
	// The loser is killed by the next decision, a moment later.
	*now = now.Add(time.Second)
	if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionKill, Copy: 1, Task: sched.TaskRef{Set: set}}}); err != nil {
		t.Fatal(err)
	}
	// A copy killed for another reason before any copy of its task won is
	// not a censored sample of that race.
	start(t, db, 3, set, 1, "a")
	if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionKill, Copy: 3, Task: sched.TaskRef{Set: set, Index: 1}}}); err != nil {
		t.Fatal(err)
	}
	snap, err := db.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Duration{{Set: set, Owner: "u", Seconds: 2}, {Set: set, Owner: "u", Seconds: 6, Censored: true}}
	if len(snap.Durations) != len(want) {
		t.Fatalf("durations %+v, want %+v", snap.Durations, want)
	}
	for i := range want {
		if snap.Durations[i] != want[i] {
			t.Fatalf("durations %+v, want %+v", snap.Durations, want)
		}
	}
}

// TestReadsDoNotWaitForWriters holds the write lock from another
// connection (as a long disclose does) and reads through the store: reads
// must see the last committed snapshot instead of queueing for the lock.
func TestReadsDoNotWaitForWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := setup(t)
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(3)})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", "file:"+db.Path+"?_busy_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `UPDATE task_sets SET name = 'uncommitted' WHERE id = ?`, res.Set.ID); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, `ROLLBACK`)
	// With the write lock held elsewhere, a read that queued for it would
	// fail with EUNAVAILABLE after the busy timeout.
	set, err := db.GetTaskSet(ctx, "u", res.Set.ID)
	if err != nil {
		t.Fatalf("read while another connection writes: %v", err)
	}
	if got, want := set.Counts.Total, int64(3); got != want || set.Name != "" {
		t.Fatalf("read %d tasks named %q, want %d tasks and the committed name", got, set.Name, want)
	}
	if _, _, _, err := db.ListTasks(ctx, "u", res.Set.ID, store.TaskPage{}); err != nil {
		t.Fatalf("list tasks while another connection writes: %v", err)
	}
}
