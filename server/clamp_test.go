package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/store"
)

// metricsText returns the server's /metrics page.
func metricsText(t *testing.T, b *bundle) string {
	t.Helper()
	res, err := http.Get(b.http.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// billLine returns the one charge line of set.
func billLine(t *testing.T, b *bundle, set int64) *batchv1.BillLine {
	t.Helper()
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{SetId: set, IncludeLines: true}))
	if len(bill.Lines) != 1 {
		t.Fatalf("set %d: %d bill lines, want 1", set, len(bill.Lines))
	}
	return bill.Lines[0]
}

// A worker that reports ten times the run time the server saw is billed
// what the server saw (plus its allowance), the line says so, and
// /metrics counts the clamp against that worker; honest reports, also
// within the allowance, are billed as reported.
func TestBillClampForgedRunTime(t *testing.T) {
	t.Parallel()
	b := setup(t, options{prices: store.Prices{SlotSecond: 1}})
	liar, _ := b.worker(t, "liar", 1)
	forged := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	st := liar.start()
	honest, _ := b.worker(t, "honest", 2)
	fair := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2), Request: true})).TaskSet
	h0, h1 := honest.start(), honest.start()
	b.clock.Advance(10 * time.Second)

	if res, err := liar.finish(st.CopyId, "x", 0, 100); err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
		t.Fatalf("forged report: %v %v", res, err)
	}
	l := billLine(t, b, forged.Id)
	observed := 10 + store.ClampAllowance(10)
	if !l.Clamped || l.SlotSeconds != observed || l.ReportedSlotSeconds != 100 || l.Amount != observed {
		t.Fatalf("forged report billed %v, want %g s clamped from 100 s", l, observed)
	}
	out := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: forged.Id}))
	if out.SlotSeconds != observed {
		t.Fatalf("output keeps %g slot-seconds, want %g", out.SlotSeconds, observed)
	}

	// Honest: exactly the 10 s seen, and a little over it (the worker's
	// clock runs fast) within the allowance.
	for _, c := range []struct {
		st  *batchv1.StartCopy
		run float64
	}{{h0, 10}, {h1, 10.9}} {
		if res, err := honest.finish(c.st.CopyId, "y", 0, c.run); err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
			t.Fatalf("honest report: %v %v", res, err)
		}
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{SetId: fair.Id, IncludeLines: true}))
	for i, l := range bill.Lines {
		if want := []float64{10, 10.9}[i]; l.Clamped || l.SlotSeconds != want || l.ReportedSlotSeconds != want {
			t.Fatalf("honest line %d: %v, want %g s not clamped", i, l, want)
		}
	}

	m := metricsText(t, b)
	if !strings.Contains(m, `batchd_bill_clamps_total{worker="liar"} 1`) || strings.Contains(m, `batchd_bill_clamps_total{worker="honest"}`) {
		t.Fatalf("/metrics clamps:\n%s", grepLines(m, "batchd_bill_clamps_total"))
	}
}

// A copy the server suspended is not billed for its suspension, even when
// its worker counts it as run time: the disclosed copy ran 3 s, was
// suspended 100 s for requested work, ran 5 s more, and reports 108 s;
// requesting it later bills the 8 s the server saw.
func TestBillClampSuspension(t *testing.T) {
	t.Parallel()
	b := setup(t, options{prices: store.Prices{SlotSecond: 1}})
	w, _ := b.worker(t, "w", 1)
	disc := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})).TaskSet
	dc := w.start()
	b.clock.Advance(3 * time.Second)
	req := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	if m := w.next(); m.GetSuspend() != dc.CopyId {
		t.Fatalf("want suspend of %d, got %v", dc.CopyId, m)
	}
	rc := w.start()
	b.clock.Advance(100 * time.Second)
	if res, err := w.finish(rc.CopyId, "r", 0, 100); err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
		t.Fatalf("requested copy: %v %v", res, err)
	}
	if m := w.next(); m.GetResume() != dc.CopyId {
		t.Fatalf("want resume of %d, got %v", dc.CopyId, m)
	}
	b.clock.Advance(5 * time.Second)
	if res, err := w.finish(dc.CopyId, "d", 0, 108); err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
		t.Fatalf("suspended copy: %v %v", res, err)
	}
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: disc.Id, All: true}))
	l := billLine(t, b, disc.Id)
	want := 8 + store.ClampAllowance(8)
	if !l.Clamped || l.SlotSeconds != want || l.ReportedSlotSeconds != 108 || l.Reason != "executed-then-requested" {
		t.Fatalf("suspended copy billed %v, want %g s clamped from 108 s", l, want)
	}
	if l := billLine(t, b, req.Id); l.Clamped || l.SlotSeconds != 100 {
		t.Fatalf("requested copy billed %v, want 100 s", l)
	}
	checkLedger(t, b.dir)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
