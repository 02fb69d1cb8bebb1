package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"batchd/sched"
)

// listBenchSets is how many sets BenchmarkListSets lists from.
const listBenchSets = 100_000

// benchListDB makes a store holding listBenchSets sets of one owner ("u",
// and every tenth of "v"), written row by row in one transaction (a
// disclose each would take minutes): 1% open (running, queued, waiting),
// the rest ended (done, 7% failed, 3% canceled); names render-N, search-N,
// sweep-N; a label proj=pN on each and rare=1 on one in a thousand; one
// set a second.
func benchListDB(b *testing.B) *DB {
	b.Helper()
	db := NewDB(b.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	names := []string{"render", "search", "sweep"}
	err := db.write(context.Background(), func(tx *Tx) error {
		for i := 1; i <= listBenchSets; i++ {
			owner := "u"
			if i%10 == 0 {
				owner = "v"
			}
			disc, req, fin, canc, failed, waiting := 0, 0, 1, 0, 0, 0
			switch {
			case i%100 == 1: // open: running, queued or waiting
				fin, req = 0, 1
				waiting = boolInt(i%300 == 1)
			case i%100 < 8:
				failed = 1
			case i%100 < 11:
				fin, canc = 0, 1
			}
			if _, err := tx.ExecContext(context.Background(), `INSERT INTO task_sets (id, owner, name, created_at, ntasks, n_disclosed, n_requested,
				n_finished, n_canceled, n_failed, waiting) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)`,
				i, owner, fmt.Sprintf("%s-%d", names[i%3], i), nanos(t0.Add(time.Duration(i)*time.Second)), disc, req, fin, canc, failed, waiting); err != nil {
				return err
			}
			if err := addNameGrams(context.Background(), tx, sched.SetID(i)); err != nil {
				return err
			}
			if _, err := tx.ExecContext(context.Background(), `INSERT INTO set_labels (set_id, key, value) VALUES (?, 'proj', ?)`, i, fmt.Sprintf("p%d", i%10)); err != nil {
				return err
			}
			if i%1000 == 500 {
				if _, err := tx.ExecContext(context.Background(), `INSERT INTO set_labels (set_id, key, value) VALUES (?, 'rare', '1')`, i); err != nil {
					return err
				}
			}
			if req > 0 && waiting == 0 && i%200 == 1 { // half the open sets run
				if _, err := tx.ExecContext(context.Background(), `INSERT INTO tasks (set_id, idx, spec, state, disclosed_at) VALUES (?, 0, '{}', 'requested', 0)`, i); err != nil {
					return err
				}
				if _, err := tx.ExecContext(context.Background(), `INSERT INTO copies (set_id, idx, worker, slot, state, started_at) VALUES (?, 0, 'w', 0, 'running', 0)`, i); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkListSets lists the first page (100 sets) of each filter from
// 100,000 sets, the way `batchctl ls` asks.
func BenchmarkListSets(b *testing.B) {
	db := benchListDB(b)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, bc := range []struct {
		name string
		f    SetFilter
	}{
		{"none", SetFilter{}},
		{"all-owners", SetFilter{Owner: AllOwners}},
		{"state=failed", SetFilter{States: []sched.SetState{sched.SetFailed}}},
		{"state=canceled/all-owners", SetFilter{Owner: AllOwners, States: []sched.SetState{sched.SetCanceled}}},
		{"state=running", SetFilter{States: []sched.SetState{sched.SetRunning}}},
		{"state=waiting,queued,running", SetFilter{States: []sched.SetState{sched.SetWaiting, sched.SetQueued, sched.SetRunning}}},
		{"name=render-*", SetFilter{NameGlob: "render-*"}},
		{"name=*-4242", SetFilter{NameGlob: "*-4242"}},
		{"name=*e*", SetFilter{NameGlob: "*e*"}},
		{"name=*zq*", SetFilter{NameGlob: "*zq*"}},
		{"name=sweep-9999?", SetFilter{NameGlob: "sweep-9999?"}},
		{"label=proj=p3", SetFilter{Labels: []Label{{Key: "proj", Value: "p3"}}}},
		{"label=rare=1", SetFilter{Labels: []Label{{Key: "rare", Value: "1"}}}},
		{"since-until=1h", SetFilter{Since: t0.Add(50_000 * time.Second), Until: t0.Add(53_600 * time.Second)}},
		{"failed+label+since", SetFilter{States: []sched.SetState{sched.SetFailed}, Labels: []Label{{Key: "proj", Value: "p3"}}, Since: t0.Add(90_000 * time.Second)}},
		{"page-at-50000", SetFilter{PageToken: "50000"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := bc.f
			if f.Owner == "" {
				f.Owner = "u"
			}
			f.PageSize = 100
			ctx := context.Background()
			for b.Loop() {
				if _, _, err := db.ListSets(ctx, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestNameGram(t *testing.T) {
	t.Parallel()
	for glob, want := range map[string]string{
		"render-*": "er-", "*-4242": "242", "*nder-[ab]": "er-", "a*b": "", "*": "", "ab[c]d": "", "x?yz*long": "ong", "été-1*": "é-1",
	} {
		if got := nameGram(glob); got != want {
			t.Errorf("nameGram(%q) = %q, want %q", glob, got, want)
		}
	}
}
