package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// Free work is reported in the same four parts, under the same names, by
// the bill, the cluster's live metrics and /metrics: a disclosed task's
// winner is executed_unrequested, a copy killed because its task was
// canceled is canceled, a copy its worker came back without is
// lost_with_worker, and none of them is speculative_lost.
func TestFreeWorkFourParts(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 2)
	d := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2)})).TaskSet
	d0, d1 := w.start(), w.start()
	b.clock.Advance(4 * time.Second)
	w.won(d0.CopyId, "") // 2 s executed, never requested
	must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: d.Id, Indexes: []int32{1}}))
	if m := w.next(); m.GetKill() != d1.CopyId {
		t.Fatalf("want kill of %d, got %v", d1.CopyId, m)
	}
	if res, err := w.finish(d1.CopyId, "", 137, 3); err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_DISCARDED {
		t.Fatalf("canceled copy: %v %v", res, err)
	}
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true}))
	w.start()
	b.clock.Advance(5 * time.Second)
	// The worker comes back without it: lost, 5 s by the server's clock.
	must[*batchv1.RegisterResponse](t)(b.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "w", Slots: 2}))

	want := &batchv1.FreeWork{ExecutedUnrequestedSlotSeconds: 2, CanceledSlotSeconds: 3, LostWithWorkerSlotSeconds: 5}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{}))
	if !proto.Equal(bill.Totals.Free, want) || bill.Totals.FreeSlotSeconds != 10 {
		t.Errorf("bill: free %v (total %g), want %v", bill.Totals.Free, bill.Totals.FreeSlotSeconds, want)
	}
	cl := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if !proto.Equal(cl.Metrics.Free, want) || cl.Metrics.FreeSlotSeconds != 10 {
		t.Errorf("cluster: free %v (total %g), want %v", cl.Metrics.Free, cl.Metrics.FreeSlotSeconds, want)
	}
	m := metricsText(t, b)
	for p, v := range map[sched.FreePart]float64{sched.FreeExecutedUnrequested: 2, sched.FreeSpeculativeLost: 0, sched.FreeCanceled: 3, sched.FreeLostWithWorker: 5} {
		if line := fmt.Sprintf("batchd_free_slot_seconds_total{part=%q} %g\n", p, v); !strings.Contains(m, line) {
			t.Errorf("/metrics lacks %q:\n%s", line, grepLines(m, "batchd_free_slot_seconds_total"))
		}
	}
}
