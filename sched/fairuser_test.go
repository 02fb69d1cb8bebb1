package sched

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// oneOwner rewrites a workload so that every set belongs to one user.
func oneOwner(script []scripted) []scripted {
	out := slices.Clone(script)
	for i := range out {
		if out[i].ev.Kind == EventDisclosed {
			out[i].ev.Owner = "solo"
		}
	}
	return out
}

// TestFairShareOneUserIdentical: with one user, fair share decides exactly
// what the scheduler without it decides, for every property configuration
// and random workload (start, kill, suspend, resume, same copies, slots and
// reasons, at the same times).
func TestFairShareOneUserIdentical(t *testing.T) {
	t.Parallel()
	cfgs := append(slices.Clone(propertyConfigs), Config{PreemptRequested: true}, Config{PreemptRequested: true, DisclosedFairShare: true})
	for ci, cfg := range cfgs {
		t.Run(fmt.Sprintf("%d-%s", ci, cfg.String()), func(t *testing.T) {
			t.Parallel()
			for seed := int64(1); seed <= 40; seed++ {
				var logs [2]string
				for k, fair := range []bool{false, true} {
					c := cfg
					c.Seed = seed
					c.FairShare = fair
					script, dur := workload(seed)
					d := newDriver(t, c)
					d.dur = dur
					d.tick = 1
					d.progress = seed%2 == 0
					playScript(d, oneOwner(script), math.Inf(1))
					d.run(10000)
					logs[k] = d.logString()
				}
				if logs[0] != logs[1] {
					t.Fatalf("seed %d: one user, fair share decided differently:\n--- off\n%s\n--- on\n%s", seed, logs[0], logs[1])
				}
			}
		})
	}
}

// fairWorkload is a random multi-user scenario: 2–5 users with weights
// 1–3, sets of plain tasks disclosed and requested over time, one user
// flooding with one-task sets.
func fairWorkload(seed int64) (script []scripted, weights map[string]float64, dur func(TaskRef, int, bool) float64) {
	r := rand.New(rand.NewSource(seed))
	for w := range 2 {
		script = append(script, scripted{at: 0, ev: Event{Kind: EventWorkerUp, Worker: WorkerID(fmt.Sprintf("w%d", w)), Slots: int32(1 + r.Intn(4)), CanSuspend: r.Intn(2) == 0}})
	}
	nu := 2 + r.Intn(4)
	weights = map[string]float64{}
	for u := range nu {
		weights[fmt.Sprintf("u%d", u)] = float64(1 + r.Intn(3))
	}
	id := SetID(0)
	for range 4 + r.Intn(8) {
		id++
		n := 1 + r.Intn(20)
		ts := make([]TaskInfo, n)
		for k := range ts {
			ts[k] = TaskInfo{Index: int32(k)}
			if r.Intn(2) == 0 {
				ts[k].EstimateSeconds = float64(1 + r.Intn(6))
			}
		}
		at := math.Round(r.Float64()*30*4) / 4
		owner := fmt.Sprintf("u%d", r.Intn(nu))
		script = append(script, scripted{at: at, ev: Event{Kind: EventDisclosed, Set: id, Owner: owner, Tasks: ts}})
		script = append(script, scripted{at: at + math.Round(r.Float64()*10*4)/4, ev: Event{Kind: EventRequested, Set: id}})
	}
	// The flood: u0 requests a one-task set every quarter unit for 20 units.
	for k := range 80 {
		id++
		at := 2 + float64(k)/4
		script = append(script, scripted{at: at, ev: Event{Kind: EventDisclosed, Set: id, Owner: "u0", Tasks: tasksWithEstimate(1, 0.5)}})
		script = append(script, scripted{at: at, ev: Event{Kind: EventRequested, Set: id}})
	}
	slices.SortStableFunc(script, func(a, b scripted) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	dr := rand.New(rand.NewSource(seed ^ 0xfa1))
	durs := map[[3]int]float64{}
	dur = func(ref TaskRef, n int, spec bool) float64 {
		k := [3]int{int(ref.Set), int(ref.Index), n}
		if d, ok := durs[k]; ok {
			return d
		}
		d := math.Ceil(math.Pow(1-dr.Float64(), -1/1.5)*4) / 4
		durs[k] = min(d, 20)
		return durs[k]
	}
	return script, weights, dur
}

// fairCheck verifies fair share after a Decide: the incremental counters
// match a recount, and the bound of fairshare.go holds. The bound: when
// user v got a slot (start or resume of a requested copy) in this Decide
// and user u still has queued requested work that could run (a set below
// its cap), then (held_v − 1)/w_v ≤ held_u/w_u: v was the most deprived
// waiting user, by held slots per weight, when it took its last slot, so
// nobody waiting is more than one slot (of v's) behind v.
func fairCheck(weights map[string]float64) func(d *driver, ds []Decision) {
	return func(d *driver, ds []Decision) {
		checkInvariants(d, ds)
		s := d.s
		held, queued, runnable := map[string]int{}, map[string]int{}, map[string]bool{}
		for _, c := range s.copies {
			if c.state == cRunning && s.reqClass(c.task) {
				held[c.task.set.owner] += c.slots()
			}
		}
		for _, st := range s.sets {
			queued[st.owner] += st.rq.len()
			if st.rq.len() > 0 && !s.capped(st) {
				runnable[st.owner] = true
			}
		}
		for name, u := range s.fair.users {
			if u.held != held[name] || u.queued != queued[name] {
				d.t.Fatalf("t=%g: user %s counted held %d queued %d, recount %d, %d", d.now, name, u.held, u.queued, held[name], queued[name])
			}
		}
		checkUserHeap(d, s)
		got := map[string]bool{}
		for _, x := range ds {
			if x.Kind != DecisionStart && x.Kind != DecisionResume {
				continue
			}
			st := s.sets[x.Task.Set]
			if st == nil {
				continue
			}
			if t := st.task(x.Task.Index); t != nil && s.reqClass(t) {
				got[st.owner] = true
			}
		}
		for v := range got {
			for u := range runnable {
				if u == v {
					continue
				}
				if float64(held[v]-1)/weights[v] > float64(held[u])/weights[u]+1e-9 {
					d.t.Fatalf("t=%g: %s (weight %g) took a slot and holds %d while %s (weight %g) waits holding %d\n%+v", d.now, v, weights[v], held[v], u, weights[u], held[u], ds)
				}
			}
		}
	}
}

// TestFairShareProperty runs random multi-user workloads with a flooding
// user and checks fairCheck after every Decide, and that all work ends.
func TestFairShareProperty(t *testing.T) {
	t.Parallel()
	cfgs := []Config{
		{FairShare: true},
		{FairShare: true, Speculation: SpecNone},
		{FairShare: true, Preemption: PreemptKill, Speculation: SpecBestEffortLATE},
		{FairShare: true, Speculation: SpecGRASS, FairShareHalfLife: 5},
		{FairShare: true, PreemptRequested: true, DisclosedFairShare: true},
	}
	for ci, cfg := range cfgs {
		t.Run(fmt.Sprintf("%d-%s", ci, cfg.String()), func(t *testing.T) {
			t.Parallel()
			for seed := int64(1); seed <= 60; seed++ {
				c := cfg
				c.Seed = seed
				script, weights, dur := fairWorkload(seed)
				d := newDriver(t, c)
				for _, name := range slices.Sorted(mapKeys(weights)) {
					if err := d.s.SetUserWeight(name, weights[name]); err != nil {
						t.Fatal(err)
					}
				}
				d.dur = dur
				d.tick = 1
				d.check = fairCheck(weights)
				playScript(d, script, math.Inf(1))
				d.run(100000)
				if st := d.s.Stats(); st.QueuedRequested != 0 || st.BusySlots != 0 {
					t.Fatalf("seed %d: left over %+v", seed, st)
				}
			}
		})
	}
}

// checkUserHeap verifies the users' heap: every waiting user is in it at
// its recorded position, after its parent in fsBefore order, and each
// user's first job is its first in jobBefore order. A user whose first job
// or usage changed without a fix would break it.
func checkUserHeap(d *driver, s *Scheduler) {
	h := s.fair.heap
	for i, u := range h {
		if u.hpos != i+1 {
			d.t.Fatalf("t=%g: user %s at %d records position %d", d.now, u.name, i+1, u.hpos)
		}
		if u.level != fsLevel(u.usage/u.weight) {
			d.t.Fatalf("t=%g: user %s level %d, want %d", d.now, u.name, u.level, fsLevel(u.usage/u.weight))
		}
		if i > 0 && fsBefore(u, h[(i-1)/2]) {
			d.t.Fatalf("t=%g: user %s before its parent %s in the heap", d.now, u.name, h[(i-1)/2].name)
		}
		for _, j := range u.jobs[min(1, len(u.jobs)):] {
			if jobBefore(j, u.jobs[0]) {
				d.t.Fatalf("t=%g: user %s's job %d before its first job %d", d.now, u.name, j.id, u.jobs[0].id)
			}
		}
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// floodScenario is the two-user case of the server: 2 slots; user b
// requests a set of 40 short tasks at t=2 while user a requests one-task
// sets, 8 at a time, until t=15. It returns when b's set ended.
func floodScenario(t *testing.T, fair bool) float64 {
	d := newDriver(t, Config{FairShare: fair, Speculation: SpecNone})
	d.dur = func(TaskRef, int, bool) float64 { return 0.05 }
	d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2})
	id := SetID(100)
	for at := 0.0; at < 15; at += 0.05 {
		d.run(at)
		d.now = at
		if at >= 2 && at < 2.05 {
			d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "b", Tasks: tasksWithEstimate(40, 0)})
			d.apply(Event{Kind: EventRequested, Set: 1})
		}
		for range 8 - d.s.fair.queuedOf("a", d.s) {
			id++
			d.apply(Event{Kind: EventDisclosed, Set: id, Owner: "a", Tasks: tasksWithEstimate(1, 0)})
			d.apply(Event{Kind: EventRequested, Set: id})
		}
		d.decide()
	}
	d.run(1000)
	return d.jobEnd(1, 40)
}

// queuedOf counts name's unfinished requested tasks (queued or running),
// like a user's loop that keeps 8 requests in flight.
func (f *fairShare) queuedOf(name string, s *Scheduler) int {
	n := 0
	for _, st := range s.sets {
		if st.owner == name {
			n += st.unfin
		}
	}
	return n
}

// TestFairShareFlood: one user's flood of one-task sets must not hold
// another user's set until the flood ends. Without fair share (SRPT across
// users) b's 40-task set waits for the end of a's flood; with it, b gets a
// slot at once and its set ends long before the flood does.
func TestFairShareFlood(t *testing.T) {
	t.Parallel()
	endOff := floodScenario(t, false)
	if endOff < 15 {
		t.Fatalf("without fair share b's set ended at %g, before a's flood ended: the scenario does not flood", endOff)
	}
	endOn := floodScenario(t, true)
	// Alone on 2 slots b needs 40×0.05/2 = 1 unit; with half the slots, 2.
	if endOn > 2+2*1+0.5 {
		t.Fatalf("with fair share b's set ended at %g, want by 4.5 (half the slots from t=2)", endOn)
	}
}

// TestFairShareWeights: with weights 2 and 1 on 3 slots, both users
// flooding, the first Decide splits the slots 2:1.
func TestFairShareWeights(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{FairShare: true, Speculation: SpecNone})
	if err := b.s.SetUserWeight("heavy", 2); err != nil {
		t.Fatal(err)
	}
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 3})
	// light's set is the smaller: SRPT alone would give it all 3 slots.
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "heavy", Tasks: tasksWithEstimate(10, 5)})
	b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "light", Tasks: tasksWithEstimate(5, 1)})
	b.apply(Event{Kind: EventRequested, Set: 1})
	b.apply(Event{Kind: EventRequested, Set: 2})
	got := map[SetID]int{}
	for _, x := range b.s.Decide(0) {
		got[x.Task.Set]++
	}
	if got[1] != 2 || got[2] != 1 {
		t.Fatalf("starts by set = %v, want 2 for heavy's set 1 and 1 for light's set 2", got)
	}
	if err := b.s.SetUserWeight("x", 0); err == nil {
		t.Fatal("weight 0 accepted")
	}
	sh := b.s.ShareOf("heavy", 0)
	if sh.Held != 2 || math.Abs(sh.Share-2) > 1e-9 {
		t.Fatalf("heavy's standing %+v, want held 2, share 2", sh)
	}
}

// TestFairShareUsage: on one slot, of two users waiting with nothing held,
// the one with much less decayed usage goes first, even with the longer
// job; usage decays with the half-life, so old heavy use weighs less than
// recent light use, and once their usage levels meet the shorter job goes
// first (SRPT between users of like standing).
func TestFairShareUsage(t *testing.T) {
	t.Parallel()
	first := func(t *testing.T, now Time) SetID {
		b := setup(t, Config{FairShare: true, Speculation: SpecNone, FairShareHalfLife: 100})
		b.s.AddUsage("old", 10000, 0) // 10,000 slot-seconds at t=0
		b.s.AddUsage("new", 300, now) // 300 just now
		b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
		b.apply(Event{Kind: EventDisclosed, Time: now, Set: 1, Owner: "old", Tasks: tasksWithEstimate(1, 1)})
		b.apply(Event{Kind: EventDisclosed, Time: now, Set: 2, Owner: "new", Tasks: tasksWithEstimate(1, 2)})
		b.apply(Event{Kind: EventRequested, Time: now, Set: 1})
		b.apply(Event{Kind: EventRequested, Time: now, Set: 2})
		ds := b.s.Decide(now)
		if len(ds) != 1 {
			t.Fatalf("Decide = %+v, want one start", ds)
		}
		return ds[0].Task.Set
	}
	if got := first(t, 10); got != 2 {
		t.Fatalf("at t=10 (old's usage ≈ 9,330, new's 300) set %d started, want new's set 2", got)
	}
	if got := first(t, 500); got != 1 {
		t.Fatalf("at t=500 (old's usage ≈ 313, new's 300) set %d started, want old's shorter set 1", got)
	}
}

// TestFairShareTiesBySRPT: users who hold as many slots and used about as
// much take a free slot shortest job first across users, as without fair
// share, not by name or by small differences in usage; one who used much
// more waits.
func TestFairShareTiesBySRPT(t *testing.T) {
	t.Parallel()
	order := func(t *testing.T, usage map[string]float64) []string {
		b := setup(t, Config{FairShare: true, Speculation: SpecNone, FairShareHalfLife: -1})
		for _, n := range slices.Sorted(mapKeys(usage)) {
			b.s.AddUsage(n, usage[n], 0)
		}
		b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
		// a's job is the longest, c's the shortest.
		for i, n := range []string{"a", "b", "c"} {
			b.apply(Event{Kind: EventDisclosed, Set: SetID(i + 1), Owner: n, Tasks: tasksWithEstimate(1, float64(30-10*i))})
			b.apply(Event{Kind: EventRequested, Set: SetID(i + 1)})
		}
		var got []string
		now := Time(0)
		for range 3 {
			ds := b.s.Decide(now)
			if len(ds) != 1 || ds[0].Kind != DecisionStart {
				t.Fatalf("t=%g: Decide = %+v, want one start", now, ds)
			}
			got = append(got, b.s.sets[ds[0].Task.Set].owner)
			now++
			b.apply(Event{Kind: EventCopyFinished, Time: now, Copy: ds[0].Copy})
		}
		return got
	}
	if got := order(t, map[string]float64{"a": 70, "b": 80, "c": 90}); !slices.Equal(got, []string{"c", "b", "a"}) {
		t.Fatalf("like usage: order %v, want c b a (shortest first)", got)
	}
	if got := order(t, map[string]float64{"a": 70, "b": 80, "c": 100000}); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Fatalf("c used 1000× more: order %v, want b a c", got)
	}
}

// BenchmarkDecideFairShare is BenchmarkDecideRequested with fair share on,
// 10⁶ queued requested tasks in 10,000 sets owned by 1,000 users (set j by
// user j mod 1,000), on 1,000 slots: every Decide finds every user waiting.
//
//	go test -run '^$' -bench DecideFairShare -benchtime 20000x ./sched/
func BenchmarkDecideFairShare(b *testing.B) {
	for _, fair := range []bool{true, false} {
		b.Run(fmt.Sprintf("fair=%v", fair), func(b *testing.B) { benchFair(b, fair) })
	}
}

func benchFair(b *testing.B, fair bool) {
	const tasks, jobs, users, slots = 1_000_000, 10_000, 1_000, 1_000
	s, err := New(Config{FairShare: fair})
	if err != nil {
		b.Fatal(err)
	}
	for w := 0; w*16 < slots; w++ {
		if _, err := s.Apply(Event{Kind: EventWorkerUp, Worker: WorkerID(fmt.Sprintf("w%05d", w)), Slots: int32(min(16, slots-w*16)), CanSuspend: true}); err != nil {
			b.Fatal(err)
		}
	}
	ts := make([]TaskInfo, tasks/jobs)
	for j := range jobs {
		for i := range ts {
			ts[i] = TaskInfo{Index: int32(i), EstimateSeconds: float64(5 + (i*7+j)%11)}
		}
		if _, err := s.Apply(Event{Kind: EventDisclosed, Set: SetID(j + 1), Owner: fmt.Sprintf("user%04d", j%users), Tasks: ts}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Apply(Event{Kind: EventRequested, Set: SetID(j + 1)}); err != nil {
			b.Fatal(err)
		}
	}
	var running []CopyID
	for _, d := range s.Decide(0) {
		if d.Kind == DecisionStart {
			running = append(running, d.Copy)
		}
	}
	if fair && s.WaitingUsers() != users {
		b.Fatalf("%d users waiting, want %d", s.WaitingUsers(), users)
	}
	benchLoop(b, s, running, slots, true)
}

// TestFairSharePreemptRequested: preemptive SRPT runs with fair share
// (the server's default), so a user holding its share must not suspend
// another user's copy for a shorter task of its own; the same user's
// longer copy is fair game, as without fair share.
func TestFairSharePreemptRequested(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{FairShare: true, Speculation: SpecNone, PreemptRequested: true})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2, CanSuspend: true})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "a", Tasks: tasksWithEstimate(1, 100)})
	b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "b", Tasks: tasksWithEstimate(1, 100)})
	b.apply(Event{Kind: EventRequested, Set: 1})
	b.apply(Event{Kind: EventRequested, Set: 2})
	if ds := b.s.Decide(0); len(ds) != 2 {
		t.Fatalf("Decide = %+v, want two starts", ds)
	}
	// a, holding 1 of 2 slots (its share), requests a short task: it may
	// suspend its own long copy, not b's.
	b.apply(Event{Kind: EventDisclosed, Time: 1, Set: 3, Owner: "a", Tasks: tasksWithEstimate(1, 1)})
	b.apply(Event{Kind: EventRequested, Time: 1, Set: 3})
	ds := b.s.Decide(1)
	for _, d := range ds {
		if d.Kind == DecisionSuspend && d.Task.Set != 1 {
			t.Fatalf("Decide = %+v: a suspended b's copy", ds)
		}
	}
	if len(ds) != 2 || ds[0].Kind != DecisionSuspend || ds[1].Task.Set != 3 {
		t.Fatalf("Decide = %+v, want a's set 1 suspended for its set 3", ds)
	}
}

// TestDisclosedFairShareWeights: the disclosed class's per-owner share
// follows the weights too: on 3 idle slots, weight 2 against 1 splits 2:1
// although the lighter user disclosed first.
func TestDisclosedFairShareWeights(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone, DisclosedFairShare: true})
	if err := b.s.SetUserWeight("heavy", 2); err != nil {
		t.Fatal(err)
	}
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 3})
	b.apply(Event{Kind: EventDisclosed, Time: 0, Set: 1, Owner: "light", Tasks: tasksWithEstimate(10, 0)})
	b.apply(Event{Kind: EventDisclosed, Time: 1, Set: 2, Owner: "heavy", Tasks: tasksWithEstimate(10, 0)})
	got := map[SetID]int{}
	for _, d := range b.s.Decide(2) {
		got[d.Task.Set]++
	}
	if got[1] != 1 || got[2] != 2 {
		t.Fatalf("starts by set = %v, want light's set 1: 1, heavy's set 2: 2", got)
	}
}

// TestFairShareWhy: a task whose owner holds its share while another user
// waits says so, with the owner's slots and share, and an ETA on that
// share; the other user's task does not.
func TestFairShareWhy(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{FairShare: true, Speculation: SpecNone, Preemption: PreemptOff})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "alice", Tasks: tasksWithEstimate(5, 10)})
	b.apply(Event{Kind: EventRequested, Set: 1})
	if ds := b.s.Decide(0); len(ds) != 2 {
		t.Fatalf("Decide = %+v, want alice's two starts", ds)
	}
	b.apply(Event{Kind: EventDisclosed, Time: 1, Set: 2, Owner: "bob", Tasks: tasksWithEstimate(3, 10)})
	b.apply(Event{Kind: EventRequested, Time: 1, Set: 2})
	a, err := b.s.Why(TaskRef{Set: 1, Index: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a.Reason != WhyFairShare || !strings.Contains(a.Assumptions, "alice is using 2 of 2 slots; their share is 1") {
		t.Fatalf("Why(alice's 1/3) = %s: %q", a.Reason, a.Assumptions)
	}
	// 1/2 and 1/3 of alice's queue on a share of 1 slot at 10 s each.
	if a.StartInSeconds != 20 {
		t.Fatalf("start in %g s, want 20 (two of alice's tasks on her one-slot share)", a.StartInSeconds)
	}
	if a, _ := b.s.Why(TaskRef{Set: 2, Index: 0}, 1); a.Reason == WhyFairShare {
		t.Fatalf("Why(bob's 2/0) = %s, want not fair share", a.Reason)
	}
}
