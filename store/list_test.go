package store_test

import (
	"context"
	"testing"
	"time"

	"batchd/sched"
	"batchd/store"
)

func TestListSets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	disclose := func(owner, name string, request bool, labels ...store.Label) sched.SetID {
		t.Helper()
		r, err := db.Disclose(ctx, store.DiscloseInput{Owner: owner, Name: name, Tasks: echo(1), Request: request, Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		*now = now.Add(time.Minute)
		return r.Set.ID
	}
	done := disclose("u", "render-a", true, store.Label{Key: "proj", Value: "x"})
	runTask(t, db, 1, done, 0, 0)
	failed := disclose("u", "render-b", true, store.Label{Key: "proj", Value: "y"})
	runTask(t, db, 2, failed, 0, 1)
	canceled := disclose("u", "search", false, store.Label{Key: "proj", Value: "x"}, store.Label{Key: "team", Value: "z"})
	if _, err := db.Cancel(ctx, store.CancelInput{Owner: "u", SetID: canceled, All: true}); err != nil {
		t.Fatal(err)
	}
	queued := disclose("u", "search-2", false)
	running := disclose("u", "render-c", true)
	start(t, db, 3, running, 0, "a")
	other := disclose("v", "render-v", false)
	waiting, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "after", Tasks: echo(1), After: []sched.Dependency{{Set: queued, Index: sched.WholeSet}}})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(f store.SetFilter) []sched.SetID {
		t.Helper()
		if f.Owner == "" {
			f.Owner = "u"
		}
		sets, _, err := db.ListSets(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []sched.SetID
		for _, s := range sets {
			out = append(out, s.ID)
		}
		return out
	}
	w := waiting.Set.ID
	for _, tc := range []struct {
		name string
		f    store.SetFilter
		want []sched.SetID
	}{
		{"all", store.SetFilter{}, []sched.SetID{w, running, queued, canceled, failed, done}},
		{"all-owners", store.SetFilter{Owner: store.AllOwners}, []sched.SetID{w, other, running, queued, canceled, failed, done}},
		{"glob", store.SetFilter{NameGlob: "render-*"}, []sched.SetID{running, failed, done}},
		{"glob-infix", store.SetFilter{NameGlob: "*nder-[ab]"}, []sched.SetID{failed, done}},
		{"glob-infix-state", store.SetFilter{NameGlob: "*arc*", States: []sched.SetState{sched.SetQueued}}, []sched.SetID{queued}},
		{"glob-short", store.SetFilter{NameGlob: "*-?"}, []sched.SetID{running, queued, failed, done}},
		{"done", store.SetFilter{States: []sched.SetState{sched.SetDone}}, []sched.SetID{done}},
		{"failed-canceled", store.SetFilter{States: []sched.SetState{sched.SetFailed, sched.SetCanceled}}, []sched.SetID{canceled, failed}},
		{"running", store.SetFilter{States: []sched.SetState{sched.SetRunning}}, []sched.SetID{running}},
		{"queued", store.SetFilter{States: []sched.SetState{sched.SetQueued}}, []sched.SetID{queued}},
		{"waiting", store.SetFilter{States: []sched.SetState{sched.SetWaiting}}, []sched.SetID{w}},
		{"label", store.SetFilter{Labels: []store.Label{{Key: "proj", Value: "x"}}}, []sched.SetID{canceled, done}},
		{"labels", store.SetFilter{Labels: []store.Label{{Key: "proj", Value: "x"}, {Key: "team", Value: "z"}}}, []sched.SetID{canceled}},
		{"since-until", store.SetFilter{Since: t0.Add(time.Minute), Until: t0.Add(3 * time.Minute)}, []sched.SetID{canceled, failed}},
		{"since-include-open", store.SetFilter{Since: t0.Add(4 * time.Minute), IncludeOpen: true}, []sched.SetID{w, running, queued}},
		{"since-include-open-ended", store.SetFilter{Since: t0.Add(4 * time.Minute), IncludeOpen: true, States: []sched.SetState{sched.SetQueued, sched.SetDone}}, []sched.SetID{queued}},
		{"page", store.SetFilter{PageSize: 2}, []sched.SetID{w, running}},
		{"page-2", store.SetFilter{PageSize: 2, PageToken: "5"}, []sched.SetID{queued, canceled}},
	} {
		got := ids(tc.f)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
	sets, next, err := db.ListSets(ctx, store.SetFilter{Owner: "u", PageSize: 3, Labels: []store.Label{{Key: "proj", Value: "x"}}})
	if err != nil || next != "" || len(sets) != 2 || len(sets[0].Labels) != 2 || sets[0].Labels[1] != (store.Label{Key: "team", Value: "z"}) {
		t.Fatalf("labels read back: %+v %q %v", sets, next, err)
	}
	if sets, _, _ := db.ListSets(ctx, store.SetFilter{Owner: "u", States: []sched.SetState{sched.SetWaiting}}); len(sets) != 1 || len(sets[0].After) != 1 || sets[0].After[0].Set != queued {
		t.Fatalf("dependencies read back: %+v", sets)
	}
	_, _, err = db.ListSets(ctx, store.SetFilter{Owner: "u", States: []sched.SetState{"bogus"}})
	code(t, err, sched.EINVALID)
	_, _, err = db.ListSets(ctx, store.SetFilter{Owner: "u", PageToken: "x"})
	code(t, err, sched.EINVALID)
}
