package server_test

import (
	"math"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// The β the server reports is the Hill fit of the run times its workers
// reported and the store kept, not of the time between the server's start
// decision and the report's arrival: here each report arrives 0.15 s after
// its copy ended (the fork, the report's trip), which must not lengthen the
// samples (a live β of 1.41-1.46 where the stored durations give
// 1.30-1.36, when they did).
func TestBetaFitsReportedRunTimes(t *testing.T) {
	t.Parallel()
	// Pareto(β 1.259, scale 0.3 s) quantiles: their Hill fit is 1.24; the
	// same run times 0.15 s longer fit 1.36.
	const n = 32
	runs := make([]float64, n)
	for i := range runs {
		runs[i] = 0.3 * math.Pow(1-(float64(i)+0.5)/n, -1/1.259)
	}
	b := setup(t, options{sched: sched.Config{BetaMinSamples: n}})
	w, _ := b.worker(t, "w", 1)
	for _, run := range runs {
		must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true}))
		st := w.start()
		b.clock.Advance(time.Duration((run + 0.15) * float64(time.Second)))
		if res, err := w.finish(st.CopyId, "x", 0, run); err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
			t.Fatalf("finish: %v %v", res, err)
		}
	}
	cl := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	want := sched.Hill(runs, nil)
	if got := cl.Metrics.Beta; cl.Metrics.BetaSamples != n || math.Abs(got-want) > 1e-9 {
		t.Fatalf("β %g from %d samples, want %g (Hill of the reported run times) from %d", got, cl.Metrics.BetaSamples, want, n)
	}
}
