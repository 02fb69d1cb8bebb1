package server_test

import (
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// A request is stamped when its write begins; the scheduler hears of it,
// and starts its tasks, once the write has committed. The trace records
// when it was heard, so that a replay starts the task when this server
// could: with a clock that moves between readings, as a real one does
// while a write runs, the heard time is after the stamp and is the start
// decision's. A request heard when no slot was free records nothing (its
// stamp will do), and neither does a request of tasks already requested.
func TestTraceRecordsWhenARequestWasHeard(t *testing.T) {
	t.Parallel()
	dir, clk := t.TempDir(), newClock()
	clk.step = 7 * time.Millisecond
	b := setup(t, options{dir: dir, clock: clk})
	w, _ := b.worker(t, "w1", 1)
	// A's task takes the free slot as disclosed work; B's waits behind it.
	a := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})).TaskSet
	w.start()
	bs := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})).TaskSet
	// Requested, B's task goes ahead of A's: A's copy is suspended and B's
	// starts, when the scheduler hears of the request.
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: bs.Id, All: true}))
	if m := w.next(); m.GetSuspend() == 0 {
		t.Fatalf("got %v, want A's copy suspended", m)
	}
	w.start()
	// Disclosed and requested at once while B's task holds the slot: heard,
	// it starts nothing.
	c := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	b.close()

	db := store.NewDB(filepath.Join(dir, "batchd.db"))
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tr, err := db.ExportTrace(ctx(t), time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	tasks := map[sched.SetID]sched.TraceTask{}
	for _, s := range tr.Sets {
		tasks[s.ID] = s.Tasks[0]
	}
	tk := tasks[sched.SetID(bs.Id)]
	if tk.HeardAt <= tk.RequestedAt {
		t.Fatalf("requested at %.3f, heard at %.3f: want it heard after its stamp", tk.RequestedAt, tk.HeardAt)
	}
	// The scheduler decided when it heard: B's copy started then.
	if started := copyStart(t, dir, bs.Id); math.Abs(tk.HeardAt-started) > 1e-6 {
		t.Errorf("heard at %.3f, its copy started at %.3f: want the same moment", tk.HeardAt, started)
	}
	if ta := tasks[sched.SetID(a.Id)]; ta.HeardAt != 0 {
		t.Errorf("A's task, never requested, has heard time %.3f", ta.HeardAt)
	}
	if tc := tasks[sched.SetID(c.Id)]; tc.HeardAt != 0 || tc.RequestedAt == 0 {
		t.Errorf("C's task, requested (at %.3f) when no slot was free, has heard time %.3f, want none", tc.RequestedAt, tc.HeardAt)
	}
}

// copyStart is the recorded start (Unix seconds) of the first copy of the
// set's task 0.
func copyStart(t *testing.T, dir string, set int64) float64 {
	t.Helper()
	db, err := sql.Open("sqlite3_batchd", fmt.Sprintf("file:%s?mode=ro", filepath.Join(dir, "batchd.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var at int64
	if err := db.QueryRow(`SELECT MIN(started_at) FROM copies WHERE set_id = ? AND idx = 0`, set).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return float64(at) / 1e9
}
