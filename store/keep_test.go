package store_test

import (
	"context"
	"strings"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// kept is a worker's list of files: name=content kept, name!reason not.
func kept(entries ...string) []store.KeptContent {
	var out []store.KeptContent
	for _, e := range entries {
		if name, content, ok := strings.Cut(e, "="); ok {
			out = append(out, store.KeptContent{File: sched.KeptFile{Path: name, Size: int64(len(content)), Mode: 0o644}, Content: []byte(content)})
		} else {
			name, why, _ := strings.Cut(e, "!")
			out = append(out, store.KeptContent{File: sched.KeptFile{Path: name, Size: 7, NotKept: why}})
		}
	}
	return out
}

// runKept discloses a task per list of files, requests them if asked, and
// has copies from first win each, exiting with exit, with its files.
func runKept(t *testing.T, db *store.DB, request bool, first sched.CopyID, exit int32, files ...[]store.KeptContent) sched.SetID {
	t.Helper()
	ctx := context.Background()
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(len(files))})
	if err != nil {
		t.Fatal(err)
	}
	if request {
		if _, err := db.Request(ctx, store.RequestInput{Owner: "u", SetID: res.Set.ID, All: true}); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range files {
		id := first + sched.CopyID(i)
		start(t, db, id, res.Set.ID, int32(i), "a")
		if r, err := db.FinishCopy(ctx, store.FinishInput{Worker: "a", Copy: id, RunSeconds: 1, ExitCode: exit, Kept: f}); err != nil || !r.Won {
			t.Fatalf("finish copy %d: won %v, %v", id, r.Won, err)
		}
	}
	return res.Set.ID
}

func TestKeptFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	run := func(t *testing.T, db *store.DB, request bool, first sched.CopyID, files ...[]store.KeptContent) sched.SetID {
		t.Helper()
		return runKept(t, db, request, first, 0, files...)
	}
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		db, _ := setup(t)
		set := runKept(t, db, true, 1, 3, kept("out/a.csv=1,2\n", "link!a symlink", "result.txt=data\n"))
		ref := sched.TaskRef{Set: set, Index: 0}
		out, err := db.GetOutput(ctx, "u", ref, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := []sched.KeptFile{{Path: "link", Size: 7, NotKept: "a symlink"}, {Path: "out/a.csv", Size: 4, Mode: 0o644}, {Path: "result.txt", Size: 5, Mode: 0o644}}
		if len(out.Files) != len(want) {
			t.Fatalf("files %+v, want %+v", out.Files, want)
		}
		for i := range want {
			if out.Files[i] != want[i] {
				t.Errorf("file %d: %+v, want %+v", i, out.Files[i], want[i])
			}
		}
		f, err := db.GetKeptFile(ctx, "u", ref, 0, "result.txt", 1, 3)
		if err != nil || string(f.Content) != "ata" || f.File.Size != 5 || f.Attempt != 1 {
			t.Errorf("GetKeptFile = %+v, %v; want bytes 1-3 of data", f, err)
		}
		page, err := db.GetOutputs(ctx, store.OutputsInput{Owner: "u", Set: set})
		if err != nil || len(page.Outputs) != 1 || len(page.Outputs[0].Output.Files) != 3 {
			t.Errorf("GetOutputs lists %+v, %v; want the 3 files", page.Outputs, err)
		}
		// The attempt's files stay with it when the task is retried.
		if _, err := db.Retry(ctx, store.RetryInput{Owner: "u", SetID: set, Indexes: []int32{0}}); err != nil {
			t.Fatal(err)
		}
		if f, err := db.GetKeptFile(ctx, "u", ref, 1, "result.txt", 0, 0); err != nil || string(f.Content) != "data\n" {
			t.Errorf("after a retry, attempt 1's file: %+v, %v", f, err)
		}
	})
	t.Run("ErrNotKept", func(t *testing.T) {
		t.Parallel()
		db, _ := setup(t)
		set := run(t, db, true, 1, kept("link!a symlink"))
		_, err := db.GetKeptFile(ctx, "u", sched.TaskRef{Set: set}, 0, "link", 0, 0)
		code(t, err, sched.EFAILEDPRECONDITION)
		_, err = db.GetKeptFile(ctx, "u", sched.TaskRef{Set: set}, 0, "nope", 0, 0)
		code(t, err, sched.ENOTFOUND)
	})
	t.Run("ErrNotRequested", func(t *testing.T) {
		t.Parallel()
		db, _ := setup(t)
		set := run(t, db, false, 1, kept("r=x"))
		_, err := db.GetKeptFile(ctx, "u", sched.TaskRef{Set: set}, 0, "r", 0, 0)
		code(t, err, sched.EFAILEDPRECONDITION)
	})
	t.Run("ErrOtherOwner", func(t *testing.T) {
		t.Parallel()
		db, _ := setup(t)
		set := run(t, db, true, 1, kept("r=x"))
		_, err := db.GetKeptFile(ctx, "v", sched.TaskRef{Set: set}, 0, "r", 0, 0)
		code(t, err, sched.ENOTFOUND)
	})
	t.Run("ErrUserCap", func(t *testing.T) {
		t.Parallel()
		db, _ := setup(t)
		db.KeepUserCap = 10
		set := run(t, db, true, 1, kept("a=123456", "b=123"), kept("c=1234", "d=1"))
		o0, _ := db.GetOutput(ctx, "u", sched.TaskRef{Set: set, Index: 0}, 0, 0)
		o1, _ := db.GetOutput(ctx, "u", sched.TaskRef{Set: set, Index: 1}, 0, 0)
		if !o0.Files[0].Kept() || !o0.Files[1].Kept() {
			t.Errorf("task 0, within the cap: %+v", o0.Files)
		}
		if o1.Files[0].Kept() || !strings.Contains(o1.Files[0].NotKept, "keep-max-user") || o1.Files[0].Size != 4 {
			t.Errorf("task 1's c, over the user's cap: %+v", o1.Files[0])
		}
		if !o1.Files[1].Kept() {
			t.Errorf("task 1's d, which still fits: %+v", o1.Files[1])
		}
	})
	t.Run("RetriedExecutedDropsFiles", func(t *testing.T) {
		t.Parallel()
		db, _ := setup(t)
		db.KeepUserCap = 10
		set := runKept(t, db, false, 1, 3, kept("a=1234567890"))
		if _, err := db.Retry(ctx, store.RetryInput{Owner: "u", SetID: set, Indexes: []int32{0}}); err != nil {
			t.Fatal(err)
		}
		// The unreadable attempt's bytes no longer count against the cap.
		set2 := run(t, db, true, 2, kept("b=1234567890"))
		o, _ := db.GetOutput(ctx, "u", sched.TaskRef{Set: set2}, 0, 0)
		if len(o.Files) != 1 || !o.Files[0].Kept() {
			t.Errorf("after the retry: %+v, want b kept", o.Files)
		}
	})
	t.Run("CanceledExecutedDropsFiles", func(t *testing.T) {
		t.Parallel()
		db, _ := setup(t)
		db.KeepUserCap = 10
		set := run(t, db, false, 1, kept("a=1234567890"))
		if _, err := db.Cancel(ctx, store.CancelInput{Owner: "u", SetID: set, All: true}); err != nil {
			t.Fatal(err)
		}
		// The canceled result's bytes no longer count against the cap.
		set2 := run(t, db, true, 2, kept("b=1234567890"))
		o, _ := db.GetOutput(ctx, "u", sched.TaskRef{Set: set2}, 0, 0)
		if len(o.Files) != 1 || !o.Files[0].Kept() {
			t.Errorf("after the cancel: %+v, want b kept", o.Files)
		}
	})
}
