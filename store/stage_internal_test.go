package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"batchd/sched"
)

// stageDB opens a store whose staged discloses go in chunks of rows.
func stageDB(t *testing.T, path string, rows int) *DB {
	t.Helper()
	db := NewDB(path)
	db.StageRows = rows
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func stageSpecs(n int) []sched.TaskSpec {
	out := make([]sched.TaskSpec, n)
	for i := range out {
		out[i] = sched.TaskSpec{Argv: []string{"true"}, EstimateSeconds: float64(i)}
	}
	return out
}

// rowsOf counts the task rows of a set and whether its row exists, seen
// from outside every lookup.
func rowsOf(t *testing.T, db *DB, id sched.SetID) (tasks, sets int) {
	t.Helper()
	ctx := context.Background()
	if err := db.read(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM tasks WHERE set_id = ?), (SELECT COUNT(*) FROM task_sets WHERE id = ?)`, id, id).
			Scan(&tasks, &sets)
	}); err != nil {
		t.Fatal(err)
	}
	return tasks, sets
}

// A staged disclose goes in chunk by chunk, each its own transaction; the
// set is invisible (get, list, owner, user load, the scheduler's reload)
// until its commit, which shows it whole.
func TestStagedDisclose(t *testing.T) {
	t.Parallel()
	db := stageDB(t, filepath.Join(t.TempDir(), "batchd.db"), 10)
	ctx := context.Background()
	in := DiscloseInput{Owner: "ann", Name: "big", Tasks: stageSpecs(25), Request: true, Labels: []Label{{Key: "k", Value: "v"}}}
	if !db.Chunked(in) || db.Chunked(DiscloseInput{Owner: "ann", SetID: 1, Tasks: stageSpecs(25)}) || db.Chunked(DiscloseInput{Owner: "ann", Tasks: stageSpecs(10)}) {
		t.Fatal("Chunked: want a new set of more than one chunk only")
	}
	st, _, err := db.BeginStaged(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	invisible := func(when string) {
		t.Helper()
		if _, err := db.GetTaskSet(ctx, "ann", st.Set()); sched.ErrorCode(err) != sched.ENOTFOUND {
			t.Errorf("%s: get: %v, want not found", when, err)
		}
		if _, err := db.SetOwner(ctx, st.Set()); sched.ErrorCode(err) != sched.ENOTFOUND {
			t.Errorf("%s: owner: %v, want not found", when, err)
		}
		for _, f := range []SetFilter{{Owner: "ann"}, {Owner: AllOwners}, {Owner: "ann", NameGlob: "big*"}, {Owner: "ann", Labels: []Label{{Key: "k", Value: "v"}}}} {
			if sets, _, err := db.ListSets(ctx, f); err != nil || len(sets) != 0 {
				t.Errorf("%s: list %+v: %d sets, %v; want none", when, f, len(sets), err)
			}
		}
		if l, err := db.GetUserLoad(ctx, "ann"); err != nil || l != (UserLoad{}) {
			t.Errorf("%s: user load %+v, %v; want none", when, l, err)
		}
		if snap, err := db.Load(ctx); err != nil || len(snap.Sets) != 0 {
			t.Errorf("%s: reload: %d sets, %v; want none", when, len(snap.Sets), err)
		}
	}
	var chunks []int
	db.StageChunkFunc = func(set sched.SetID, chunk int) {
		if set != st.Set() {
			t.Errorf("chunk of set %d, want %d", set, st.Set())
		}
		if chunk > 0 {
			if n, _ := rowsOf(t, db, set); n != chunk*10 {
				t.Errorf("before chunk %d: %d rows stored, want %d", chunk, n, chunk*10)
			}
		}
		invisible("between chunks")
		chunks = append(chunks, chunk)
	}
	if err := db.StageTasks(ctx, st); err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2}; !slices.Equal(chunks, want) {
		t.Errorf("chunks %v, want %v", chunks, want)
	}
	invisible("staged")
	res, err := db.CommitStaged(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Replayed || res.FirstIndex != 0 || res.Count != 25 || res.Set.Counts.Total != 25 || res.Set.Counts.Requested != 25 {
		t.Errorf("commit: %+v", res)
	}
	set, tasks, _, err := db.ListTasks(ctx, "ann", st.Set(), TaskPage{PageSize: 100})
	if err != nil || set.Name != "big" || len(tasks) != 25 || tasks[24].Spec.EstimateSeconds != 24 || tasks[24].State != sched.TaskRequested {
		t.Fatalf("after commit: set %+v, %d tasks, %v", set, len(tasks), err)
	}
	if sets, _, err := db.ListSets(ctx, SetFilter{Owner: "ann", Labels: []Label{{Key: "k", Value: "v"}}}); err != nil || len(sets) != 1 {
		t.Errorf("list by label after commit: %d sets, %v; want 1", len(sets), err)
	}
	if snap, err := db.Load(ctx); err != nil || len(snap.Sets) != 1 || len(snap.Sets[0].Tasks) != 25 {
		t.Errorf("reload after commit: %+v, %v", snap.Sets, err)
	}
	if err := db.DropStaged(ctx, st.Set()); err != nil {
		t.Fatal(err)
	}
	if n, sets := rowsOf(t, db, st.Set()); n != 25 || sets != 1 {
		t.Errorf("DropStaged removed a visible set: %d rows, %d sets left", n, sets)
	}
}

// A server that stops between two chunks leaves a staged set that no
// lookup sees after a restart, and the restart's DropStagedLeftovers
// removes it and everything stored with it.
func TestStagedLeftovers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "batchd.db")
	db := stageDB(t, path, 10)
	ctx, cancel := context.WithCancel(context.Background())
	st, _, err := db.BeginStaged(ctx, DiscloseInput{Owner: "ann", Name: "half", Array: &TaskArray{Count: 30, Step: 1, Spec: sched.TaskSpec{Argv: []string{"true"}}},
		Labels: []Label{{Key: "k", Value: "v"}}})
	if err != nil {
		t.Fatal(err)
	}
	db.StageChunkFunc = func(_ sched.SetID, chunk int) {
		if chunk == 2 {
			cancel() // the server stops here
		}
	}
	if err := db.StageTasks(ctx, st); err == nil {
		t.Fatal("staging went on after its context ended")
	}
	if n, _ := rowsOf(t, db, st.Set()); n != 20 {
		t.Fatalf("%d rows staged, want 20", n)
	}
	db.Close()

	db = stageDB(t, path, 10)
	bg := context.Background()
	if _, err := db.GetTaskSet(bg, "ann", st.Set()); sched.ErrorCode(err) != sched.ENOTFOUND {
		t.Errorf("get after restart: %v, want not found", err)
	}
	if sets, _, err := db.ListSets(bg, SetFilter{Owner: AllOwners}); err != nil || len(sets) != 0 {
		t.Errorf("list after restart: %d sets, %v; want none", len(sets), err)
	}
	if n, err := db.DropStagedLeftovers(bg); err != nil || n != 1 {
		t.Fatalf("leftovers: %d, %v; want 1", n, err)
	}
	if n, sets := rowsOf(t, db, st.Set()); n != 0 || sets != 0 {
		t.Errorf("after the clean-up: %d task rows, %d set rows; want none", n, sets)
	}
	var left int
	if err := db.read(bg, func(tx *Tx) error {
		return tx.QueryRowContext(bg, `SELECT (SELECT COUNT(*) FROM task_arrays) + (SELECT COUNT(*) FROM set_labels) + (SELECT COUNT(*) FROM set_name_grams)`).Scan(&left)
	}); err != nil || left != 0 {
		t.Errorf("after the clean-up: %d array, label and name rows, %v; want none", left, err)
	}
	if n, err := db.DropStagedLeftovers(bg); err != nil || n != 0 {
		t.Errorf("second clean-up: %d, %v; want 0", n, err)
	}
	// The next set is disclosed as usual.
	if res, err := db.Disclose(bg, DiscloseInput{Owner: "ann", Tasks: stageSpecs(3)}); err != nil || res.Set.Counts.Total != 3 {
		t.Errorf("disclose after the clean-up: %+v, %v", res, err)
	}
}

// Two staged discloses with one idempotency key: the second to commit
// answers with the first's set, and its own staged set is dropped.
func TestStagedReplay(t *testing.T) {
	t.Parallel()
	db := stageDB(t, filepath.Join(t.TempDir(), "batchd.db"), 10)
	ctx := context.Background()
	in := DiscloseInput{Owner: "ann", Tasks: stageSpecs(15), IdempotencyKey: "k1"}
	a, _, err := db.BeginStaged(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := db.BeginStaged(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Staged{a, b} {
		if err := db.StageTasks(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	first, err := db.CommitStaged(ctx, a)
	if err != nil || first.Replayed {
		t.Fatalf("first commit: %+v, %v", first, err)
	}
	second, err := db.CommitStaged(ctx, b)
	if err != nil || !second.Replayed || second.Set.ID != a.Set() || second.Count != 15 {
		t.Fatalf("second commit: %+v, %v; want a replay of set %d", second, err, a.Set())
	}
	if err := db.DropStaged(ctx, b.Set()); err != nil {
		t.Fatal(err)
	}
	if n, sets := rowsOf(t, db, b.Set()); n != 0 || sets != 0 {
		t.Errorf("the twin's staged set: %d rows, %d sets left", n, sets)
	}
	// A third call is answered before it stages anything.
	if st, res, err := db.BeginStaged(ctx, in); err != nil || st != nil || !res.Replayed || res.Set.ID != a.Set() {
		t.Errorf("third call: %v, %+v, %v; want a replay", st, res, err)
	}
}
