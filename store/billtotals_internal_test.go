package store

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"batchd/sched"
)

// billHistory drives a store through a random history: sets disclosed
// (some requested, some with a retry policy) by three owners, requests,
// cancels (named and whole sets), copies started, finished one by one and
// in group commits (with and without the server's memory), killed and
// reported late, lost with their workers, retries, and corrections. The
// clock moves in quarter seconds and sometimes by hours, across UTC day
// edges; run and CPU seconds and prices are multiples of a power of two,
// so every sum is exact in any order and the bills must be equal to the
// last bit.
type billHistory struct {
	t       *testing.T
	db      *DB
	now     *time.Time
	rng     *rand.Rand
	sets    []sched.SetID
	owners  map[sched.SetID]string
	live    []Started
	killed  []Started // killed copies whose report has not come
	nextCpy sched.CopyID
	// done counts each kind of step that did something.
	done map[string]int
}

var billOwners = []string{"ann", "bob", "cy"}

func newBillHistory(t *testing.T, seed int64) *billHistory {
	// 23:00 UTC: the first hour crosses a day's edge.
	now := time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC)
	db := NewDB(filepath.Join(t.TempDir(), "batchd.db"))
	db.Now = func() time.Time { return now }
	db.Prices = Prices{SlotSecond: 0.5, CPUSecond: 0.25}
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := &billHistory{t: t, db: db, now: &now, rng: rand.New(rand.NewSource(seed)), owners: map[sched.SetID]string{},
		nextCpy: 1, done: map[string]int{}}
	for _, w := range []sched.WorkerID{"w1", "w2", "w3"} {
		if _, err := db.RegisterWorker(context.Background(), RegisterInput{Worker: w, Slots: 64}); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// quarter returns a random multiple of 1/4 in [0, n/4).
func (h *billHistory) quarter(n int) float64 { return float64(h.rng.Intn(n)) / 4 }

// openTasks returns the set's tasks in an open state.
func (h *billHistory) openTasks(set sched.SetID) []int32 {
	rows, err := h.db.ro.Query(`SELECT idx FROM tasks WHERE set_id = ? AND state IN ('disclosed', 'requested') ORDER BY idx`, set)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var out []int32
	for rows.Next() {
		var i int32
		if err := rows.Scan(&i); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, i)
	}
	return out
}

func (h *billHistory) someSet() (sched.SetID, string, bool) {
	if len(h.sets) == 0 {
		return 0, "", false
	}
	s := h.sets[h.rng.Intn(len(h.sets))]
	return s, h.owners[s], true
}

func (h *billHistory) someIndexes(n int) []int32 {
	k := 1 + h.rng.Intn(3)
	out := make([]int32, 0, k)
	for range k {
		out = append(out, int32(h.rng.Intn(n+1))) // sometimes one past the end
	}
	return out
}

// step does one random thing; errors of steps that are refused (a task
// in the wrong state) are part of the history.
func (h *billHistory) step() {
	ctx := context.Background()
	db := h.db
	switch r := h.rng.Intn(100); {
	case r < 12:
		owner := billOwners[h.rng.Intn(len(billOwners))]
		in := DiscloseInput{Owner: owner, Name: fmt.Sprintf("s%d", h.rng.Intn(4)), Request: h.rng.Intn(2) == 0}
		for range 1 + h.rng.Intn(4) {
			in.Tasks = append(in.Tasks, sched.TaskSpec{Argv: []string{"true"}, EstimateSeconds: 1})
		}
		if h.rng.Intn(3) == 0 {
			in.Retry = sched.RetryPolicy{Retries: 2, NonZero: true, Lost: true}
		}
		res, err := db.Disclose(ctx, in)
		if err != nil {
			h.t.Fatal(err)
		}
		h.sets = append(h.sets, res.Set.ID)
		h.owners[res.Set.ID] = owner
		h.done["disclose"]++
	case r < 20:
		if s, o, ok := h.someSet(); ok {
			in := RequestInput{Owner: o, SetID: s, All: h.rng.Intn(3) == 0}
			if !in.All {
				in.Indexes = h.someIndexes(4)
			}
			if _, err := db.Request(ctx, in); err == nil {
				h.done["request"]++
			}
		}
	case r < 25:
		if s, o, ok := h.someSet(); ok {
			in := CancelInput{Owner: o, SetID: s, All: h.rng.Intn(3) == 0}
			if !in.All {
				in.Indexes = h.someIndexes(4)
			}
			if _, err := db.Cancel(ctx, in); err == nil {
				h.done["cancel"]++
			}
		}
	case r < 45:
		if s, _, ok := h.someSet(); ok {
			open := h.openTasks(s)
			if len(open) == 0 {
				return
			}
			i := open[h.rng.Intn(len(open))]
			w := sched.WorkerID(fmt.Sprintf("w%d", 1+h.rng.Intn(3)))
			st, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionStart, Copy: h.nextCpy,
				Task: sched.TaskRef{Set: s, Index: i}, Slot: sched.SlotRef{Worker: w, Slot: int32(h.nextCpy)}, Speculative: h.rng.Intn(2) == 0}})
			h.nextCpy++
			if err == nil && len(st) == 1 {
				h.live = append(h.live, st[0])
				h.done["start"]++
			}
		}
	case r < 62:
		// Ends: one by one, or a batch (the group commit when all are
		// winners of requested tasks).
		n := min(len(h.live), 1+h.rng.Intn(4))
		if n == 0 {
			return
		}
		var ins []FinishInput
		for range n {
			k := h.rng.Intn(len(h.live))
			c := h.live[k]
			h.live = append(h.live[:k], h.live[k+1:]...)
			in := FinishInput{Worker: c.Decision.Slot.Worker, Copy: c.Decision.Copy, RunSeconds: h.quarter(40), CPUSeconds: h.quarter(20)}
			if h.rng.Intn(5) == 0 {
				in.ExitCode = 1
			}
			if h.rng.Intn(2) == 0 {
				known := c.Known
				in.Known = &known
			}
			ins = append(ins, in)
		}
		if len(ins) == 1 && h.rng.Intn(2) == 0 {
			if _, err := db.FinishCopy(ctx, ins[0]); err == nil {
				h.done["finish"]++
			}
			return
		}
		if outs, err := db.FinishCopies(ctx, ins); err == nil {
			for _, o := range outs {
				if o.Err == nil {
					h.done["finish-batch"]++
				}
			}
		}
	case r < 72:
		if len(h.live) == 0 {
			return
		}
		k := h.rng.Intn(len(h.live))
		c := h.live[k]
		h.live = append(h.live[:k], h.live[k+1:]...)
		if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionKill, Copy: c.Decision.Copy}}); err == nil {
			h.killed = append(h.killed, c)
			h.done["kill"]++
		}
	case r < 78:
		// A killed copy's own report: its run time as the worker saw it.
		if len(h.killed) == 0 {
			return
		}
		k := h.rng.Intn(len(h.killed))
		c := h.killed[k]
		h.killed = append(h.killed[:k], h.killed[k+1:]...)
		if _, err := db.FinishCopy(ctx, FinishInput{Worker: c.Decision.Slot.Worker, Copy: c.Decision.Copy, Killed: true,
			RunSeconds: h.quarter(40), CPUSeconds: h.quarter(20)}); err == nil {
			h.done["late-report"]++
		}
	case r < 81:
		w := sched.WorkerID(fmt.Sprintf("w%d", 1+h.rng.Intn(3)))
		lost, err := db.LoseWorker(ctx, w, "lease-lapsed")
		if err != nil {
			h.t.Fatal(err)
		}
		if len(lost) > 0 {
			h.done["lose"]++
		}
		kept := h.live[:0]
		for _, c := range h.live {
			if c.Decision.Slot.Worker != w {
				kept = append(kept, c)
			}
		}
		h.live = kept
		if _, err := db.RegisterWorker(ctx, RegisterInput{Worker: w, Slots: 64}); err != nil {
			h.t.Fatal(err)
		}
	case r < 87:
		if s, o, ok := h.someSet(); ok {
			in := RetryInput{Owner: o, SetID: s, All: h.rng.Intn(3) == 0}
			if !in.All {
				in.Indexes = h.someIndexes(4)
			}
			if _, err := db.Retry(ctx, in); err == nil {
				h.done["retry"]++
			}
		}
	case r < 90:
		var last int64
		if err := db.ro.QueryRow(`SELECT COALESCE(MAX(id), 0) FROM bill_lines`).Scan(&last); err != nil {
			h.t.Fatal(err)
		}
		if last == 0 {
			return
		}
		if _, err := db.CorrectBill(ctx, CorrectInput{Line: 1 + h.rng.Int63n(last), SlotSeconds: h.quarter(20) - 2, CPUSeconds: h.quarter(8),
			Note: "adjust"}); err == nil {
			h.done["correct"]++
		}
	default:
		// Time passes: mostly quarter seconds, sometimes hours (days go by).
		if h.rng.Intn(4) == 0 {
			*h.now = h.now.Add(time.Duration(1+h.rng.Intn(30)) * time.Hour)
		} else {
			*h.now = h.now.Add(time.Duration(1+h.rng.Intn(40)) * 250 * time.Millisecond)
		}
	}
}

// selections returns the bills to compare now: every owner and all
// owners, all time and ranges with ends at, before and after day edges
// and inside one day, each for all sets and for one set.
func (h *billHistory) selections() []BillInput {
	day := func(d int) time.Time { return time.Date(2026, 3, 1+d, 0, 0, 0, 0, time.UTC) }
	type span struct{ since, until time.Time }
	spans := []span{
		{},
		{day(1), time.Time{}},
		{time.Time{}, day(2)},
		{day(1), day(2)},
		{day(1).Add(-time.Nanosecond), day(3).Add(time.Nanosecond)},
		{day(1).Add(90 * time.Minute), day(1).Add(20 * time.Hour)},
		{day(0).Add(23*time.Hour + 30*time.Minute), day(4).Add(7 * time.Hour)},
		{day(2).Add(time.Hour), day(5)},
		{day(3), day(2)},
		{h.now.Add(-3 * time.Hour), time.Time{}},
		{time.Unix(-3*86400, 0), day(2)}, // whole days before 1970
	}
	var out []BillInput
	for _, owner := range append([]string{AllOwners, "nobody"}, billOwners...) {
		for k, sp := range spans {
			in := BillInput{Owner: owner, Since: sp.since, Until: sp.until, IncludeLines: true, PageSize: int32(3 + k)}
			out = append(out, in)
			if s, _, ok := h.someSet(); ok {
				in.SetID = s
				out = append(out, in)
			}
		}
	}
	return out
}

// check compares every selection's bill, and each page of its lines,
// from the totals and from the scan.
func (h *billHistory) check(at string) {
	h.t.Helper()
	ctx := context.Background()
	for _, in := range h.selections() {
		for page := 0; ; page++ {
			got, err := h.db.GetBillGroups(ctx, in)
			if err != nil {
				h.t.Fatal(err)
			}
			want, err := h.db.billScan(ctx, in)
			if err != nil {
				h.t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				h.t.Fatalf("%s: bill %+v page %d:\n got  %+v\n want %+v", at, in, page, got, want)
			}
			if got.Next == "" || page > 50 {
				break
			}
			in.PageToken = got.Next
		}
	}
}

// TestBillTotalsSameAsScan: over random histories, the bill from the
// running totals equals the bill summed from every line and copy (the
// scan it replaced, kept as the oracle): totals, free work in its parts,
// sums by set and by owner, and the pages of lines.
func TestBillTotalsSameAsScan(t *testing.T) {
	t.Parallel()
	total := map[string]int{}
	var free sched.FreeWork
	for seed := int64(1); seed <= 12; seed++ {
		h := newBillHistory(t, seed)
		for i := 0; i < 400; i++ {
			h.step()
			if i%50 == 49 {
				h.check(fmt.Sprintf("seed %d step %d", seed, i))
			}
		}
		h.check(fmt.Sprintf("seed %d end", seed))
		b, err := h.db.GetBillGroups(context.Background(), BillInput{Owner: AllOwners})
		if err != nil {
			t.Fatal(err)
		}
		free.ExecutedUnrequestedSlotSeconds += b.Totals.Free.ExecutedUnrequestedSlotSeconds
		free.SpeculativeLostSlotSeconds += b.Totals.Free.SpeculativeLostSlotSeconds
		free.CanceledSlotSeconds += b.Totals.Free.CanceledSlotSeconds
		free.LostWithWorkerSlotSeconds += b.Totals.Free.LostWithWorkerSlotSeconds
		for k, v := range h.done {
			total[k] += v
		}
	}
	// The histories did what they are for: every kind of step, and free
	// work in every part.
	for _, k := range []string{"disclose", "request", "cancel", "start", "finish", "finish-batch", "kill", "late-report", "lose", "retry", "correct"} {
		if total[k] == 0 {
			t.Errorf("no %s step did anything: %v", k, total)
		}
	}
	if free.ExecutedUnrequestedSlotSeconds == 0 || free.SpeculativeLostSlotSeconds == 0 || free.CanceledSlotSeconds == 0 || free.LostWithWorkerSlotSeconds == 0 {
		t.Errorf("free work missing a part: %+v", free)
	}
	t.Logf("steps %v; free %+v", total, free)
}

// TestBillTotalsBuiltByMigration: a ledger written before the running
// totals existed (migration 0034 undone on a database with a random
// history) gets them when the server opens it again, and its bills are
// then what the scan gives, and what they were.
func TestBillTotalsBuiltByMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newBillHistory(t, 99)
	for i := 0; i < 600; i++ {
		h.step()
	}
	ins := h.selections()
	before := make([]Bill, len(ins))
	for i, in := range ins {
		var err error
		if before[i], err = h.db.billScan(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.db.write(ctx, func(tx *Tx) error {
		for _, q := range []string{`DROP TABLE bill_days`, `DROP TABLE free_days`, `DROP TABLE free_copies`,
			`DELETE FROM migrations WHERE name = 'migrations/0034_bill_totals.sql'`} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	path := h.db.Path
	if err := h.db.Close(); err != nil {
		t.Fatal(err)
	}
	db := NewDB(path)
	db.Now = h.db.Now
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h.db = db
	var n int
	if err := db.ro.QueryRow(`SELECT (SELECT COUNT(*) FROM bill_days) + (SELECT COUNT(*) FROM free_copies)`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("totals after the migration: %d rows (%v)", n, err)
	}
	for i, in := range ins {
		got, err := db.GetBillGroups(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, before[i]) {
			t.Fatalf("bill %+v after the migration:\n got  %+v\n want %+v", in, got, before[i])
		}
	}
	// And the totals the migration built stay right as the history goes on.
	for i := 0; i < 200; i++ {
		h.step()
	}
	h.check("after the migration")
}
