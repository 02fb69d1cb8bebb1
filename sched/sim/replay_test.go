package sim

import (
	"context"
	"math"
	"testing"

	"batchd/sched"
)

// testTrace: 2 workers of 2 slots; 12 jobs of 1–5 tasks arriving 1 s apart
// from t = 1000, each task with a recorded winner and some with a killed
// or lost copy before it; job 5 is canceled before it ran, and job 7's
// last task is disclosed and never requested.
func testTrace() *sched.Trace {
	tr := &sched.Trace{Start: 1000, Workers: []sched.TraceWorker{{ID: "a", Slots: 2, CanSuspend: true}, {ID: "b", Slots: 2}}}
	for j := range 12 {
		at := 1000 + float64(j)
		st := sched.TraceSet{ID: sched.SetID(j + 1), Owner: "u"}
		n := 1 + j%5
		for i := range n {
			tk := sched.TraceTask{Index: int32(i), DisclosedAt: at, RequestedAt: at, Copies: []float64{0.5 + float64((i*7+j*3)%10)}}
			if i%3 == 1 {
				tk.Copies = append([]float64{-0.4}, tk.Copies...)
			}
			if i%4 == 3 {
				tk.Copies = append([]float64{math.NaN()}, tk.Copies...)
			}
			switch {
			case j == 5:
				tk.CanceledAt, tk.RequestedAt, tk.Copies = at+0.001, 0, nil
			case j == 7 && i == n-1:
				tk.RequestedAt = 0
			}
			st.Tasks = append(st.Tasks, tk)
		}
		tr.Sets = append(tr.Sets, st)
	}
	return tr
}

// TestReplayEveryConfiguration replays the trace under every policy and
// speculation mode: every request but the canceled job completes, nothing
// is left unfinished, and the same seed gives the same result.
func TestReplayEveryConfiguration(t *testing.T) {
	t.Parallel()
	tr := testTrace()
	for _, p := range sched.Policies {
		for _, sp := range []sched.Speculation{sched.SpecNone, sched.SpecBestEffortLATE, sched.SpecGRASS, sched.SpecHopperGRASS} {
			cfg := sched.Config{Policy: p, Speculation: sp}
			r, err := Replay(context.Background(), tr, cfg, ReplayOptions{Seed: 3})
			if err != nil {
				t.Fatalf("%s: %v", cfg, err)
			}
			want := 11 // every job but the canceled one
			if r.Requests != want || r.Unfinished != 0 || !(r.MeanVisibleResponse > 0) {
				t.Fatalf("%s: %d requests (%d unfinished), mean %g; want %d, 0, > 0", cfg, r.Requests, r.Unfinished, r.MeanVisibleResponse, want)
			}
			again, _ := Replay(context.Background(), tr, cfg, ReplayOptions{Seed: 3})
			if again.MeanVisibleResponse != r.MeanVisibleResponse || again.SpeculativeStarted != r.SpeculativeStarted {
				t.Fatalf("%s: replay not deterministic: %g then %g", cfg, r.MeanVisibleResponse, again.MeanVisibleResponse)
			}
		}
	}
}

// TestReplayRecordedDurations: with one slot, no speculation and FCFS, a
// replay of jobs whose copies all ran to their end reproduces their
// recorded run times exactly: job k ends at the sum of the run times so
// far.
func TestReplayRecordedDurations(t *testing.T) {
	t.Parallel()
	tr := &sched.Trace{Start: 0, Workers: []sched.TraceWorker{{ID: "a", Slots: 1}}}
	durs := []float64{3, 1, 2}
	for j, d := range durs {
		tr.Sets = append(tr.Sets, sched.TraceSet{ID: sched.SetID(j + 1), Owner: "u", Tasks: []sched.TraceTask{{DisclosedAt: 10, RequestedAt: 10 + float64(j)*1e-3, Copies: []float64{d}}}})
	}
	r, err := Replay(context.Background(), tr, sched.Config{Policy: sched.PolicyFCFSxFCFS, Speculation: sched.SpecNone}, ReplayOptions{KeepJobs: true})
	if err != nil {
		t.Fatal(err)
	}
	end := 0.0
	for j, jr := range r.Jobs {
		end += durs[j]
		if want := end - float64(j)*1e-3; math.Abs(jr.Response-want) > 1e-9 {
			t.Fatalf("job %d: response %g, want %g", j, jr.Response, want)
		}
	}
}

// TestReplayGPUs: a trace's GPUs are replayed: two 1-GPU tasks of 5 s on
// a worker of 2 slots and 1 GPU run one after the other, not side by side.
func TestReplayGPUs(t *testing.T) {
	t.Parallel()
	tr := &sched.Trace{Start: 0, Workers: []sched.TraceWorker{{ID: "a", Slots: 2, GPUs: 1}}}
	tr.Sets = []sched.TraceSet{{ID: 1, Owner: "u", Tasks: []sched.TraceTask{
		{Index: 0, GPUs: 1, DisclosedAt: 10, RequestedAt: 10, Copies: []float64{5}},
		{Index: 1, GPUs: 1, DisclosedAt: 10, RequestedAt: 10, Copies: []float64{5}},
	}}}
	r, err := Replay(context.Background(), tr, sched.Config{Policy: sched.PolicyFCFSxFCFS, Speculation: sched.SpecNone}, ReplayOptions{KeepJobs: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Jobs) != 1 || math.Abs(r.Jobs[0].Response-10) > 1e-9 {
		t.Fatalf("jobs %+v, want one job answered after 10 s (the tasks share the GPU)", r.Jobs)
	}
}
