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

// A batch's rows go in chunks of at most valuesMaxRows, each padded to a
// power of two, covering every row once.
func TestValuesChunks(t *testing.T) {
	for n := 0; n <= 3*valuesMaxRows+5; n++ {
		next := 0
		if err := valuesChunks(n, func(first, rows, size int) error {
			if first != next || rows < 1 || rows > valuesMaxRows || size < rows || size >= 2*rows || size&(size-1) != 0 {
				t.Fatalf("n=%d: chunk at %d of %d rows padded to %d, after %d rows", n, first, rows, size, next)
			}
			next = first + rows
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if next != n {
			t.Fatalf("n=%d: chunks covered %d rows", n, next)
		}
	}
}

// Placeholders are numbered after the template's own fixed parameters.
func TestValuesSQL(t *testing.T) {
	got := valuesSQL(`UPDATE x SET a = ?1 FROM (`+valuesMark+`) AS v WHERE x.id = v.column1`, 1, 2, 3)
	want := `UPDATE x SET a = ?1 FROM (VALUES (?2,?3),(?4,?5),(?6,?7)) AS v WHERE x.id = v.column1`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// A batch of winners larger than one statement's chunk, over two sets,
// writes the same rows and answers the same as the reports one by one.
func TestFinishBatchChunksSameAsOneByOne(t *testing.T) {
	t.Parallel()
	const n = valuesMaxRows + 45 // 602 rows: chunks of 256, 256 and 90 (padded to 128)
	var dbs [2]*DB
	ctx := context.Background()
	for k := range dbs {
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		db := NewDB(fmt.Sprintf("%s/%d.db", t.TempDir(), k))
		db.Now = func() time.Time { return now }
		db.Prices = Prices{SlotSecond: 0.5, CPUSecond: 0.25}
		if err := db.Open(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.RegisterWorker(ctx, RegisterInput{Worker: "w", Slots: 2 * n}); err != nil {
			t.Fatal(err)
		}
		var ds []sched.Decision
		for s, name := range []string{"a", "b"} {
			specs := make([]sched.TaskSpec, n)
			for i := range specs {
				specs[i] = sched.TaskSpec{Argv: []string{"true"}}
			}
			res, err := db.Disclose(ctx, DiscloseInput{Owner: []string{"ann", "bob"}[s], Name: name, Tasks: specs, Request: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				ds = append(ds, sched.Decision{Kind: sched.DecisionStart, Copy: sched.CopyID(len(ds) + 1),
					Task: sched.TaskRef{Set: res.Set.ID, Index: int32(i)}, Slot: sched.SlotRef{Worker: "w", Slot: int32(len(ds))}})
			}
		}
		if _, err := db.ApplyDecisions(ctx, ds); err != nil {
			t.Fatal(err)
		}
		now = now.Add(1500 * time.Millisecond)
		dbs[k] = db
	}
	// The two sets' copies interleaved, with exit codes, a clamp and
	// output of several sizes.
	var batch []FinishInput
	for i := 0; i < n; i++ {
		for s := 0; s < 2; s++ {
			batch = append(batch, FinishInput{Worker: "w", Copy: sched.CopyID(s*n + i + 1), ExitCode: int32(i % 5 / 4), RunSeconds: float64(i%3) * 0.75,
				CPUSeconds: 0.125, Stdout: []byte(strings.Repeat("o", i%7)), Stderr: []byte(strings.Repeat("e", i%2)), TimedOut: i%11 == 10})
		}
	}
	var one []FinishOutcome
	for _, in := range batch {
		outs, err := dbs[0].FinishCopies(ctx, []FinishInput{in})
		if err != nil {
			t.Fatal(err)
		}
		one = append(one, outs...)
	}
	all := make([]FinishOutcome, len(batch))
	if err := dbs[1].write(ctx, func(tx *Tx) error {
		done, err := finishWinners(ctx, tx, batch, all)
		if err == nil && !done {
			err = fmt.Errorf("the batch was not taken")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for i := range one {
		if !reflect.DeepEqual(one[i], all[i]) {
			t.Fatalf("report %d: one by one\n%+v\nbatched\n%+v", i, one[i], all[i])
		}
	}
	a, b := dump(t, dbs[0]), dump(t, dbs[1])
	if a != b {
		al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
		for i := range min(len(al), len(bl)) {
			if al[i] != bl[i] {
				t.Fatalf("rows differ:\none by one %s\nbatched    %s", al[i], bl[i])
			}
		}
		t.Fatalf("%d rows one by one, %d batched", len(al), len(bl))
	}
}
