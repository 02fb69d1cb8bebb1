package sim

import (
	"context"
	"math"
	"testing"

	"batchd/sched"
)

func TestEventQueueOrder(t *testing.T) {
	t.Parallel()
	var q eventQueue
	r := newRNG(7)
	for i := range 2000 {
		q.push(simEvent{t: float64(r.intn(0, 50)), id: int64(i)})
	}
	prev := simEvent{t: -1}
	for q.len() > 0 {
		e := q.pop()
		if e.t < prev.t || (e.t == prev.t && e.seq < prev.seq) {
			t.Fatalf("popped (t=%g seq=%d) after (t=%g seq=%d)", e.t, e.seq, prev.t, prev.seq)
		}
		if e.t == prev.t && e.id < prev.id {
			t.Fatalf("ties not first-in first-out: id %d after %d", e.id, prev.id)
		}
		prev = e
	}
}

func TestDistributions(t *testing.T) {
	t.Parallel()
	const n = 200000
	r := newRNG(1, 2, 3)
	var se, sp float64
	for range n {
		se += r.exp(10)
		x := r.pareto(2, 3)
		if x < 2 {
			t.Fatalf("pareto draw %g below its scale", x)
		}
		sp += x
	}
	if got := se / n; math.Abs(got-10) > 0.15 {
		t.Errorf("exp mean = %g, want 10", got)
	}
	if got, want := sp/n, 2*3/2.0; math.Abs(got-want) > 0.05 {
		t.Errorf("pareto mean = %g, want %g", got, want)
	}
	p := Params{JobSizeMax: 500, JobSizeAlpha: 0.5}
	var sj float64
	for range n {
		m := p.jobSize(&r)
		if m < 1 || m > 500 {
			t.Fatalf("job size %d outside 1..500", m)
		}
		sj += float64(m)
	}
	if got, want := sj/n, p.meanJobSize(); math.Abs(got-want)/want > 0.02 {
		t.Errorf("job size mean = %g, want %g", got, want)
	}
	a, b := newRNG(5, 1), newRNG(5, 1)
	c := newRNG(5, 2)
	if a.next() != b.next() || a.next() == c.next() {
		t.Error("streams are not keyed by seed and keys")
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	s := Summarize([]float64{1, 2, 3, 4})
	// sd = 1.2910, t(3) = 3.182, hw = 3.182·1.2910/2 = 2.054.
	if s.Mean != 2.5 || math.Abs(s.HalfWidth-2.054) > 0.001 || s.Min != 1 || s.Max != 4 {
		t.Errorf("Summarize = %+v", s)
	}
	if got := cumulative("x", []float64{1, 2, 2, 4}); !equal(got.X, []float64{1, 2, 4}) || !equal(got.Y, []float64{1, 0.75, 0.25}) {
		t.Errorf("cumulative = %v %v", got.X, got.Y)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			return false
		}
	}
	return true
}

func petrou(pol sched.Policy, seed int64) Params {
	p := Defaults(WorkloadPetrou)
	p.Sched = sched.Config{Policy: pol, Speculation: sched.SpecNone}
	p.Seed = seed
	return p
}

func run(t *testing.T, p Params) Result {
	t.Helper()
	r, err := Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// One user who never discloses ahead waits exactly each task's service
// time: visible slowdown exactly 1, load = S / (S + Z).
func TestPetrouSingleUserNoQueue(t *testing.T) {
	t.Parallel()
	for _, pol := range sched.Policies {
		p := petrou(pol, 3)
		p.Users, p.SetSizeMax, p.ServiceMean, p.ThinkMean = 1, 1, 100, 900
		r := run(t, p)
		if r.Requests < 1000 {
			t.Fatalf("%s: only %d requests", pol, r.Requests)
		}
		if math.Abs(r.MeanVisibleSlowdown-1) > 1e-9 {
			t.Errorf("%s: slowdown = %.12f, want exactly 1", pol, r.MeanVisibleSlowdown)
		}
		if math.Abs(r.MeanVisibleResponse-100)/100 > 0.1 {
			t.Errorf("%s: mean visible response = %g, want about 100", pol, r.MeanVisibleResponse)
		}
		if math.Abs(r.Load-0.1) > 0.01 {
			t.Errorf("%s: load = %g, want about 0.1", pol, r.Load)
		}
		// Batch bills busy time, which the window's edges cut a little.
		if math.Abs(r.ScaledBilled-1) > 1e-3 {
			t.Errorf("%s: scaled billed = %g, want 1 (nothing ran unrequested)", pol, r.ScaledBilled)
		}
	}
}

// At Table 3's point batchactive beats interactive and batch in visible
// response time on every seed, bills exactly the requested work, and
// interactive runs nothing unrequested.
func TestPetrouTable3Ordering(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 3; seed++ {
		ba := run(t, petrou(sched.PolicySRPTxFCFS, seed))
		in := run(t, petrou(sched.PolicyInteractiveSRPT, seed))
		bt := run(t, petrou(sched.PolicyBatchSRPT, seed))
		if !(ba.MeanVisibleResponse < in.MeanVisibleResponse && ba.MeanVisibleResponse < bt.MeanVisibleResponse) {
			t.Errorf("seed %d: visible response batchactive %g, interactive %g, batch %g", seed, ba.MeanVisibleResponse, in.MeanVisibleResponse, bt.MeanVisibleResponse)
		}
		if ba.ScaledBilled != 1 || in.ScaledBilled != 1 || !(bt.ScaledBilled > 1) {
			t.Errorf("seed %d: scaled billed batchactive %g interactive %g batch %g", seed, ba.ScaledBilled, in.ScaledBilled, bt.ScaledBilled)
		}
		if in.WasteSlotSeconds > 1e-6 {
			t.Errorf("seed %d: interactive ran %g slot-s of unrequested work", seed, in.WasteSlotSeconds)
		}
		if !(ba.Load > in.Load) {
			t.Errorf("seed %d: batchactive load %g not above interactive %g", seed, ba.Load, in.Load)
		}
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	for _, w := range Workloads {
		p := Defaults(w)
		p.Seed, p.KeepJobs = 9, true
		if w != WorkloadPetrou {
			p.Warmup, p.Duration, p.Drain = 300, 1200, 3600
			p.Slots = 100
		} else {
			p.Duration = 3 * Day
		}
		a, b := run(t, p), run(t, p)
		a.WallSeconds, b.WallSeconds = 0, 0
		if a.Requests == 0 || a.MeanVisibleResponse != b.MeanVisibleResponse || a.Load != b.Load || a.Events != b.Events || a.Decisions != b.Decisions || len(a.Jobs) != len(b.Jobs) {
			t.Errorf("%s: two runs with seed 9 differ: %+v vs %+v", w, a, b)
		}
		p.Seed = 10
		if c := run(t, p); c.Events == a.Events && c.MeanVisibleResponse == a.MeanVisibleResponse {
			t.Errorf("%s: seeds 9 and 10 gave the same run", w)
		}
	}
}

// Under every speculation mode the cluster sees the same jobs (common
// random numbers), and speculation beats none when stragglers are Pareto.
func TestClusterCommonJobsAndSpeculation(t *testing.T) {
	t.Parallel()
	base := Defaults(WorkloadCluster)
	base.Slots, base.Warmup, base.Duration, base.Drain, base.JobSizeMax = 200, 300, 1800, 4*3600, 300
	base.Utilization, base.Seed, base.KeepJobs = 0.5, 4, true
	rs := map[sched.Speculation]Result{}
	for _, s := range []sched.Speculation{sched.SpecNone, sched.SpecBestEffortLATE, sched.SpecHopperGRASS} {
		p := base
		p.Sched = sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: s}
		rs[s] = run(t, p)
		if r := rs[s]; r.Unfinished != 0 || r.Requests < 100 {
			t.Errorf("%s: %d jobs done, %d unfinished", s, r.Requests, r.Unfinished)
		}
	}
	a, b := rs[sched.SpecNone].Jobs, rs[sched.SpecHopperGRASS].Jobs
	if len(a) != len(b) {
		t.Fatalf("jobs: %d vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Set != b[i].Set || a[i].Tasks != b[i].Tasks || a[i].RequestedAt != b[i].RequestedAt {
			t.Fatalf("job %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
	if rs[sched.SpecNone].SpeculativeStarted != 0 || rs[sched.SpecBestEffortLATE].SpeculativeStarted == 0 {
		t.Errorf("speculative copies: none %d, LATE %d", rs[sched.SpecNone].SpeculativeStarted, rs[sched.SpecBestEffortLATE].SpeculativeStarted)
	}
	for _, s := range []sched.Speculation{sched.SpecBestEffortLATE, sched.SpecHopperGRASS} {
		if !(rs[s].MeanVisibleResponse < rs[sched.SpecNone].MeanVisibleResponse) {
			t.Errorf("%s: mean JCT %g not below no speculation's %g", s, rs[s].MeanVisibleResponse, rs[sched.SpecNone].MeanVisibleResponse)
		}
	}
}

func TestInvalidParams(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]Params{
		"workload": {Workload: "nope"},
		"slots":    {Workload: WorkloadPetrou, Slots: -1},
		"beta":     {Workload: WorkloadCluster, Beta: 0.9},
		"change":   {Workload: WorkloadMixed, ChangeProbMax: 2},
		"policy":   {Workload: WorkloadPetrou, Sched: sched.Config{Policy: "lifo"}},
	} {
		if _, err := Run(context.Background(), p); sched.ErrorCode(err) != sched.EINVALID {
			t.Errorf("%s: err = %v, want code %s", name, err, sched.EINVALID)
		}
	}
	if _, err := RunExperiment(context.Background(), "nope", Options{}); sched.ErrorCode(err) != sched.EINVALID {
		t.Errorf("unknown experiment: err = %v", err)
	}
}

func TestRunAllKeepsOrder(t *testing.T) {
	t.Parallel()
	var ps []Params
	for i := range 6 {
		p := petrou(sched.Policies[i], int64(i+1))
		p.Duration = 2 * Day
		ps = append(ps, p)
	}
	rs, err := RunAll(context.Background(), ps, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if want := run(t, p); rs[i].Events != want.Events || rs[i].MeanVisibleResponse != want.MeanVisibleResponse {
			t.Errorf("run %d: parallel result differs from a sequential one", i)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunAll(ctx, ps, 2, nil); err == nil {
		t.Error("RunAll with a canceled context: no error")
	}
}

func TestExperimentsQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every experiment")
	}
	t.Parallel()
	for _, name := range ExperimentNames {
		rep, err := RunExperiment(context.Background(), name, Options{Quick: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(rep.Claims) == 0 || len(rep.Figures) == 0 || len(rep.Tables) == 0 || rep.Runs == 0 {
			t.Errorf("%s: %d claims, %d figures, %d tables, %d runs", name, len(rep.Claims), len(rep.Figures), len(rep.Tables), rep.Runs)
		}
		for _, f := range rep.Figures {
			for _, s := range f.Series {
				if len(s.X) != len(s.Y) || (s.YLo != nil && len(s.YLo) != len(s.Y)) {
					t.Errorf("%s/%s/%s: ragged series", name, f.ID, s.Name)
				}
			}
		}
	}
}

// Batch users cannot withdraw what they submitted (Petrou's reading): an
// abandoned set runs on and is billed, so they pay more than users who may
// cancel, and more than batchactive users.
func TestBatchUsersCannotCancel(t *testing.T) {
	t.Parallel()
	for _, pol := range []sched.Policy{sched.PolicyBatchFCFS, sched.PolicyBatchSRPT, sched.PolicyBatchSRPTTask} {
		t.Run(string(pol), func(t *testing.T) { batchUsersCannotCancel(t, pol) })
	}
}

func batchUsersCannotCancel(t *testing.T, pol sched.Policy) {
	t.Parallel()
	p := petrou(pol, 2)
	p.Users, p.ChangeProbMax, p.SetSizeMax, p.ServiceMean, p.ThinkMean = 4, 0.4, 19, 380, 7220
	stuck := run(t, p)
	p.BatchCancels = true
	free := run(t, p)
	p.Sched.Policy = sched.PolicySRPTxFCFS
	ba := run(t, p)
	if !(stuck.ScaledBilled > free.ScaledBilled && free.ScaledBilled > 1 && ba.ScaledBilled == 1) {
		t.Errorf("scaled billed: batch %g, batch with cancels %g, batchactive %g", stuck.ScaledBilled, free.ScaledBilled, ba.ScaledBilled)
	}
	if !(stuck.Load > free.Load) {
		t.Errorf("load: batch %g not above batch with cancels %g", stuck.Load, free.Load)
	}
}

// Failing workers lose copies; their tasks run again, every request is
// still answered, and nobody pays for lost work.
func TestWorkerFailures(t *testing.T) {
	t.Parallel()
	p := Defaults(WorkloadMixed)
	p.Seed, p.Warmup, p.Duration = 5, 600, 4*3600
	p.WorkerMTBF, p.WorkerRepair = 1800, 120
	p.Sched = sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecHopperGRASS}
	r := run(t, p)
	if r.LostCopies == 0 || r.Requests < 100 {
		t.Errorf("%d copies lost, %d requests answered", r.LostCopies, r.Requests)
	}
	if r.ScaledBilled != 1 {
		t.Errorf("scaled billed = %g, want 1", r.ScaledBilled)
	}
	q := petrou(sched.PolicyInteractiveSRPT, 5)
	q.WorkerMTBF, q.WorkerRepair, q.Duration = 3*3600, 300, 4*Day
	r = run(t, q)
	if r.LostCopies == 0 || !(r.WasteSlotSeconds > 0) || r.ScaledBilled != 1 {
		t.Errorf("petrou with failures: lost %d, waste %g, scaled billed %g", r.LostCopies, r.WasteSlotSeconds, r.ScaledBilled)
	}
}

// TestSingleJob is the Fig. 3 setup: one job alone at time 0. Without
// speculation a job on T slots runs every task at once, so slots beyond T
// change nothing and half as many slots (two waves) cannot be faster; the
// grass mode's copies make it faster on the same draws.
func TestSingleJob(t *testing.T) {
	t.Parallel()
	const T = 40
	jct := func(slots int, spec sched.Speculation) Result {
		p := Defaults(WorkloadCluster)
		p.SingleJob, p.Warmup, p.Slots, p.Seed, p.KeepJobs = T, -1, slots, 3, true
		p.Sched = sched.Config{Speculation: spec}
		r := run(t, p)
		if r.Requests != 1 || len(r.Jobs) != 1 || r.Jobs[0].Tasks != T || r.Jobs[0].RequestedAt != 0 || r.Unfinished != 0 {
			t.Fatalf("%d slots, %s: %d requests, jobs %+v, %d unfinished; want the one job of %d tasks at 0, done", slots, spec, r.Requests, r.Jobs, r.Unfinished, T)
		}
		return r
	}
	full, double, half := jct(T, sched.SpecNone), jct(2*T, sched.SpecNone), jct(T/2, sched.SpecNone)
	if full.MeanVisibleResponse != double.MeanVisibleResponse {
		t.Errorf("no speculation: JCT %g on %d slots, %g on %d: extra slots changed a one-wave job", full.MeanVisibleResponse, T, double.MeanVisibleResponse, 2*T)
	}
	if half.MeanVisibleResponse < full.MeanVisibleResponse {
		t.Errorf("no speculation: JCT %g on %d slots below %g on %d", half.MeanVisibleResponse, T/2, full.MeanVisibleResponse, T)
	}
	if g := jct(T, sched.SpecGRASS); !(g.MeanVisibleResponse < full.MeanVisibleResponse) || g.SpeculativeStarted == 0 {
		t.Errorf("grass: JCT %g with %d copies, want below %g", g.MeanVisibleResponse, g.SpeculativeStarted, full.MeanVisibleResponse)
	}
}

// SetSizePerSet draws tasks per set for every set: one user who never
// changes course then requests sets of many sizes; by default the user's
// sets all have the one size drawn for that user.
func TestSetSizePerSet(t *testing.T) {
	t.Parallel()
	for _, perSet := range []bool{false, true} {
		p := petrou(sched.PolicySRPTxFCFS, 2)
		p.Users, p.ChangeProbMax, p.SetSizeMax, p.ServiceMean, p.ThinkMean = 1, 0, 19, 100, 100
		p.SetSizePerSet, p.KeepJobs = perSet, true
		r := run(t, p)
		last := map[int32]int32{} // set → largest request position seen
		for _, j := range r.Jobs {
			last[j.Set] = max(last[j.Set], j.Group+1)
		}
		sizes := map[int32]bool{}
		for set, n := range last {
			if _, next := last[set+1]; next { // a set the window saw end
				sizes[n] = true
			}
		}
		if perSet && len(sizes) < 5 {
			t.Errorf("per set: %d distinct set sizes %v, want many", len(sizes), sizes)
		}
		if !perSet && len(sizes) != 1 {
			t.Errorf("per user: distinct set sizes %v, want one", sizes)
		}
	}
}

// The node-level model: a copy on a slow worker takes NodeSlowdown times
// its draw (same draws, one worker, no speculation: exactly 4× the JCT);
// a skewed task's copies share its duration, so cloning buys it nothing;
// progress heartbeats add events but change no duration.
func TestNodeModel(t *testing.T) {
	t.Parallel()
	run := func(mod func(*Params)) Result {
		t.Helper()
		p := Defaults(WorkloadCluster)
		p.SingleJob, p.Warmup, p.Slots, p.SlotsPerWorker, p.Seed = 10, -1, 10, 10, 3
		p.Sched = sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecNone}
		mod(&p)
		r, err := Run(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain := run(func(*Params) {})
	slow := run(func(p *Params) { p.NodeSlowFrac = 1 })
	if r := slow.MeanVisibleResponse / plain.MeanVisibleResponse; math.Abs(r-4) > 1e-9 {
		t.Errorf("every worker slow: JCT ratio %g, want 4", r)
	}
	hb := run(func(p *Params) { p.ProgressEvery = 1 })
	if hb.MeanVisibleResponse != plain.MeanVisibleResponse || hb.Events <= plain.Events {
		t.Errorf("heartbeats: JCT %g (want %g), events %d (want more than %d)", hb.MeanVisibleResponse, plain.MeanVisibleResponse, hb.Events, plain.Events)
	}
	clone := func(skew float64) Result {
		return run(func(p *Params) {
			p.Slots, p.TaskSkew = 40, skew
			p.Sched.Speculation = sched.SpecClone
		})
	}
	if c := clone(1); c.MeanVisibleResponse != plain.MeanVisibleResponse {
		t.Errorf("every task skewed: cloning gives JCT %g, want %g (no copy escapes)", c.MeanVisibleResponse, plain.MeanVisibleResponse)
	}
	if c := clone(0); c.MeanVisibleResponse >= plain.MeanVisibleResponse {
		t.Errorf("no skew: cloning gives JCT %g, not below %g", c.MeanVisibleResponse, plain.MeanVisibleResponse)
	}
}

// PlacementSeed renames the workers and nothing else: the same jobs arrive
// at the same times with the same sizes, a run is reproducible, and some
// jobs finish at other times (ties between equally free workers fall
// elsewhere, so copies meet other slow workers). FullShare is a share.
func TestPlacementSeed(t *testing.T) {
	t.Parallel()
	run := func(seed int64) Result {
		t.Helper()
		p := Defaults(WorkloadCluster)
		NodeModel.Apply(&p)
		p.Slots, p.Warmup, p.Duration, p.Drain, p.JobSizeMax, p.Seed = 64, 300, 1800, 3600, 40, 2
		p.Sched = sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecHopperGRASS}
		p.KeepJobs, p.PlacementSeed = true, seed
		r, err := Run(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b, b2 := run(0), run(1), run(1)
	if len(a.Jobs) < 20 || len(a.Jobs) != len(b.Jobs) {
		t.Fatalf("jobs: %d and %d, want the same number (at least 20)", len(a.Jobs), len(b.Jobs))
	}
	differ := 0
	for i := range a.Jobs {
		x, y := a.Jobs[i], b.Jobs[i]
		if x.Set != y.Set || x.Tasks != y.Tasks || x.RequestedAt != y.RequestedAt {
			t.Fatalf("job %d: %+v against %+v: the workload changed", i, x, y)
		}
		if x.Response != y.Response {
			differ++
		}
		if y.Response != b2.Jobs[i].Response {
			t.Fatalf("job %d: %g then %g under the same placement seed", i, y.Response, b2.Jobs[i].Response)
		}
	}
	if differ == 0 {
		t.Errorf("no job finished at another time with the workers renamed")
	}
	for _, r := range []Result{a, b} {
		if r.FullShare < 0 || r.FullShare > 1 {
			t.Errorf("FullShare %g outside [0, 1]", r.FullShare)
		}
	}
}

// FullShare is the share of the window with every slot busy: one job of 40
// tasks keeps 10 slots all busy for longer than 20 slots (at least three
// waves of copies of at least x_m against one), and on 80 slots no moment
// has every slot busy.
func TestFullShare(t *testing.T) {
	t.Parallel()
	run := func(slots int) Result {
		t.Helper()
		p := Defaults(WorkloadCluster)
		p.SingleJob, p.Warmup, p.Slots, p.SlotsPerWorker, p.Seed = 40, -1, slots, 10, 3
		p.Sched = sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecNone}
		r, err := Run(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	f10, f20, f80 := run(10).FullShare, run(20).FullShare, run(80).FullShare
	if f10 <= f20 || f20 <= 0 || f10 > 1 {
		t.Errorf("every slot busy: %.4f of the window on 10 slots, %.4f on 20; want 0 < the second < the first ≤ 1", f10, f20)
	}
	if f80 != 0 {
		t.Errorf("40 tasks on 80 slots: every slot busy %.4f of the time, want 0", f80)
	}
}

// TestChainedJobs: with ChainProb, jobs wait for the job before them
// (sched's waiting sets, released by EventWaitEnded): a chained job
// finishes no earlier than the job it waited for, every job finishes, and
// waiting makes responses longer than the same arrivals without chains.
func TestChainedJobs(t *testing.T) {
	t.Parallel()
	p := Defaults(WorkloadCluster)
	p.Seed, p.KeepJobs, p.Duration, p.ChainProb = 5, true, 3000, 0.5
	r := run(t, p)
	done := map[int32]float64{}
	for _, j := range r.Jobs {
		done[j.Set] = j.RequestedAt + j.Response
	}
	chained := 0
	for _, j := range r.Jobs {
		if j.After == 0 {
			continue
		}
		chained++
		if end, ok := done[j.After]; ok && j.RequestedAt+j.Response < end {
			t.Fatalf("job %d ended at %g, before job %d it waited for (%g)", j.Set, j.RequestedAt+j.Response, j.After, end)
		}
	}
	if chained == 0 {
		t.Fatal("no job was chained")
	}
	free := p
	free.ChainProb = 0
	if rf := run(t, free); !(r.MeanVisibleResponse > rf.MeanVisibleResponse) {
		t.Errorf("mean response %g with chains, %g without: waiting cost nothing", r.MeanVisibleResponse, rf.MeanVisibleResponse)
	}
	bad := p
	bad.Workload, bad.ChainProb = WorkloadPetrou, 0.5
	if _, err := Run(context.Background(), bad.withDefaults()); sched.ErrorCode(err) != sched.EINVALID {
		t.Errorf("chains on petrou: %v, want %s", err, sched.EINVALID)
	}
}
