package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"batchd/sched"
)

// finishScene is two stores given the same history: three requested
// sets (one retrying non-zero exits, one with a stop rule) with a copy
// started on every task, then the clock moved 2 s.
type finishScene struct {
	dbs          [2]*DB
	plain, retry sched.SetID
	rule         sched.SetID
}

func newFinishScene(t *testing.T) *finishScene {
	t.Helper()
	sc := &finishScene{}
	for k := range sc.dbs {
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		db := NewDB(fmt.Sprintf("%s/%d.db", t.TempDir(), k))
		db.Now = func() time.Time { return now }
		db.Prices = Prices{SlotSecond: 0.5, CPUSecond: 0.25}
		if err := db.Open(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		ctx := context.Background()
		if _, err := db.RegisterWorker(ctx, RegisterInput{Worker: "w", Slots: 64}); err != nil {
			t.Fatal(err)
		}
		disclose := func(in DiscloseInput) sched.SetID {
			in.Owner, in.Request = "ann", true
			for i := 0; i < 8; i++ {
				in.Tasks = append(in.Tasks, sched.TaskSpec{Argv: []string{"true"}, EstimateSeconds: float64(i)})
			}
			res, err := db.Disclose(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			return res.Set.ID
		}
		sc.plain = disclose(DiscloseInput{Name: "plain"})
		sc.retry = disclose(DiscloseInput{Name: "retry", Retry: sched.RetryPolicy{Retries: 1, NonZero: true}})
		sc.rule = disclose(DiscloseInput{Name: "rule", Stop: sched.StopRule{OnExit: []int32{3}}})
		var ds []sched.Decision
		for _, set := range []sched.SetID{sc.plain, sc.retry, sc.rule} {
			for i := int32(0); i < 8; i++ {
				ds = append(ds, sched.Decision{Kind: sched.DecisionStart, Copy: sched.CopyID(len(ds) + 1), Task: sched.TaskRef{Set: set, Index: i},
					Slot: sched.SlotRef{Worker: "w", Slot: int32(len(ds))}})
			}
		}
		if _, err := db.ApplyDecisions(ctx, ds); err != nil {
			t.Fatal(err)
		}
		now = now.Add(2 * time.Second)
		sc.dbs[k] = db
	}
	return sc
}

// copyOf is the copy started on task i of the scene's k-th set.
func copyOf(k, i int) sched.CopyID { return sched.CopyID(k*8 + i + 1) }

// dump is every row the finish path writes, as text.
func dump(t *testing.T, db *DB) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, q := range []string{
		`SELECT * FROM copies ORDER BY id`, `SELECT * FROM outputs ORDER BY set_id, idx`, `SELECT * FROM tasks ORDER BY set_id, idx`,
		`SELECT * FROM bill_lines ORDER BY id`, `SELECT * FROM task_sets ORDER BY id`, `SELECT * FROM task_attempts`,
	} {
		if err := db.read(ctx, func(tx *Tx) error {
			rows, err := tx.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			defer rows.Close()
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					return err
				}
				fmt.Fprintf(&b, "%s:", q)
				for i, v := range vals {
					fmt.Fprintf(&b, " %s=%v", cols[i], v)
				}
				b.WriteByte('\n')
			}
			return rows.Err()
		}); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// The batched finish of a group commit writes the same rows and gives the
// same answers as the reports one by one, and takes only the batches it
// can: winners of requested tasks with no stop rule in force and no
// retry wanted.
func TestFinishBatchSameAsOneByOne(t *testing.T) {
	t.Parallel()
	sc := newFinishScene(t)
	ctx := context.Background()
	var batch []FinishInput
	for i := 0; i < 8; i++ {
		// Exit codes 0, 1, 2; one reported run longer than the server saw
		// (clamped); output with and without a cut.
		batch = append(batch, FinishInput{Worker: "w", Copy: copyOf(0, i), ExitCode: int32(i % 3), RunSeconds: float64(i%4) * 0.5,
			CPUSeconds: 0.25, Stdout: []byte(fmt.Sprintf("out %d\n", i)), Stderr: []byte(strings.Repeat("e", i)), StdoutTruncated: i == 5, TimedOut: i == 6})
	}
	batch[7].RunSeconds = 100
	// Winners in the retrying set that exit 0: no retry wanted.
	for i := 0; i < 4; i++ {
		batch = append(batch, FinishInput{Worker: "w", Copy: copyOf(1, i), RunSeconds: 1.5, CPUSeconds: 1})
	}

	// The batch is of the kind finishWinners takes; one with a retry
	// wanted, a stop rule in force or a copy killed by its worker is not,
	// and leaves nothing written.
	db := sc.dbs[1]
	for name, c := range map[string]struct {
		ins  []FinishInput
		want bool
	}{
		"winners":  {batch, true},
		"retry":    {[]FinishInput{batch[0], {Worker: "w", Copy: copyOf(1, 5), ExitCode: 1, RunSeconds: 1}}, false},
		"rule":     {[]FinishInput{batch[0], {Worker: "w", Copy: copyOf(2, 0), RunSeconds: 1}}, false},
		"killed":   {[]FinishInput{batch[0], {Worker: "w", Copy: copyOf(0, 1), Killed: true}}, false},
		"worker":   {[]FinishInput{batch[0], {Worker: "v", Copy: copyOf(0, 1), RunSeconds: 1}}, false},
		"twice":    {[]FinishInput{batch[0], batch[0]}, false},
		"one only": {batch[:1], false},
	} {
		before := dump(t, db)
		var done bool
		stop := fmt.Errorf("roll back")
		err := db.write(ctx, func(tx *Tx) error {
			var err error
			done, err = finishWinners(ctx, tx, c.ins, make([]FinishOutcome, len(c.ins)))
			if err != nil {
				return err
			}
			return stop
		})
		if err != stop || done != c.want {
			t.Errorf("%s: batched %v (%v), want %v", name, done, err, c.want)
		}
		if !c.want && dump(t, db) != before {
			t.Errorf("%s: a batch not taken wrote rows", name)
		}
	}

	var one []FinishOutcome
	for _, in := range batch {
		outs, err := sc.dbs[0].FinishCopies(ctx, []FinishInput{in})
		if err != nil {
			t.Fatal(err)
		}
		one = append(one, outs...)
	}
	all, err := sc.dbs[1].FinishCopies(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i := range one {
		if !reflect.DeepEqual(one[i], all[i]) {
			t.Errorf("report %d: one by one\n%+v\nbatched\n%+v", i, one[i], all[i])
			if one[i].Result.Bill != nil && all[i].Result.Bill != nil {
				t.Errorf("bills:\n%+v\n%+v", *one[i].Result.Bill, *all[i].Result.Bill)
			}
		}
	}
	a, b := dump(t, sc.dbs[0]), dump(t, sc.dbs[1])
	if a != b {
		al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
		for i := range min(len(al), len(bl)) {
			if al[i] != bl[i] {
				t.Errorf("rows differ:\none by one %s\nbatched    %s", al[i], bl[i])
			}
		}
		if len(al) != len(bl) {
			t.Errorf("%d rows one by one, %d batched", len(al), len(bl))
		}
	}
	// A replay of the batch gets the first answers and writes nothing.
	again, err := sc.dbs[1].FinishCopies(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range again {
		if !o.Result.Replayed || !o.Result.Won {
			t.Errorf("replay %d: %+v", i, o)
		}
	}
	if dump(t, sc.dbs[1]) != b {
		t.Error("a replayed batch wrote rows")
	}
}
