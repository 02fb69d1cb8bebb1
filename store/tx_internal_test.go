package store

import (
	"context"
	"errors"
	"testing"
)

// A write whose function fails or panics leaves nothing behind and the
// next write works; a write whose context is already cancelled does not
// begin; a read sees committed rows only.
func TestWriteRollsBack(t *testing.T) {
	t.Parallel()
	db := NewDB(t.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	insert := func(tx *Tx, name string) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO migrations (name) VALUES (?)`, name)
		return err
	}
	count := func(name string) int {
		t.Helper()
		var n int
		if err := db.read(ctx, func(tx *Tx) error {
			return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations WHERE name = ?`, name).Scan(&n)
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}

	boom := errors.New("boom")
	if err := db.write(ctx, func(tx *Tx) error {
		if err := insert(tx, "failed"); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("failed write: %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		_ = db.write(ctx, func(tx *Tx) error {
			if err := insert(tx, "panicked"); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := db.write(cctx, func(tx *Tx) error { return insert(tx, "cancelled") }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled write: %v", err)
	}
	if err := db.write(ctx, func(tx *Tx) error { return insert(tx, "kept") }); err != nil {
		t.Fatalf("write after the failures: %v", err)
	}
	for name, want := range map[string]int{"failed": 0, "panicked": 0, "cancelled": 0, "kept": 1} {
		if n := count(name); n != want {
			t.Errorf("%s: %d rows, want %d", name, n, want)
		}
	}
}
