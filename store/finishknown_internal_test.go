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

// knownScene is two stores given the same history: a requested set of 8
// tasks with a copy started on each, and the server's memory of them
// (Started.Known); then the clock moved 2 s.
type knownScene struct {
	dbs   [2]*DB
	now   [2]*time.Time
	set   sched.SetID
	known map[sched.CopyID]FinishKnown // the same in both stores
}

func newKnownScene(t *testing.T) *knownScene {
	t.Helper()
	sc := &knownScene{known: map[sched.CopyID]FinishKnown{}}
	ctx := context.Background()
	for k := range sc.dbs {
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		db := NewDB(fmt.Sprintf("%s/%d.db", t.TempDir(), k))
		db.Now = func() time.Time { return now }
		db.Prices = Prices{SlotSecond: 0.5, CPUSecond: 0.25}
		if err := db.Open(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.RegisterWorker(ctx, RegisterInput{Worker: "w", Slots: 64}); err != nil {
			t.Fatal(err)
		}
		in := DiscloseInput{Owner: "ann", Name: "plain", Request: true}
		for i := 0; i < 8; i++ {
			in.Tasks = append(in.Tasks, sched.TaskSpec{Argv: []string{"true"}})
		}
		res, err := db.Disclose(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		sc.set = res.Set.ID
		var ds []sched.Decision
		for i := int32(0); i < 8; i++ {
			ds = append(ds, sched.Decision{Kind: sched.DecisionStart, Copy: sched.CopyID(i + 1), Task: sched.TaskRef{Set: sc.set, Index: i},
				Slot: sched.SlotRef{Worker: "w", Slot: i}})
		}
		started, err := db.ApplyDecisions(ctx, ds)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range started {
			if k > 0 && sc.known[st.Decision.Copy] != st.Known {
				t.Fatalf("the stores' memories differ: %+v, %+v", sc.known[st.Decision.Copy], st.Known)
			}
			sc.known[st.Decision.Copy] = st.Known
		}
		now = now.Add(2 * time.Second)
		sc.dbs[k], sc.now[k] = db, &now
	}
	return sc
}

// ends is a batch of the 8 copies' ends, each with the memory of its copy
// when withKnown: exit codes 0, 1, 2, a time-out, a run longer than the
// server saw (clamped), output with and without a cut.
func (sc *knownScene) ends(withKnown bool) []FinishInput {
	var ins []FinishInput
	for i := 0; i < 8; i++ {
		in := FinishInput{Worker: "w", Copy: sched.CopyID(i + 1), ExitCode: int32(i % 3), RunSeconds: float64(i%4) * 0.5,
			CPUSeconds: 0.25, Stdout: []byte(fmt.Sprintf("out %d\n", i)), Stderr: []byte(strings.Repeat("e", i)), StdoutTruncated: i == 5, TimedOut: i == 6}
		if i == 7 {
			in.RunSeconds = 100
		}
		if withKnown {
			k := sc.known[in.Copy]
			in.Known = &k
		}
		ins = append(ins, in)
	}
	return ins
}

// same fails t unless both stores answered alike and hold the same rows.
func (sc *knownScene) same(t *testing.T, read, known []FinishOutcome) {
	t.Helper()
	for i := range read {
		if !reflect.DeepEqual(read[i], known[i]) {
			t.Errorf("report %d: read\n%+v\nfrom memory\n%+v", i, read[i], known[i])
		}
	}
	a, b := dump(t, sc.dbs[0]), dump(t, sc.dbs[1])
	if a != b {
		al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
		for i := range min(len(al), len(bl)) {
			if al[i] != bl[i] {
				t.Errorf("rows differ:\nread        %s\nfrom memory %s", al[i], bl[i])
			}
		}
		if len(al) != len(bl) {
			t.Errorf("%d rows read, %d from memory", len(al), len(bl))
		}
	}
}

// A group commit given the server's memory of its copies writes from it,
// without reading them, the same rows and answers as the read; a single
// end too.
func TestFinishKnownSameAsRead(t *testing.T) {
	t.Parallel()
	sc := newKnownScene(t)
	ctx := context.Background()
	read, err := sc.dbs[0].FinishCopies(ctx, sc.ends(false)[:7])
	if err != nil {
		t.Fatal(err)
	}
	known, err := sc.dbs[1].FinishCopies(ctx, sc.ends(true)[:7])
	if err != nil {
		t.Fatal(err)
	}
	one, err := sc.dbs[0].FinishCopies(ctx, sc.ends(false)[7:])
	if err != nil {
		t.Fatal(err)
	}
	oneKnown, err := sc.dbs[1].FinishCopies(ctx, sc.ends(true)[7:])
	if err != nil {
		t.Fatal(err)
	}
	if taken, stale := sc.dbs[1].FinishKnownStats(); taken != 2 || stale != 0 {
		t.Fatalf("%d commits from memory, %d stale; want 2, 0", taken, stale)
	}
	if taken, _ := sc.dbs[0].FinishKnownStats(); taken != 0 {
		t.Fatalf("%d commits from memory without memory", taken)
	}
	sc.same(t, append(read, one...), append(known, oneKnown...))
}

// A memory gone stale (the task canceled, the copy killed, suspended or
// lost the race to another copy, a report from another worker) is
// refused by the writes: the batch answers and writes exactly what the
// read gives, whatever memory said.
func TestFinishKnownStaleSameAsRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, stale := range map[string]func(t *testing.T, db *DB, now *time.Time, set sched.SetID){
		"canceled": func(t *testing.T, db *DB, _ *time.Time, set sched.SetID) {
			if _, err := db.Cancel(ctx, CancelInput{Owner: "ann", SetID: set, Indexes: []int32{1}}); err != nil {
				t.Fatal(err)
			}
		},
		"killed": func(t *testing.T, db *DB, _ *time.Time, set sched.SetID) {
			if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionKill, Copy: 3, Task: sched.TaskRef{Set: set, Index: 2}}}); err != nil {
				t.Fatal(err)
			}
		},
		"suspended": func(t *testing.T, db *DB, now *time.Time, set sched.SetID) {
			ref, slot := sched.TaskRef{Set: set, Index: 3}, sched.SlotRef{Worker: "w", Slot: 3}
			if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionSuspend, Copy: 4, Task: ref, Slot: slot}}); err != nil {
				t.Fatal(err)
			}
			*now = now.Add(time.Second)
			if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionResume, Copy: 4, Task: ref, Slot: slot}}); err != nil {
				t.Fatal(err)
			}
		},
		"another copy won": func(t *testing.T, db *DB, _ *time.Time, set sched.SetID) {
			ref := sched.TaskRef{Set: set, Index: 4}
			if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionStart, Copy: 100, Task: ref,
				Slot: sched.SlotRef{Worker: "w", Slot: 20}, Speculative: true}}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.FinishCopies(ctx, []FinishInput{{Worker: "w", Copy: 100, RunSeconds: 0.5, Stdout: []byte("first\n")}}); err != nil {
				t.Fatal(err)
			}
		},
		"still suspended": func(t *testing.T, db *DB, _ *time.Time, set sched.SetID) {
			if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionSuspend, Copy: 6, Task: sched.TaskRef{Set: set, Index: 5},
				Slot: sched.SlotRef{Worker: "w", Slot: 5}}}); err != nil {
				t.Fatal(err)
			}
		},
		"another worker": nil,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc := newKnownScene(t)
			read, known := sc.ends(false), sc.ends(true)
			if stale == nil {
				read[2].Worker, known[2].Worker = "v", "v"
			} else {
				for k, db := range sc.dbs {
					stale(t, db, sc.now[k], sc.set)
				}
			}
			readOuts, err := sc.dbs[0].FinishCopies(ctx, read)
			if err != nil {
				t.Fatal(err)
			}
			knownOuts, err := sc.dbs[1].FinishCopies(ctx, known)
			if err != nil {
				t.Fatal(err)
			}
			if taken, stale := sc.dbs[1].FinishKnownStats(); taken != 0 || stale != 1 {
				t.Errorf("%d commits from memory, %d stale; want 0, 1", taken, stale)
			}
			sc.same(t, readOuts, knownOuts)
		})
	}
}

// A copy started before its task was requested has no memory of the
// request: its end is read.
func TestFinishKnownNotRequestedAtStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := NewDB(t.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.RegisterWorker(ctx, RegisterInput{Worker: "w", Slots: 2}); err != nil {
		t.Fatal(err)
	}
	res, err := db.Disclose(ctx, DiscloseInput{Owner: "ann", Tasks: []sched.TaskSpec{{Argv: []string{"true"}}, {Argv: []string{"true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var ds []sched.Decision
	for i := int32(0); i < 2; i++ {
		ds = append(ds, sched.Decision{Kind: sched.DecisionStart, Copy: sched.CopyID(i + 1), Task: sched.TaskRef{Set: res.Set.ID, Index: i},
			Slot: sched.SlotRef{Worker: "w", Slot: i}})
	}
	started, err := db.ApplyDecisions(ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Request(ctx, RequestInput{Owner: "ann", SetID: res.Set.ID, All: true}); err != nil {
		t.Fatal(err)
	}
	var ins []FinishInput
	for _, st := range started {
		if st.Known.RequestedAt != 0 {
			t.Fatalf("memory of a disclosed task's copy: %+v", st.Known)
		}
		ins = append(ins, FinishInput{Worker: "w", Copy: st.Decision.Copy, RunSeconds: 0.1, Known: &st.Known})
	}
	outs, err := db.FinishCopies(ctx, ins)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outs {
		if o.Err != nil || !o.Result.Won || o.Result.Task.State != sched.TaskFinished || o.Result.Bill == nil {
			t.Errorf("end %d: %+v", i, o)
		}
	}
	if taken, stale := db.FinishKnownStats(); taken != 0 || stale != 0 {
		t.Errorf("%d commits from memory, %d stale; want none", taken, stale)
	}
}
