package server_test

import (
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// The ends of one ReportFinishedMany call go in one group commit, and
// batchd_finish_commits_total counts it once beside the two ends of
// batchd_copies_ended_total: their quotient is the ends a commit carries.
func TestFinishCommitsCounted(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w1", 2)
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "commits", Tasks: echo(2), Request: true}))
	a, c := w.start(), w.start()
	b.clock.Advance(time.Second)
	commits0 := metricValue(t, b.http.URL, "batchd_finish_commits_total")
	ended0 := metricValue(t, b.http.URL, "batchd_copies_ended_total")
	rep := func(id int64) *batchv1.ReportFinishedRequest {
		return &batchv1.ReportFinishedRequest{CopyId: id, RunSeconds: 1, CpuSeconds: 0.5}
	}
	if _, err := b.workers.ReportFinishedMany(ctx(t), &batchv1.ReportFinishedManyRequest{WorkerId: "w1",
		Reports: []*batchv1.ReportFinishedRequest{rep(a.CopyId), rep(c.CopyId)}}); err != nil {
		t.Fatal(err)
	}
	commits := metricValue(t, b.http.URL, "batchd_finish_commits_total") - commits0
	ended := metricValue(t, b.http.URL, "batchd_copies_ended_total") - ended0
	if commits != 1 || ended != 2 {
		t.Fatalf("%v commits of %v ends, want 1 of 2", commits, ended)
	}
}
