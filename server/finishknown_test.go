package server_test

import (
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// The server gives the store its memory of the copies it started, and a
// group commit of their ends writes from it (no read first).
func TestFinishFromMemory(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w1", 2)
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "memory", Tasks: echo(2), Request: true}))
	a, c := w.start(), w.start()
	b.clock.Advance(time.Second)
	reportBothEnds(t, b, a.CopyId, c.CopyId, "")
	set := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: a.SetId}))
	if got := set.GetTaskSet().GetCounts().GetFinished(); got != 2 {
		t.Fatalf("%d tasks finished, want 2", got)
	}
}

// A copy ordered killed (its task canceled) that ends by itself before
// the kill reaches it: its end goes one by one, and its group's other
// ends are still written from memory, not rolled back as stale.
func TestFinishKilledCopyNotStale(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w1", 2)
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "memory", Tasks: echo(2), Request: true}))
	a, c := w.start(), w.start()
	if _, err := b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: a.SetId, Indexes: []int32{a.Index}}); err != nil {
		t.Fatal(err)
	}
	if k := w.next(); k.GetKill() != a.CopyId {
		t.Fatalf("order after the cancel: %v, want the kill of copy %d", k, a.CopyId)
	}
	b.clock.Advance(time.Second)
	reportBothEnds(t, b, a.CopyId, c.CopyId, " (the other copy's end)")
	set := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: a.SetId}))
	if got := set.GetTaskSet().GetCounts(); got.GetFinished() != 1 || got.GetCanceled() != 1 {
		t.Fatalf("counts %v, want 1 finished and 1 canceled", got)
	}
}

// reportBothEnds reports copies a and c ended in one batch and checks that
// one group commit was written from the server's memory (why says which
// ends) and none found it stale.
func reportBothEnds(t *testing.T, b *bundle, a, c int64, why string) {
	t.Helper()
	rep := func(id int64) *batchv1.ReportFinishedRequest {
		return &batchv1.ReportFinishedRequest{CopyId: id, RunSeconds: 1, CpuSeconds: 0.5}
	}
	if _, err := b.workers.ReportFinishedMany(ctx(t), &batchv1.ReportFinishedManyRequest{WorkerId: "w1",
		Reports: []*batchv1.ReportFinishedRequest{rep(a), rep(c)}}); err != nil {
		t.Fatal(err)
	}
	if n := metricValue(t, b.http.URL, "batchd_finish_commits_from_memory_total"); n != 1 {
		t.Fatalf("%v commits from memory, want 1%s", n, why)
	}
	if n := metricValue(t, b.http.URL, "batchd_finish_memory_stale_total"); n != 0 {
		t.Fatalf("%v commits found memory stale, want 0", n)
	}
}
