package sim

import (
	"math"
	"testing"

	"batchd/sched"
)

// Every closed-loop run counts the requests made in its window, delivered
// or not: a request still waiting at the end counts with its response so
// far, and one made during the warm-up does not count even when delivered
// in the window.
func TestPetrouCountsRequestedInWindow(t *testing.T) {
	t.Parallel()
	p := petrou(sched.PolicySRPTxFCFS, 4)
	// 16 users offering 16·3,000/(3,000+20) ≈ 16× what the server does:
	// requested work alone fills it, and SRPT leaves long tasks waiting.
	p.Users, p.ChangeProbMax, p.SetSizeMax, p.ServiceMean, p.ThinkMean = 16, 0, 1, 3000, 20
	p.Warmup, p.Duration, p.KeepJobs = 2*Day, 2*Day, true
	if !requestedFills(p) {
		t.Fatal("the overloaded point does not fill the server")
	}
	r := run(t, p)
	if r.Censored == 0 || r.Censored > p.Users {
		t.Fatalf("%d requests censored, want 1..%d (one open request per user)", r.Censored, p.Users)
	}
	if len(r.Jobs) != r.Requests {
		t.Fatalf("%d jobs kept, %d requests", len(r.Jobs), r.Requests)
	}
	end := p.Warmup + p.Duration
	sum, cens := 0.0, 0
	for _, j := range r.Jobs {
		if j.RequestedAt < p.Warmup || j.RequestedAt > end {
			t.Fatalf("request at %g counted outside the window [%g, %g]", j.RequestedAt, p.Warmup, end)
		}
		if j.Censored {
			cens++
			if math.Abs(j.Response-(end-j.RequestedAt)) > 1e-6 {
				t.Errorf("censored request at %g: response %g, want %g", j.RequestedAt, j.Response, end-j.RequestedAt)
			}
		}
		sum += j.Response
	}
	if cens != r.Censored {
		t.Errorf("%d jobs marked censored, Result.Censored %d", cens, r.Censored)
	}
	if math.Abs(sum/float64(len(r.Jobs))-r.MeanVisibleResponse) > 1e-6*r.MeanVisibleResponse {
		t.Errorf("mean over kept jobs %g, MeanVisibleResponse %g", sum/float64(len(r.Jobs)), r.MeanVisibleResponse)
	}
	// Throughput still counts what was delivered in the window.
	if got := float64(r.Tasks) / (p.Duration / 3600); math.Abs(got-r.ThroughputPerHour) > 1e-9 {
		t.Errorf("throughput %g, want %g", r.ThroughputPerHour, got)
	}
}

// requestedFills splits Table 2's grid where N·S/(S+T) reaches 1.
func TestRequestedFills(t *testing.T) {
	p := Defaults(WorkloadPetrou)
	for _, c := range []struct {
		users          int
		service, think float64
		want           bool
	}{{4, 20, 18020, false}, {4, 1000, 3000, true}, {4, 1000, 3001, false}, {16, 380, 3620, true}, {8, 20, 3620, false}} {
		p.Users, p.ServiceMean, p.ThinkMean = c.users, c.service, c.think
		if got := requestedFills(p); got != c.want {
			t.Errorf("%d users, service %g, think %g: fills %v, want %v", c.users, c.service, c.think, got, c.want)
		}
	}
	n := 0
	for _, p := range PetrouGrid() {
		if requestedFills(p) {
			n++
		}
	}
	if n != 2040 {
		t.Errorf("%d of the grid's points filled by requested work, want 2,040", n)
	}
}

// The sweep runs the paper's reading: the Fig. 4–6 baselines draw task
// counts per user, and their batch users cancel; batchactive and
// interactive draw per user too.
func TestSweepPaperArms(t *testing.T) {
	arms := map[string]sweepArm{}
	for _, a := range sweepArms {
		if _, dup := arms[a.label]; dup {
			t.Fatalf("arm %q twice", a.label)
		}
		arms[a.label] = a
	}
	for _, l := range []string{"srpt×fcfs" + perUserArm, "interactive-srpt" + perUserArm, "fcfs×fcfs" + perUserArm, "interactive-fcfs" + perUserArm, "batch-srpt-task" + paperArm, "batch-fcfs" + paperArm} {
		a, ok := arms[l]
		if !ok {
			t.Fatalf("no arm %q", l)
		}
		batch := a.pol == sched.PolicyBatchFCFS || a.pol == sched.PolicyBatchSRPTTask
		if a.perSet || a.cancels != batch || !a.preempt {
			t.Errorf("arm %q: %+v", l, a)
		}
		var p Params
		a.apply(&p)
		if p.SetSizePerSet || p.BatchCancels != batch || p.Sched.Policy != a.pol {
			t.Errorf("arm %q applied: per set %v, cancels %v, policy %s", l, p.SetSizePerSet, p.BatchCancels, p.Sched.Policy)
		}
	}
}
