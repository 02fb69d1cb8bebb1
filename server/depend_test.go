package server_test

import (
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

func after(id int64) []*batchv1.Dependency { return []*batchv1.Dependency{{SetId: id}} }

// TestDependencyReleases: a requested set disclosed after another runs
// nothing while it waits, says why, and starts when the other ends.
func TestDependencyReleases(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w1", 2)
	a := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	dep := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2), Request: true, After: after(a.Id)})).TaskSet
	if dep.State != batchv1.SetState_SET_STATE_WAITING {
		t.Fatalf("dependent state %v, want WAITING", dep.State)
	}
	st := w.start()
	if st.SetId != a.Id {
		t.Fatalf("started %d/%d, want set %d's task: the dependent set waits", st.SetId, st.Index, a.Id)
	}
	why := must[*batchv1.WhyResponse](t)(b.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: dep.Id, Indexes: []int32{0}}))
	if r := why.Tasks[0]; r.Reason != batchv1.WaitReason_WAIT_REASON_WAITING_FOR_DEPENDENCY || !strings.Contains(r.ReasonText, "waiting for set 1: 1 of 1 left") {
		t.Fatalf("why: %v %q", r.Reason, r.ReasonText)
	}
	w.won(st.CopyId, "a")
	s1, s2 := w.start(), w.start()
	if s1.SetId != dep.Id || s2.SetId != dep.Id {
		t.Fatalf("started %v and %v, want the dependent set's tasks", s1, s2)
	}
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: dep.Id})).TaskSet
	if got.State != batchv1.SetState_SET_STATE_RUNNING {
		t.Fatalf("released set: %v, want RUNNING", got.State)
	}
}

// TestDependencyFailedCancels: a failed dependency cancels the dependent
// set with that reason; one that asked for any outcome starts.
func TestDependencyFailedCancels(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w1", 1)
	a := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	okOnly := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true, After: after(a.Id)})).TaskSet
	anyOut := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true,
		After: []*batchv1.Dependency{{SetId: a.Id, AnyOutcome: true}}})).TaskSet
	st := w.start()
	if _, err := w.finish(st.CopyId, "", 2, 1); err != nil {
		t.Fatal(err)
	}
	if s := w.start(); s.SetId != anyOut.Id {
		t.Fatalf("started %v, want set %d (any outcome)", s, anyOut.Id)
	}
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: okOnly.Id})).TaskSet
	if got.State != batchv1.SetState_SET_STATE_CANCELED || got.CanceledReason != "dependency set 1 failed" {
		t.Fatalf("dependent: %v %q", got.State, got.CanceledReason)
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	for _, l := range bill.Lines {
		if l.SetId == okOnly.Id {
			t.Fatalf("a canceled waiting set was billed: %v", l)
		}
	}
}

func TestDependencyErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	a := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})).TaskSet
	idx := int32(5)
	for _, tc := range []struct {
		name string
		req  *batchv1.DiscloseRequest
		want connect.Code
	}{
		{"ErrNoSuchSet", &batchv1.DiscloseRequest{Tasks: echo(1), After: after(999)}, connect.CodeNotFound},
		{"ErrNoSuchTask", &batchv1.DiscloseRequest{Tasks: echo(1), After: []*batchv1.Dependency{{SetId: a.Id, Index: &idx}}}, connect.CodeNotFound},
		{"ErrOnAppend", &batchv1.DiscloseRequest{SetId: a.Id, Tasks: echo(1), After: after(a.Id)}, connect.CodeInvalidArgument},
		{"ErrTwice", &batchv1.DiscloseRequest{Tasks: echo(1), After: []*batchv1.Dependency{{SetId: a.Id}, {SetId: a.Id, AnyOutcome: true}}}, connect.CodeInvalidArgument},
		{"ErrBadLabel", &batchv1.DiscloseRequest{Tasks: echo(1), Labels: []*batchv1.Label{{Key: "a b", Value: "c"}}}, connect.CodeInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.tasks.Disclose(ctx(t), tc.req)
			wantCode(t, err, tc.want)
		})
	}
	// Another user cannot wait on the admin's set: it is not found.
	tok := b.addUser(t, "bob", "user")
	_, err := b.as(tok).tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), After: after(a.Id)})
	wantCode(t, err, connect.CodeNotFound)
}

// TestListTaskSetsFilters: ls's filters through the API, and only admins
// list other users' sets.
func TestListTaskSetsFilters(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	lab := []*batchv1.Label{{Key: "proj", Value: "x"}}
	x := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "render-1", Tasks: echo(1), Labels: lab})).TaskSet
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "search-1", Tasks: echo(1)}))
	c := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "render-2", Tasks: echo(1)})).TaskSet
	must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: c.Id, All: true}))
	list := func(req *batchv1.ListTaskSetsRequest) []int64 {
		t.Helper()
		res := must[*batchv1.ListTaskSetsResponse](t)(b.tasks.ListTaskSets(ctx(t), req))
		var ids []int64
		for _, s := range res.TaskSets {
			ids = append(ids, s.Id)
		}
		return ids
	}
	if got := list(&batchv1.ListTaskSetsRequest{NameGlob: "render-*", States: []batchv1.SetState{batchv1.SetState_SET_STATE_QUEUED}}); len(got) != 1 || got[0] != x.Id {
		t.Fatalf("render-* queued: %v, want [%d]", got, x.Id)
	}
	if got := list(&batchv1.ListTaskSetsRequest{States: []batchv1.SetState{batchv1.SetState_SET_STATE_CANCELED}}); len(got) != 1 || got[0] != c.Id {
		t.Fatalf("canceled: %v, want [%d]", got, c.Id)
	}
	res := must[*batchv1.ListTaskSetsResponse](t)(b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{Labels: lab}))
	if len(res.TaskSets) != 1 || res.TaskSets[0].Id != x.Id || len(res.TaskSets[0].Labels) != 1 || res.TaskSets[0].Labels[0].Value != "x" {
		t.Fatalf("label: %v", res.TaskSets)
	}
	tok := b.addUser(t, "bob", "user")
	if res := must[*batchv1.ListTaskSetsResponse](t)(b.as(tok).tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{})); len(res.TaskSets) != 0 {
		t.Fatalf("bob sees %d sets", len(res.TaskSets))
	}
	_, err := b.as(tok).tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{Owner: "admin"})
	wantCode(t, err, connect.CodePermissionDenied)
	if got := list(&batchv1.ListTaskSetsRequest{Owner: "bob"}); len(got) != 0 {
		t.Fatalf("admin listing bob's: %v", got)
	}
	_, err = b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{States: []batchv1.SetState{99}})
	wantCode(t, err, connect.CodeInvalidArgument)
}

// TestDependencyAcrossRestart: a waiting set stays waiting across a
// restart, and one whose dependency ended in the store while no pass had
// released it (the server died between the two commits) is released at
// the start.
func TestDependencyAcrossRestart(t *testing.T) {
	t.Parallel()
	dir, clk := t.TempDir(), newClock()
	b := setup(t, options{dir: dir, clock: clk})
	a := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	gate := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})).TaskSet
	onA := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true, After: after(a.Id)})).TaskSet
	onGate := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true, After: after(gate.Id)})).TaskSet
	b.close()

	// Set a's task runs and finishes in the store alone: no pass runs.
	db := store.NewDB(filepath.Join(dir, "batchd.db"))
	db.Now = clk.Now
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplyDecisions(ctx(t), []sched.Decision{{Kind: sched.DecisionStart, Copy: 1, Task: sched.TaskRef{Set: sched.SetID(a.Id)},
		Slot: sched.SlotRef{Worker: "gone"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FinishCopy(ctx(t), store.FinishInput{Worker: "gone", Copy: 1, RunSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	if set, err := db.GetTaskSet(ctx(t), "admin", sched.SetID(onA.Id)); err != nil || set.State != sched.SetWaiting {
		t.Fatalf("before the restart: %+v %v, want set %d waiting", set.State, err, onA.Id)
	}
	db.Close()

	b = setup(t, options{dir: dir, clock: clk})
	w, _ := b.worker(t, "w1", 1)
	if st := w.start(); st.SetId != onA.Id {
		t.Fatalf("started %d/%d, want set %d, released at the start", st.SetId, st.Index, onA.Id)
	}
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: onGate.Id})).TaskSet
	if got.State != batchv1.SetState_SET_STATE_WAITING {
		t.Fatalf("set %d after the restart: %v, want WAITING", onGate.Id, got.State)
	}
	why := must[*batchv1.WhyResponse](t)(b.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: onGate.Id, Indexes: []int32{0}}))
	if why.Tasks[0].Reason != batchv1.WaitReason_WAIT_REASON_WAITING_FOR_DEPENDENCY {
		t.Fatalf("why after the restart: %v", why.Tasks[0])
	}
}

// TestDependencyCanceledWhileWaiting: a waiting set whose tasks are all
// canceled waits no more, so a retry of one runs it at once.
func TestDependencyCanceledWhileWaiting(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	gate := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})).TaskSet
	dep := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true, After: after(gate.Id)})).TaskSet
	must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: dep.Id, All: true}))
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: dep.Id})).TaskSet
	if got.State != batchv1.SetState_SET_STATE_CANCELED {
		t.Fatalf("after cancel: %v", got.State)
	}
	must[*batchv1.RetryResponse](t)(b.tasks.Retry(ctx(t), &batchv1.RetryRequest{SetId: dep.Id, Indexes: []int32{0}}))
	got = must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: dep.Id})).TaskSet
	if got.State != batchv1.SetState_SET_STATE_QUEUED {
		t.Fatalf("after retry: %v, want QUEUED (no longer waiting)", got.State)
	}
	w, _ := b.worker(t, "w1", 1)
	if st := w.start(); st.SetId != dep.Id {
		t.Fatalf("started %d/%d, want the retried task of set %d", st.SetId, st.Index, dep.Id)
	}
}

// TestDependencyAfterStopRule: the loop's end: a stop rule fires on the
// first success and cancels the rest of its set, which has then ended
// well, so the set waiting for it starts.
func TestDependencyAfterStopRule(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w1", 1)
	a := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(5), Request: true,
		Stop: &batchv1.StopRule{OnSuccess: true}})).TaskSet
	dep := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true, After: after(a.Id)})).TaskSet
	st := w.start()
	if st.SetId != a.Id {
		t.Fatalf("started %d/%d, want set %d's", st.SetId, st.Index, a.Id)
	}
	w.won(st.CopyId, "found")
	if s := w.start(); s.SetId != dep.Id {
		t.Fatalf("started %d/%d, want set %d, waiting for the stopped set", s.SetId, s.Index, dep.Id)
	}
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: a.Id})).TaskSet
	if got.State != batchv1.SetState_SET_STATE_DONE || got.Counts.Canceled != 4 {
		t.Fatalf("stopped set: %v, %d canceled; want DONE, 4", got.State, got.Counts.Canceled)
	}
}
