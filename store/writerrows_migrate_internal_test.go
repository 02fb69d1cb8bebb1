package store

import (
	"bytes"
	"context"
	"database/sql"
	"strings"
	"testing"

	"batchd/sched"
)

// TestOutputsCarriedOverByMigration: a database whose outputs table has
// the shape before migration 0028 (a rowid table) keeps its outputs, big
// and small, once the server opens it again, and the table is then
// WITHOUT ROWID.
func TestOutputsCarriedOverByMigration(t *testing.T) {
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
	res, err := db.Disclose(ctx, DiscloseInput{Owner: "ann", Request: true, Tasks: []sched.TaskSpec{{Argv: []string{"a"}}, {Argv: []string{"b"}}}})
	if err != nil {
		t.Fatal(err)
	}
	set := res.Set.ID
	var ds []sched.Decision
	for i := 0; i < 2; i++ {
		ds = append(ds, sched.Decision{Kind: sched.DecisionStart, Copy: sched.CopyID(i + 1), Task: sched.TaskRef{Set: set, Index: int32(i)},
			Slot: sched.SlotRef{Worker: "w", Slot: int32(i)}})
	}
	if _, err := db.ApplyDecisions(ctx, ds); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB: overflow pages
	outs, err := db.FinishCopies(ctx, []FinishInput{
		{Worker: "w", Copy: 1, RunSeconds: 1, Stdout: []byte("small\n"), Stderr: []byte("e")},
		{Worker: "w", Copy: 2, RunSeconds: 1, ExitCode: 3, Stdout: big},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	read := func(db *DB) [2]sched.Output {
		var got [2]sched.Output
		for i := range got {
			if got[i], err = db.GetOutput(ctx, "ann", sched.TaskRef{Set: set, Index: int32(i)}, 0, MaxOutputOffset); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	before := read(db)
	if string(before[0].Stdout) != "small\n" || !bytes.Equal(before[1].Stdout, big) {
		t.Fatalf("outputs before: %q, %d bytes", before[0].Stdout, len(before[1].Stdout))
	}

	// The table as it was before 0028 (and 0029), with the same rows.
	if err := db.write(ctx, func(tx *Tx) error {
		if err := undoInlineOutputs(ctx, tx); err != nil {
			return err
		}
		for _, q := range []string{
			`CREATE TABLE outputs_old (set_id INTEGER NOT NULL, idx INTEGER NOT NULL, copy_id INTEGER NOT NULL REFERENCES copies (id),
				worker TEXT NOT NULL, stdout BLOB NOT NULL, stderr BLOB NOT NULL, stdout_truncated INTEGER NOT NULL DEFAULT 0,
				stderr_truncated INTEGER NOT NULL DEFAULT 0, exit_code INTEGER NOT NULL, timed_out INTEGER NOT NULL DEFAULT 0,
				cpu_seconds REAL NOT NULL DEFAULT 0, slot_seconds REAL NOT NULL DEFAULT 0, reported_slot_seconds REAL,
				PRIMARY KEY (set_id, idx), FOREIGN KEY (set_id, idx) REFERENCES tasks (set_id, idx))`,
			`INSERT INTO outputs_old SELECT set_id, idx, copy_id, worker, stdout, stderr, stdout_truncated, stderr_truncated,
				exit_code, timed_out, cpu_seconds, slot_seconds, reported_slot_seconds FROM outputs`,
			`DROP TABLE outputs`,
			`ALTER TABLE outputs_old RENAME TO outputs`,
			`DELETE FROM migrations WHERE name = 'migrations/0028_writer_rows.sql'`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := outputsTableSQL(t, db.ro, "outputs"); strings.Contains(got, "WITHOUT ROWID") {
		t.Fatalf("the old table is WITHOUT ROWID: %s", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = NewDB(path)
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// 0029 renamed the table outputs_big.
	if got := outputsTableSQL(t, db.ro, "outputs_big"); !strings.Contains(got, "WITHOUT ROWID") {
		t.Fatalf("outputs after the migration: %s", got)
	}
	after := read(db)
	for i := range after {
		b, a := before[i], after[i]
		if !bytes.Equal(a.Stdout, b.Stdout) || !bytes.Equal(a.Stderr, b.Stderr) || a.ExitCode != b.ExitCode || a.Copy != b.Copy ||
			a.Worker != b.Worker || a.SlotSeconds != b.SlotSeconds || a.StdoutSize != b.StdoutSize {
			t.Errorf("output %d: %+v after the migration, %+v before", i, a, b)
		}
	}
}

func outputsTableSQL(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var s string
	if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}
