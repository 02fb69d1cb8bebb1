package store

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// benchLedger fills db with a ledger of n lines the way a soak writes
// one: sets of 200 requested tasks, nine in ten of owner u and the rest
// of v, each task finished by one winning copy and billed, one task in
// ten with a speculative copy killed (free work), the lines spread
// evenly over ten days. The running totals are then built as migration
// 0034 builds them.
func benchLedger(b testing.TB, db *DB, n int) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	step := int64(10*24*time.Hour) / int64(n)
	mig, err := migrationFS.ReadFile("migrations/0034_bill_totals.sql")
	if err != nil {
		b.Fatal(err)
	}
	var build []string
	for _, q := range strings.Split(stripComments(string(mig)), ";\n") {
		if q = strings.TrimSpace(q); strings.HasPrefix(q, "INSERT") {
			build = append(build, q)
		}
	}
	if err := db.write(ctx, func(tx *Tx) error {
		for _, q := range append([]string{
			`UPDATE count_pause SET paused = 1`,
			`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?1 / 200)
				INSERT INTO task_sets (id, owner, name, created_at, ntasks) SELECT i, IIF(i % 10 = 0, 'v', 'u'), 'set' || i, ?2, 200 FROM s`,
			`WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ?1 - 1)
				INSERT INTO tasks (set_id, idx, spec, state, disclosed_at, requested_at, executed_at, finished_at, win_copy)
				SELECT 1 + i / 200, i % 200, '{}', 'finished', ?2, ?2, ?2 + i * ?3, ?2 + i * ?3, i + 1 FROM k`,
			`WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ?1 - 1)
				INSERT INTO copies (id, set_id, idx, worker, slot, state, started_at, ended_at, run_seconds, cpu_seconds)
				SELECT i + 1, 1 + i / 200, i % 200, 'w', 0, 'won', ?2 + i * ?3 - 1000000000, ?2 + i * ?3, 1, 0.5 FROM k`,
			`WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 10 FROM k WHERE i < ?1 - 10)
				INSERT INTO copies (id, set_id, idx, worker, slot, speculative, state, started_at, ended_at, run_seconds)
				SELECT ?1 + 1 + i, 1 + i / 200, i % 200, 'w', 1, 1, 'killed', ?2 + i * ?3 - 1000000000, ?2 + i * ?3, 1 FROM k`,
			`WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ?1 - 1)
				INSERT INTO bill_lines (id, owner, set_id, idx, set_name, copy_id, slot_seconds, cpu_seconds, billed_at, reason, kind, amount)
				SELECT i + 1, IIF((1 + i / 200) % 10 = 0, 'v', 'u'), 1 + i / 200, i % 200, 'set' || (1 + i / 200), i + 1, 1, 0.5, ?2 + i * ?3,
				'finished', 'charge', 1.5 FROM k`,
			`UPDATE count_pause SET paused = 0`,
			`DELETE FROM bill_days`, `DELETE FROM free_copies`, `DELETE FROM free_days`,
		}, build...) {
			if _, err := tx.ExecContext(ctx, q, n, t0, step); err != nil {
				return fmt.Errorf("%.60s: %w", q, err)
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
}

func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// BenchmarkBill reads a bill from ledgers of 10k, 100k and 1M lines: all
// time for one owner (what a plain `batchctl bill` asks), all owners, and
// the last day and a half (a --since in the middle of a day: half a day of
// lines at the edge). scan is the bill summed from every line and copy
// (what it was), totals the bill from the running totals. One op is one
// bill.
//
//	go test -run '^$' -bench 'Bill$' -benchtime 5x -count 3 ./store/
func BenchmarkBill(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		db := NewDB(filepath.Join(b.TempDir(), "batchd.db"))
		if err := db.Open(); err != nil {
			b.Fatal(err)
		}
		benchLedger(b, db, n)
		since := time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC)
		for _, c := range []struct {
			name string
			in   BillInput
		}{
			{"owner", BillInput{Owner: "u"}},
			{"all-owners", BillInput{Owner: AllOwners}},
			{"since", BillInput{Owner: "u", Since: since}},
		} {
			got, err := db.GetBillGroups(context.Background(), c.in)
			want, err2 := db.billScan(context.Background(), c.in)
			if err != nil || err2 != nil || !reflect.DeepEqual(got, want) {
				b.Fatalf("%d lines, %s: totals %+v, scan %+v (%v, %v)", n, c.name, got.Totals, want.Totals, err, err2)
			}
			for _, how := range []string{"scan", "totals"} {
				b.Run(fmt.Sprintf("lines=%d/%s/%s", n, c.name, how), func(b *testing.B) {
					ctx := context.Background()
					for b.Loop() {
						var (
							bill Bill
							err  error
						)
						if how == "scan" {
							bill, err = db.billScan(ctx, c.in)
						} else {
							bill, err = db.GetBillGroups(ctx, c.in)
						}
						if err != nil || bill.Totals.Lines == 0 {
							b.Fatalf("bill: %+v %v", bill.Totals, err)
						}
					}
				})
			}
		}
		db.Close()
	}
}
