package store_test

import (
	"context"
	"reflect"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// A page of ListSets, read in a few statements for the whole page, holds
// each set exactly as GetTaskSet reads it alone: counts of held and running
// tasks included, sets of other owners left out, an admin's page covering
// every owner's.
func TestListSetsPageMatchesGetTaskSet(t *testing.T) {
	db, _ := setup(t)
	ctx := context.Background()
	if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "w", Slots: 16}); err != nil {
		t.Fatal(err)
	}
	owners := []string{"u", "v"}
	var sets []sched.TaskSet
	for i := range 9 {
		owner := owners[i%2]
		res, err := db.Disclose(ctx, store.DiscloseInput{Owner: owner, Tasks: echo(4 + i), Request: i%3 == 0})
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, res.Set)
	}
	// Held tasks in two sets, running copies (two of one task) in two others,
	// one of them also holding a task: 4 held and 4 running in all.
	for _, h := range []struct {
		set int
		idx []int32
	}{{1, []int32{0, 2}}, {4, []int32{1}}, {6, []int32{3}}} {
		if _, err := db.Hold(ctx, store.HoldInput{Owner: sets[h.set].Owner, SetID: sets[h.set].ID, Indexes: h.idx}); err != nil {
			t.Fatal(err)
		}
	}
	var ds []sched.Decision
	for i, r := range []sched.TaskRef{{Set: sets[0].ID, Index: 0}, {Set: sets[0].ID, Index: 0}, {Set: sets[0].ID, Index: 2},
		{Set: sets[6].ID, Index: 1}, {Set: sets[3].ID, Index: 0}} {
		ds = append(ds, sched.Decision{Kind: sched.DecisionStart, Copy: sched.CopyID(i + 1), Task: r, Slot: sched.SlotRef{Worker: "w", Slot: int32(i)}})
	}
	if _, err := db.ApplyDecisions(ctx, ds); err != nil {
		t.Fatal(err)
	}
	check := func(owner string, want int) {
		t.Helper()
		page, _, err := db.ListSets(ctx, store.SetFilter{Owner: owner, PageSize: 50})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) != want {
			t.Fatalf("%s: %d sets listed, want %d", owner, len(page), want)
		}
		held, running := int64(0), int64(0)
		for i, got := range page {
			if i > 0 && got.ID >= page[i-1].ID {
				t.Errorf("%s: set %d listed after %d: not newest first", owner, got.ID, page[i-1].ID)
			}
			if owner != store.AllOwners && got.Owner != owner {
				t.Errorf("%s: listed set %d of %s", owner, got.ID, got.Owner)
			}
			alone, err := db.GetTaskSet(ctx, got.Owner, got.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, alone) {
				t.Errorf("%s: set %d listed as\n%+v\nalone\n%+v", owner, got.ID, got, alone)
			}
			held, running = held+got.Counts.Held, running+got.Counts.Running
		}
		if owner == store.AllOwners && (held != 4 || running != 4) {
			t.Errorf("all: %d held and %d running tasks listed, want 4 and 4", held, running)
		}
	}
	check("u", 5)
	check("v", 4)
	check(store.AllOwners, 9)
}
