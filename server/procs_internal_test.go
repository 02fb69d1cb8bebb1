package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// procsRecorder stands for runtime.GOMAXPROCS: it keeps what was set.
type procsRecorder struct {
	mu  sync.Mutex
	got []int
}

func (r *procsRecorder) set(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, n)
	return 0
}

func (r *procsRecorder) sets() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// want's rule, on the test's clock: High while an API call is in
// progress, however long; High for Hold after the last one; Low after.
func TestProcsWant(t *testing.T) {
	clk := newFakeClock()
	var rec procsRecorder
	p := newProcsControl(ProcsPolicy{Low: 2, High: 4, Hold: time.Minute}, rec.set, clk.now)
	if got := rec.sets(); !slices.Equal(got, []int{4}) {
		t.Fatalf("set at start %v, want [4]: start-up runs at High", got)
	}
	check := func(what string, wantN int, wantAgain time.Duration) {
		t.Helper()
		if n, again := p.want(clk.now()); n != wantN || again != wantAgain {
			t.Errorf("%s: want() = %d, %v; want %d, %v", what, n, again, wantN, wantAgain)
		}
	}
	check("at start", 4, time.Minute)
	clk.add(time.Minute)
	check("a hold after start", 2, 0)
	end := p.begin()
	clk.add(time.Hour)
	check("an hour into an API call", 4, 0)
	end()
	clk.add(20 * time.Second)
	check("20 s after the call", 4, 40*time.Second)
	clk.add(40 * time.Second)
	check("a hold after the call", 2, 0)
	p.touch()
	check("a watch opened", 4, time.Minute)
}

// run applies want as the traffic changes, and only on a change.
func TestProcsRunFollowsTraffic(t *testing.T) {
	clk := newFakeClock()
	var rec procsRecorder
	p := newProcsControl(ProcsPolicy{Low: 2, High: 4, Hold: time.Minute}, rec.set, clk.now)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); p.run(stop) }()
	defer func() { close(stop); <-done }()
	sets := func(want ...int) {
		t.Helper()
		until(t, fmt.Sprint("GOMAXPROCS set to ", want), func() bool { return slices.Equal(rec.sets(), want) })
	}

	clk.add(2 * time.Minute)
	p.poke() // the hold's timer is the real clock's: tell run the time
	sets(4, 2)
	end := p.begin()
	sets(4, 2, 4)
	clk.add(time.Hour)
	p.poke()
	end()
	clk.add(2 * time.Minute)
	p.poke()
	sets(4, 2, 4, 2)
	p.touch()
	sets(4, 2, 4, 2, 4)
	clk.add(2 * time.Minute)
	p.poke()
	sets(4, 2, 4, 2, 4, 2)
	if n := p.changes.Load(); n != 5 {
		t.Errorf("%d changes counted, want 5", n)
	}
}

// Over HTTP: a worker's calls leave the processors at Low; an API call
// takes High from when it arrives (waiting for its turn included) to its
// end, plus the hold; a watch counts only when it opens.
func TestProcsFollowAPICallsOverHTTP(t *testing.T) {
	clk := newFakeClock()
	s, sets, work := gateTestServer(t)
	var rec procsRecorder
	s.procs = newProcsControl(ProcsPolicy{Low: 2, High: 4, Hold: time.Minute}, rec.set, clk.now)
	p := s.procs
	ctx := context.Background()
	want := func(what string, n int) {
		t.Helper()
		if got, _ := p.want(clk.now()); got != n {
			t.Fatalf("%s: %d processors wanted, want %d", what, got, n)
		}
	}

	clk.add(2 * time.Minute)
	want("idle", 2)
	if _, err := work.Register(ctx, &batchv1.RegisterRequest{Name: "w", Slots: 1, Isolation: "namespaces"}); err != nil {
		t.Fatal(err)
	}
	if _, err := work.Heartbeat(ctx, &batchv1.HeartbeatRequest{WorkerId: "w"}); err != nil {
		t.Fatal(err)
	}
	want("after a worker's calls", 2)

	res, err := sets.Disclose(ctx, &batchv1.DiscloseRequest{Name: "s", Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	want("just after an API call", 4)
	clk.add(2 * time.Minute)
	want("a hold after it", 2)

	// An API call waiting for its turn counts, however long it waits.
	held, err := s.gate.apiCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := sets.ListTaskSets(ctx, &batchv1.ListTaskSetsRequest{PageSize: 10})
		done <- err
	}()
	until(t, "the API call waits for its turn", func() bool { return s.gate.waitingCalls() == 1 })
	clk.add(time.Hour)
	want("an hour into a waiting API call", 4)
	held()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	clk.add(2 * time.Minute)
	want("a hold after it ended", 2)

	// A watch counts when it opens, not while it stays open.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := sets.WatchTaskSet(wctx, &batchv1.WatchTaskSetRequest{SetId: res.GetTaskSet().GetId()})
	if err != nil {
		t.Fatal(err)
	}
	if !stream.Receive() {
		t.Fatalf("the watch ended: %v", stream.Err())
	}
	want("a watch just opened", 4)
	clk.add(2 * time.Minute)
	want("a hold into an open watch", 2)
	cancel()
	if got := rec.sets(); !slices.Equal(got, []int{4}) {
		t.Errorf("GOMAXPROCS set %v without run, want only the start's [4]", got)
	}
}
