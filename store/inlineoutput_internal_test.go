package store

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"batchd/sched"
)

// undoInlineOutputs gives the database the shape it had before migration
// 0029: every output in the outputs table, the copies without their output
// columns, the migration not recorded.
func undoInlineOutputs(ctx context.Context, tx *Tx) error {
	for _, q := range []string{
		`INSERT INTO outputs_big (set_id, idx, copy_id, worker, stdout, stderr, stdout_truncated, stderr_truncated,
			exit_code, timed_out, cpu_seconds, slot_seconds, reported_slot_seconds)
			SELECT set_id, idx, id, worker, out_stdout, out_stderr, out_flags & 1, (out_flags >> 1) & 1,
			exit_code, timed_out, cpu_seconds, run_seconds, out_reported FROM copies WHERE out_stdout IS NOT NULL`,
		`DROP TRIGGER outputs_delete`,
		`DROP VIEW outputs`,
		`ALTER TABLE outputs_big RENAME TO outputs`,
		`ALTER TABLE copies DROP COLUMN out_stdout`,
		`ALTER TABLE copies DROP COLUMN out_stderr`,
		`ALTER TABLE copies DROP COLUMN out_flags`,
		`ALTER TABLE copies DROP COLUMN out_reported`,
		`DELETE FROM migrations WHERE name = 'migrations/0029_inline_outputs.sql'`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// A small output is kept in its copy's row and a big one in a row of its
// own; a database made before migration 0029, its outputs all in rows of
// their own, reads the same once the migration has run, and a retry still
// drops the output it archives.
func TestOutputsCarriedOverByInlineMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := t.TempDir() + "/batchd.db"
	db := NewDB(path)
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RegisterWorker(ctx, RegisterInput{Worker: "w", Slots: 4}); err != nil {
		t.Fatal(err)
	}
	res, err := db.Disclose(ctx, DiscloseInput{Owner: "ann", Request: true,
		Tasks: []sched.TaskSpec{{Argv: []string{"a"}}, {Argv: []string{"b"}}, {Argv: []string{"c"}}}})
	if err != nil {
		t.Fatal(err)
	}
	set := res.Set.ID
	var ds []sched.Decision
	for i := 0; i < 3; i++ {
		ds = append(ds, sched.Decision{Kind: sched.DecisionStart, Copy: sched.CopyID(i + 1), Task: sched.TaskRef{Set: set, Index: int32(i)},
			Slot: sched.SlotRef{Worker: "w", Slot: int32(i)}})
	}
	if _, err := db.ApplyDecisions(ctx, ds); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	outs, err := db.FinishCopies(ctx, []FinishInput{
		{Worker: "w", Copy: 1, RunSeconds: 1, CPUSeconds: 0.5, Stdout: []byte("small\n"), Stderr: []byte("e"), StderrTruncated: true},
		{Worker: "w", Copy: 2, RunSeconds: 1, ExitCode: 3, Stdout: big},
		{Worker: "w", Copy: 3, RunSeconds: 2, ExitCode: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	count := func(db *DB, q string) int {
		var n int
		if err := db.ro.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if rows, inline := count(db, `SELECT count(*) FROM outputs_big`), count(db, `SELECT count(*) FROM copies WHERE out_stdout IS NOT NULL`); rows != 1 || inline != 2 {
		t.Fatalf("%d outputs in rows of their own, %d in their copies' rows; want 1 (the big one), 2", rows, inline)
	}
	type read struct {
		one  [3]sched.Output
		page []TaskOutput
	}
	readAll := func(db *DB) read {
		var r read
		for i := range r.one {
			if r.one[i], err = db.GetOutput(ctx, "ann", sched.TaskRef{Set: set, Index: int32(i)}, 0, MaxOutputOffset); err != nil {
				t.Fatal(err)
			}
		}
		for from := (OutputsCursor{}); ; {
			p, err := db.GetOutputs(ctx, OutputsInput{Owner: "ann", Set: set, MaxBytes: 256 << 10, From: from})
			if err != nil {
				t.Fatal(err)
			}
			r.page = append(r.page, p.Outputs...)
			if p.Next == nil {
				break
			}
			from = *p.Next
		}
		return r
	}
	before := readAll(db)
	if o := before.one[0]; string(o.Stdout) != "small\n" || string(o.Stderr) != "e" || !o.StderrTruncated || o.StdoutTruncated || o.CPUSeconds != 0.5 {
		t.Fatalf("the small output: %+v", o)
	}
	if o := before.one[2]; len(o.Stdout) != 0 || o.ExitCode != 1 || o.Copy != 3 || o.Worker != "w" {
		t.Fatalf("the empty output: %+v", o)
	}

	if err := db.write(ctx, func(tx *Tx) error { return undoInlineOutputs(ctx, tx) }); err != nil {
		t.Fatal(err)
	}
	if n := count(db, `SELECT count(*) FROM outputs`); n != 3 {
		t.Fatalf("%d outputs in the old table, want 3", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = NewDB(path)
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	after := readAll(db)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("outputs read before the migration\n%+v\nafter it\n%+v", before, after)
	}

	// A retry archives the output and drops it, whichever row held it.
	for i := int32(0); i < 3; i++ {
		if err := db.write(ctx, func(tx *Tx) error {
			_, err := retryTask(ctx, tx, sched.TaskRef{Set: set, Index: i}, sched.RetriedByUser)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(db, `SELECT count(*) FROM outputs`); n != 0 {
		t.Errorf("%d outputs left after their tasks' retries", n)
	}
	if n := count(db, `SELECT count(*) FROM attempt_outputs`); n != 3 {
		t.Errorf("%d outputs archived, want 3", n)
	}
}
