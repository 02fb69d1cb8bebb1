package server_test

import (
	"testing"
	"time"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
)

// ReportFinishedMany answers each report as ReportFinished would: winners
// WON, a replay its first answer, a copy the worker does not hold
// FailedPrecondition and a NaN InvalidArgument, each on its own, while the
// others are recorded and billed once; a call of another token's worker
// is refused whole, and a report naming another worker alone.
func TestReportFinishedMany(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w1", 2)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "many", Tasks: echo(3), Request: true})).TaskSet
	a, c := w.start(), w.start()
	b.clock.Advance(time.Second)
	rep := func(id int64, out string) *batchv1.ReportFinishedRequest {
		return &batchv1.ReportFinishedRequest{CopyId: id, Stdout: []byte(out), RunSeconds: 1, CpuSeconds: 0.5}
	}
	nan := rep(c.CopyId, "nan")
	nan.RunSeconds = float64(0) / float64(zero())
	res, err := b.workers.ReportFinishedMany(ctx(t), &batchv1.ReportFinishedManyRequest{WorkerId: "w1", Reports: []*batchv1.ReportFinishedRequest{
		rep(a.CopyId, "a"), rep(a.CopyId+1000, "not held"), nan, rep(c.CopyId, "c"), rep(a.CopyId, "a again")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		code    connect.Code
		outcome batchv1.ReportOutcome
	}{
		{0, batchv1.ReportOutcome_REPORT_OUTCOME_WON},
		{connect.CodeFailedPrecondition, 0},
		{connect.CodeInvalidArgument, 0},
		{0, batchv1.ReportOutcome_REPORT_OUTCOME_WON},
		{0, batchv1.ReportOutcome_REPORT_OUTCOME_WON},
	}
	if len(res.Results) != len(want) {
		t.Fatalf("%d results, want %d", len(res.Results), len(want))
	}
	for i, r := range res.Results {
		if connect.Code(r.Code) != want[i].code || r.Outcome != want[i].outcome {
			t.Errorf("report %d: code %v outcome %v (%q), want %v %v", i, connect.Code(r.Code), r.Outcome, r.Message, want[i].code, want[i].outcome)
		}
	}
	out := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: c.Index}))
	if string(out.Stdout) != "c" {
		t.Fatalf("output %q, want c", out.Stdout)
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{}))
	if bill.Totals.Lines != 2 {
		t.Fatalf("%d bill lines, want 2", bill.Totals.Lines)
	}
	// The third task starts on a freed slot, and one report alone still works.
	w.won(w.start().CopyId, "third")

	other, _ := b.worker(t, "w-other", 0)
	res, err = b.workers.ReportFinishedMany(ctx(t), &batchv1.ReportFinishedManyRequest{WorkerId: other.name, Reports: []*batchv1.ReportFinishedRequest{rep(a.CopyId, "x")}})
	if err != nil || connect.Code(res.Results[0].Code) != connect.CodePermissionDenied {
		t.Fatalf("another worker's copy: %v, %v; want PermissionDenied", res, err)
	}
	_, err = b.workers.ReportFinishedMany(ctx(t), &batchv1.ReportFinishedManyRequest{WorkerId: "nobody", Reports: []*batchv1.ReportFinishedRequest{rep(a.CopyId, "x")}})
	wantCode(t, err, connect.CodeNotFound)
	res, err = b.workers.ReportFinishedMany(ctx(t), &batchv1.ReportFinishedManyRequest{WorkerId: "w1", Reports: []*batchv1.ReportFinishedRequest{{CopyId: a.CopyId, WorkerId: "w-other"}}})
	if err != nil || connect.Code(res.Results[0].Code) != connect.CodeInvalidArgument {
		t.Fatalf("a report of another worker id: %v, %v; want InvalidArgument", res, err)
	}
}

// zero is 0 where the compiler cannot see it (a NaN at run time).
func zero() int { return 0 }
