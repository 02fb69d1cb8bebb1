package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// TestDiscloseArray: an array appended after plain tasks keeps one row of
// its own; each task reads back the array's spec with its value, and a
// copy starts with it.
func TestDiscloseArray(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := setup(t)
	first, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(2)})
	if err != nil {
		t.Fatal(err)
	}
	a, err := store.NewTaskArray(10, 20, 5, sched.TaskSpec{Argv: []string{"echo", "x"}, Env: map[string]string{"A": "b"}, EstimateSeconds: 3})
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", SetID: first.Set.ID, Array: &a, IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstIndex != 2 || res.Count != 3 || res.Set.Counts.Total != 5 {
		t.Fatalf("disclosed %+v", res)
	}
	_, tasks, _, err := db.ListTasks(ctx, "u", first.Set.ID, store.TaskPage{})
	if err != nil {
		t.Fatal(err)
	}
	for i, task := range tasks {
		want := ""
		if i >= 2 {
			want = strconv.Itoa(10 + 5*(i-2))
		}
		if got := task.Spec.Env[sched.ArrayValueEnv]; got != want || task.Spec.Env["A"] != "b" || task.Spec.Argv[0] != "echo" {
			t.Errorf("task %d: spec %+v, want value %q", i, task.Spec, want)
		}
	}
	// A replay of the key is the first answer, not a second array.
	again, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", SetID: first.Set.ID, Array: &a, IdempotencyKey: "k"})
	if err != nil || !again.Replayed || again.FirstIndex != 2 || again.Set.Counts.Total != 5 {
		t.Fatalf("replay %+v %v", again, err)
	}
	other := a
	other.First = 11
	if _, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", SetID: first.Set.ID, Array: &other, IdempotencyKey: "k"}); sched.ErrorCode(err) != sched.ECONFLICT {
		t.Fatalf("same key, other array: %v", err)
	}
	if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "w", Slots: 4}); err != nil {
		t.Fatal(err)
	}
	started, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionStart, Copy: 1,
		Task: sched.TaskRef{Set: first.Set.ID, Index: 4}, Slot: sched.SlotRef{Worker: "w"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := started[0].Spec.Env[sched.ArrayValueEnv]; got != "20" {
		t.Fatalf("started task 4 with value %q, want 20", got)
	}
	live, err := db.WorkerCopies(ctx, "w")
	if err != nil || len(live) != 1 || live[0].Spec.Env[sched.ArrayValueEnv] != "20" {
		t.Fatalf("live copies %+v %v", live, err)
	}
	// A fresh store on the same file (a restart) reads the array back.
	again2 := store.NewDB(db.Path)
	if err := again2.Open(); err != nil {
		t.Fatal(err)
	}
	defer again2.Close()
	_, tasks, _, err = again2.ListTasks(ctx, "u", first.Set.ID, store.TaskPage{})
	if err != nil || len(tasks) != 5 || tasks[3].Spec.Env[sched.ArrayValueEnv] != "15" || tasks[3].Spec.EstimateSeconds != 3 {
		t.Fatalf("after reopening: %+v %v", tasks, err)
	}
}

func TestNewTaskArray(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		first, last, step int64
		code              string
		n                 int32
	}{
		{0, 299, 0, "", 300},
		{0, 299, 7, "", 43},
		{5, 5, 1, "", 1},
		{-3, 3, 3, "", 3},
		{3, 2, 1, sched.EINVALID, 0},
		{0, 9, -1, sched.EINVALID, 0},
		{0, store.MaxTasksPerSet, 1, sched.ERESOURCEEXHAUSTED, 0},
		{-1 << 63, 1<<63 - 1, 1, sched.ERESOURCEEXHAUSTED, 0},
	} {
		a, err := store.NewTaskArray(c.first, c.last, c.step, sched.TaskSpec{})
		if got := sched.ErrorCode(err); got != c.code || (err == nil && a.Count != c.n) {
			t.Errorf("%d-%d:%d: count %d err %v, want %d %q", c.first, c.last, c.step, a.Count, err, c.n, c.code)
		}
	}
}

// TestGetOutputsPages reads a set's outputs in pages of a small budget and
// puts each task's streams back together, the unreadable task included.
func TestGetOutputsPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := setup(t)
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(6), Request: true})
	if err != nil {
		t.Fatal(err)
	}
	set := res.Set.ID
	if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "w", Slots: 8}); err != nil {
		t.Fatal(err)
	}
	want := map[int32][2]string{}
	for i := int32(0); i < 5; i++ { // task 5 stays unfinished
		start(t, db, sched.CopyID(i+1), set, i, "w")
		out := strings.Repeat(strconv.Itoa(int(i)), 10*int(i)+3)
		errs := strings.Repeat("e", int(i))
		want[i] = [2]string{out, errs}
		if _, err := db.FinishCopy(ctx, store.FinishInput{Worker: "w", Copy: sched.CopyID(i + 1), Stdout: []byte(out), Stderr: []byte(errs)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, sel := range [][]int32{nil, {4, 0, 5, 2}} {
		got := map[int32]*[2]bytes.Buffer{}
		unreadable := map[int32]string{}
		var cur store.OutputsCursor
		pages := 0
		for {
			page, err := db.GetOutputs(ctx, store.OutputsInput{Owner: "u", Set: set, Indexes: sel, MaxBytes: 16, From: cur})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			n := 0
			for _, o := range page.Outputs {
				if o.Unreadable != "" {
					unreadable[o.Index] = o.Unreadable
					continue
				}
				b := got[o.Index]
				if b == nil {
					b = &[2]bytes.Buffer{}
					got[o.Index] = b
				}
				if int64(b[0].Len()) != o.StdoutOffset || int64(b[1].Len()) != o.StderrOffset {
					t.Fatalf("task %d: piece at %d/%d after %d/%d bytes", o.Index, o.StdoutOffset, o.StderrOffset, b[0].Len(), b[1].Len())
				}
				b[0].Write(o.Output.Stdout)
				b[1].Write(o.Output.Stderr)
				n += len(o.Output.Stdout) + len(o.Output.Stderr)
			}
			if n > 16 {
				t.Fatalf("page of %d bytes, budget 16", n)
			}
			if page.Next == nil {
				break
			}
			cur = *page.Next
			if pages > 100 {
				t.Fatal("no end of pages")
			}
		}
		if pages < 5 {
			t.Errorf("%v: %d pages for 100 bytes at 16 a page", sel, pages)
		}
		if unreadable[5] == "" {
			t.Errorf("%v: unfinished task 5 not said unreadable: %v", sel, unreadable)
		}
		names := sel
		if names == nil {
			names = []int32{0, 1, 2, 3, 4}
		}
		for _, i := range names {
			if i == 5 {
				continue
			}
			b := got[i]
			if b == nil || b[0].String() != want[i][0] || b[1].String() != want[i][1] {
				t.Errorf("%v: task %d read back %v, want %q", sel, i, b, want[i])
			}
		}
	}
	// A range: tasks 2 and 3 only.
	page, err := db.GetOutputs(ctx, store.OutputsInput{Owner: "u", Set: set, First: 2, Count: 2})
	if err != nil || len(page.Outputs) != 2 || page.Outputs[0].Index != 2 || page.Outputs[1].Index != 3 || page.Next != nil ||
		string(page.Outputs[1].Output.Stdout) != want[3][0] {
		t.Fatalf("range 2+2: %+v %v", page, err)
	}
	if _, err := db.GetOutputs(ctx, store.OutputsInput{Owner: "u", Set: set, First: 6}); sched.ErrorCode(err) != sched.ENOTFOUND {
		t.Errorf("a range past the end: %v", err)
	}
	if _, err := db.GetOutputs(ctx, store.OutputsInput{Owner: "v", Set: set}); sched.ErrorCode(err) != sched.ENOTFOUND {
		t.Errorf("another owner: %v", err)
	}
	if _, err := db.GetOutputs(ctx, store.OutputsInput{Owner: "u", Set: set, Indexes: []int32{9}}); sched.ErrorCode(err) != sched.ENOTFOUND {
		t.Errorf("index past the end: %v", err)
	}
}

// TestArrayIsCompact: a 20,000-task array keeps its spec once, so the
// spec bytes stored per task are a few, where the same commands as
// separate tasks keep each whole.
func TestArrayIsCompact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := setup(t)
	const n = 20_000
	spec := sched.TaskSpec{Argv: []string{"sh", "-c", "./sim --seed $BATCH_ARRAY_VALUE --out results/$BATCH_TASK_INDEX"}}
	a, err := store.NewTaskArray(0, n-1, 1, spec)
	if err != nil {
		t.Fatal(err)
	}
	arr, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Array: &a})
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]sched.TaskSpec, n)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"sh", "-c", "./sim --seed " + strconv.Itoa(i) + " --out results/$BATCH_TASK_INDEX"}}
	}
	lines, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: specs})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := sql.Open("sqlite3", "file:"+db.Path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	perTask := func(set sched.SetID) float64 {
		var tasks, arrays int64
		if err := ro.QueryRow(`SELECT SUM(length(spec)) FROM tasks WHERE set_id = ?`, set).Scan(&tasks); err != nil {
			t.Fatal(err)
		}
		if err := ro.QueryRow(`SELECT IFNULL(SUM(length(spec)), 0) FROM task_arrays WHERE set_id = ?`, set).Scan(&arrays); err != nil {
			t.Fatal(err)
		}
		return float64(tasks+arrays) / n
	}
	a1, l1 := perTask(arr.Set.ID), perTask(lines.Set.ID)
	t.Logf("spec bytes per task: %.1f as an array, %.1f as separate tasks", a1, l1)
	if a1 > 8 || l1 < 10*a1 {
		t.Errorf("spec bytes per task: %.1f as an array, %.1f as separate tasks; want at most 8, and a tenth of the other", a1, l1)
	}
}
