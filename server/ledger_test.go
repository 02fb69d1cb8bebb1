package server_test

import (
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	_ "github.com/mattn/go-sqlite3"
	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// checkLedger checks the ledger invariants straight on the database file
// and returns the number of charge lines: no task is charged twice; every
// finished task is charged exactly once, for its winning copy's slot and
// CPU seconds; every charge is of a finished task or of a requested task
// canceled while it ran; no unrequested task is charged; the sum of the
// ledger equals the winning copies of the requested tasks; each amount is
// its seconds at its prices.
func checkLedger(t *testing.T, dir string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "batchd.db")+"?mode=ro&_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(what, q string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n
	}
	for _, c := range []struct{ what, q string }{
		{"tasks charged twice", `SELECT COUNT(*) FROM (SELECT set_id, idx FROM bill_lines WHERE kind = 'charge' GROUP BY set_id, idx HAVING COUNT(*) > 1)`},
		{"finished tasks not charged once for their winning copy", `SELECT COUNT(*) FROM tasks t JOIN outputs o ON o.set_id = t.set_id AND o.idx = t.idx
			WHERE t.state = 'finished' AND (SELECT COUNT(*) FROM bill_lines b WHERE b.set_id = t.set_id AND b.idx = t.idx AND b.kind = 'charge'
				AND b.copy_id = t.win_copy AND b.copy_id = o.copy_id AND b.slot_seconds = o.slot_seconds AND b.cpu_seconds = o.cpu_seconds) != 1`},
		{"finished tasks without an output", `SELECT COUNT(*) FROM tasks t WHERE t.state = 'finished' AND NOT EXISTS (SELECT 1 FROM outputs o WHERE o.set_id = t.set_id AND o.idx = t.idx)`},
		{"charges of tasks neither finished nor stopped after a request", `SELECT COUNT(*) FROM bill_lines b JOIN tasks t ON t.set_id = b.set_id AND t.idx = b.idx
			WHERE b.kind = 'charge' AND NOT (t.state = 'finished' OR (t.state = 'canceled' AND t.requested_at > 0 AND b.reason = 'canceled-after-request'))`},
		{"charges of unrequested tasks", `SELECT COUNT(*) FROM bill_lines b JOIN tasks t ON t.set_id = b.set_id AND t.idx = b.idx WHERE t.requested_at = 0`},
		{"amounts off their prices", `SELECT COUNT(*) FROM bill_lines WHERE ABS(amount - (slot_seconds * price_slot_second + cpu_seconds * price_cpu_second)) > 1e-9`},
	} {
		if n := count(c.what, c.q); n != 0 {
			t.Fatalf("ledger: %d %s", n, c.what)
		}
	}
	var billed, won float64
	if err := db.QueryRow(`SELECT COALESCE(SUM(slot_seconds), 0) FROM bill_lines WHERE reason IN ('finished', 'executed-then-requested')`).Scan(&billed); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT COALESCE(SUM(o.slot_seconds), 0) FROM outputs o JOIN tasks t ON t.set_id = o.set_id AND t.idx = o.idx WHERE t.state = 'finished'`).Scan(&won); err != nil {
		t.Fatal(err)
	}
	if math.Abs(billed-won) > 1e-9 {
		t.Fatalf("ledger sums %g slot-seconds, the winning copies of requested tasks %g", billed, won)
	}
	return count("charges", `SELECT COUNT(*) FROM bill_lines WHERE kind = 'charge'`)
}

// Many goroutines request the same tasks at once while their copies finish:
// each task is charged once.
func TestBreakConcurrentRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	const n = 8
	w, _ := b.worker(t, "w", n)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(n)})).TaskSet
	var starts []*batchv1.StartCopy
	for i := 0; i < n; i++ {
		starts = append(starts, w.start())
	}
	// Half the tasks are executed before anyone asks.
	for _, st := range starts[:n/2] {
		w.won(st.CopyId, "early")
	}
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &batchv1.RequestRequest{SetId: set.Id, All: g%2 == 0}
			if g%2 == 1 {
				req.Indexes = []int32{int32(g % n), int32((g + 3) % n)}
			}
			if _, err := b.tasks.Request(ctx(t), req); err != nil {
				t.Error(err)
			}
		}()
	}
	for _, st := range starts[n/2:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.finish(st.CopyId, "late", 0, 2); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := checkLedger(t, b.dir); got != n {
		t.Fatalf("%d charges, want %d", got, n)
	}
}

// Cancel races each copy's finish: a requested task is charged once (for
// its result, or for what it used until it was stopped); a disclosed one is
// never charged.
func TestBreakCancelRacingFinish(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	const n = 16
	w, _ := b.worker(t, "w", 2*n)
	req := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(n), Request: true})).TaskSet
	disc := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(n)})).TaskSet
	var wg sync.WaitGroup
	for i := 0; i < 2*n; i++ {
		st := w.start()
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: st.SetId, Indexes: []int32{st.Index}}); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := w.finish(st.CopyId, "x", 0, 1); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := checkLedger(t, b.dir); got != n {
		t.Fatalf("%d charges, want %d (one per requested task)", got, n)
	}
	for _, id := range []int64{req.Id, disc.Id} {
		bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{SetId: id}))
		want := int64(0)
		if id == req.Id {
			want = n
		}
		if bill.Totals.Lines != want {
			t.Fatalf("set %d: %d lines, want %d", id, bill.Totals.Lines, want)
		}
	}
}

// Replayed reports get the first answer and charge nothing more, even
// after a restart; forged reports (another worker's copy, a copy that does
// not exist) are refused and change nothing.
func TestBreakReplayedAndForgedReports(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 1)
	w2, _ := b.worker(t, "w2", 1)
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true}))
	st := w.start()
	b.clock.Advance(3 * time.Second) // the reports' 3 s
	if w2.name == "" {
		t.Fatal("no second worker")
	}
	// The same report ten times at once: one WON for all, one charge.
	var wg sync.WaitGroup
	outcomes := make([]batchv1.ReportOutcome, 10)
	for i := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := w.finish(st.CopyId, "result", 0, 3)
			if err != nil {
				t.Error(err)
				return
			}
			outcomes[i] = res.Outcome
		}()
	}
	wg.Wait()
	for i, o := range outcomes {
		if o != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
			t.Fatalf("report %d: %v, want WON", i, o)
		}
	}
	// Forged: another worker reports the copy as its own, or a copy that
	// never existed.
	_, err := w2.finish(st.CopyId, "forged", 1, 99)
	wantCode(t, err, connect.CodePermissionDenied)
	_, err = w2.finish(st.CopyId+1000, "forged", 1, 99)
	if c := connect.CodeOf(err); c != connect.CodeFailedPrecondition && c != connect.CodeNotFound {
		t.Fatalf("report of a copy that never existed: %v", err)
	}
	if got := checkLedger(t, b.dir); got != 1 {
		t.Fatalf("%d charges, want 1", got)
	}
	// After a restart the replay still gets WON and charges nothing.
	b.close()
	b2 := setup(t, options{dir: b.dir})
	w3, _ := b2.worker(t, "w", 1, &batchv1.HeldCopy{CopyId: st.CopyId})
	res, err := w3.finish(st.CopyId, "result", 0, 3)
	if err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
		t.Fatalf("replay after restart: %v %v", res, err)
	}
	out := must[*batchv1.GetOutputResponse](t)(b2.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: st.SetId}))
	if string(out.Stdout) != "result" || out.SlotSeconds != 3 {
		t.Fatalf("output after forged reports: %q, %g slot-seconds", out.Stdout, out.SlotSeconds)
	}
	if got := checkLedger(t, b.dir); got != 1 {
		t.Fatalf("%d charges after restart, want 1", got)
	}
}

// Each line carries its prices and amount; the bill sums amounts per set
// and per owner; an admin reads everyone's.
func TestLedgerPrices(t *testing.T) {
	t.Parallel()
	b := setup(t, options{prices: store.Prices{SlotSecond: 2, CPUSecond: 10}})
	w, _ := b.worker(t, "w", 2)
	alice := b.as(b.addUser(t, "alice", store.RoleUser))
	s1 := must[*batchv1.DiscloseResponse](t)(alice.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "a", Tasks: echo(1), Request: true})).TaskSet
	s2 := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "b", Tasks: echo(1), Request: true})).TaskSet
	x, y := w.start(), w.start()
	b.clock.Advance(2 * time.Second)
	w.won(x.CopyId, "x") // 2 slot-seconds, 1 CPU second
	w.won(y.CopyId, "y")
	mine := must[*batchv1.GetBillResponse](t)(alice.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	if len(mine.Lines) != 1 || mine.Lines[0].SetId != s1.Id || mine.Lines[0].Amount != 2*2+1*10 || mine.Lines[0].PriceSlotSecond != 2 ||
		mine.Lines[0].PriceCpuSecond != 10 || mine.Lines[0].Kind != "charge" || mine.Totals.Amount != 14 || mine.PriceSlotSecond != 2 {
		t.Fatalf("alice's bill: %v", mine)
	}
	all := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{Owner: "*"}))
	if all.Totals.Lines != 2 || all.Totals.Amount != 28 || len(all.ByOwner) != 2 || len(all.BySet) != 2 {
		t.Fatalf("everyone's bill: %v", all)
	}
	owners := map[string]float64{}
	for _, g := range all.ByOwner {
		owners[g.Owner] = g.Amount
	}
	if owners["alice"] != 14 || owners["admin"] != 14 {
		t.Fatalf("per owner: %v", all.ByOwner)
	}
	if all.BySet[0].SetId != s1.Id && all.BySet[0].SetId != s2.Id {
		t.Fatalf("per set: %v", all.BySet)
	}
	checkLedger(t, b.dir)
}

// The abuse caps answer ResourceExhausted and name the cap.
func TestAbuseLimits(t *testing.T) {
	t.Parallel()
	t.Run("OpenSets", func(t *testing.T) {
		t.Parallel()
		b := setup(t, options{maxSets: 2})
		for i := 0; i < 2; i++ {
			must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), IdempotencyKey: fmt.Sprint("k", i)}))
		}
		_, err := b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})
		wantCap(t, err, "open task sets")
		// A retry of a stored disclose is a replay, not refused by the cap.
		r := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), IdempotencyKey: "k1"}))
		if !r.Replayed {
			t.Fatalf("retry at the cap: %v, want a replay", r)
		}
		// Appending to an open set is still fine; another user has its own cap.
		must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{SetId: 1, Tasks: echo(1)}))
		must[*batchv1.DiscloseResponse](t)(b.as(b.addUser(t, "other", store.RoleUser)).tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)}))
		// Canceling a set frees its place.
		must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: 1, All: true}))
		must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)}))
	})
	t.Run("QueuedTasks", func(t *testing.T) {
		t.Parallel()
		b := setup(t, options{maxQueued: 5})
		must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(4)}))
		_, err := b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2)})
		wantCap(t, err, "queued tasks")
		must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)}))
	})
	t.Run("RequestRate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, options{rate: 1, burst: 3})
		for i := 0; i < 3; i++ {
			must[*batchv1.ListTaskSetsResponse](t)(b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{}))
		}
		_, err := b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{})
		wantCap(t, err, "request rate")
		// Workers are not limited; the bucket refills with time.
		must[*batchv1.RegisterResponse](t)(b.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "w", Slots: 1}))
		b.clock.Advance(1500 * 1e6)
		must[*batchv1.ListTaskSetsResponse](t)(b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{}))
	})
}

func wantCap(t *testing.T, err error, cap string) {
	t.Helper()
	wantCode(t, err, connect.CodeResourceExhausted)
	if !strings.Contains(err.Error(), cap) {
		t.Fatalf("error %q does not name the %s cap", err, cap)
	}
}

// Two speculative copies of each task report their finish at the same
// instant (the clock is pinned), from two goroutines, so that the group
// commit often holds both in one transaction: exactly one copy of each
// task wins, and its task is charged once, for the winner's seconds.
func TestBreakTwoCopiesFinishTogether(t *testing.T) {
	t.Parallel()
	b := setup(t, options{sched: sched.Config{Speculation: sched.SpecBestEffortLATE}})
	const n = 6
	w, _ := b.worker(t, "w", 2*n)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: estimated(n, 1), Request: true})).TaskSet
	copies := map[int32][]*batchv1.StartCopy{}
	for i := 0; i < n; i++ {
		st := w.start()
		copies[st.Index] = append(copies[st.Index], st)
	}
	// The originals run far past their estimate: each gets a speculative
	// copy (heartbeats keep the worker's lease).
	for step, started := 0, n; started < 2*n; step++ {
		if step == 100 {
			t.Fatalf("no speculative copies after %d steps: %v", step, copies)
		}
		b.clock.Advance(5 * time.Second)
		hb := &batchv1.HeartbeatRequest{WorkerId: "w"}
		for _, cs := range copies {
			for _, c := range cs {
				hb.Copies = append(hb.Copies, &batchv1.CopyProgress{CopyId: c.CopyId, Progress: -1})
			}
		}
		must[*batchv1.HeartbeatResponse](t)(b.workers.Heartbeat(ctx(t), hb))
		b.srv.DispatchOnce()
		running := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{})).Queues.RunningCopies
		for ; int64(started) < running; started++ {
			st := w.next().GetStart()
			if st == nil {
				t.Fatalf("step %d: want a start", step)
			}
			copies[st.Index] = append(copies[st.Index], st)
		}
	}
	for i := int32(0); i < n; i++ {
		if len(copies[i]) != 2 || !copies[i][1].Speculative {
			t.Fatalf("task %d: copies %v, want an original and a speculative copy", i, copies[i])
		}
	}
	type result struct {
		copy int64
		run  float64
		won  bool
	}
	b.clock.Advance(15 * time.Second) // the reports' 10 and 11 s fit in what the server saw
	results := make(chan result, 2*n)
	var wg sync.WaitGroup
	for _, cs := range copies {
		for k, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run := float64(10 + k) // the two copies of a task bill different seconds
				res, err := w.finish(c.CopyId, fmt.Sprint("copy ", c.CopyId), 0, run)
				if err != nil {
					t.Error(err)
					return
				}
				results <- result{c.CopyId, run, res.Outcome == batchv1.ReportOutcome_REPORT_OUTCOME_WON}
			}()
		}
	}
	wg.Wait()
	close(results)
	won := map[int64]float64{}
	for r := range results {
		if r.won {
			won[r.copy] = r.run
		}
	}
	if got := checkLedger(t, b.dir); got != n {
		t.Fatalf("%d charges, want %d", got, n)
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{SetId: set.Id, IncludeLines: true}))
	if len(won) != n || len(bill.Lines) != n {
		t.Fatalf("%d copies answered WON, %d bill lines; want %d of each", len(won), len(bill.Lines), n)
	}
	for _, l := range bill.Lines {
		if run, ok := won[l.CopyId]; !ok || l.SlotSeconds != run {
			t.Fatalf("line %v bills copy %d, which was not answered WON (or not for %g s)", l, l.CopyId, run)
		}
	}
}

// estimated returns n tasks with an estimate of sec seconds each.
func estimated(n int, sec float64) []*batchv1.TaskSpec {
	out := echo(n)
	for _, s := range out {
		s.EstimateSeconds = sec
	}
	return out
}

// A cancel and a copy's finish, in both orders and at once, through the
// group commit: a requested task is charged once (for its result when the
// finish came first, for what it used when the cancel did); a disclosed
// one never; a report after the cancel is DISCARDED.
func TestBreakCancelAndFinishEachOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	const n = 4
	w, _ := b.worker(t, "w", 4*n)
	req := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2 * n), Request: true})).TaskSet
	disc := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2 * n)})).TaskSet
	starts := map[[2]int64]*batchv1.StartCopy{}
	for i := 0; i < 4*n; i++ {
		st := w.start()
		starts[[2]int64{st.SetId, int64(st.Index)}] = st
	}
	b.clock.Advance(4 * time.Second)
	cancel := func(st *batchv1.StartCopy) {
		if _, err := b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: st.SetId, Indexes: []int32{st.Index}}); err != nil {
			t.Error(err)
		}
	}
	finish := func(st *batchv1.StartCopy) batchv1.ReportOutcome {
		res, err := w.finish(st.CopyId, "x", 0, 3)
		if err != nil {
			t.Error(err)
			return 0
		}
		return res.Outcome
	}
	for _, id := range []int64{req.Id, disc.Id} {
		for i := int64(0); i < 2*n; i++ {
			st := starts[[2]int64{id, i}]
			switch i % 2 {
			case 0: // finish, then cancel
				if o := finish(st); o != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
					t.Fatalf("task %d/%d finished first: %v, want WON", id, i, o)
				}
				cancel(st)
			case 1: // cancel, then finish
				cancel(st)
				if o := finish(st); o != batchv1.ReportOutcome_REPORT_OUTCOME_DISCARDED {
					t.Fatalf("task %d/%d finished after its cancel: %v, want DISCARDED", id, i, o)
				}
			}
		}
	}
	if got := checkLedger(t, b.dir); got != 2*n {
		t.Fatalf("%d charges, want %d (one per requested task)", got, 2*n)
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	for _, l := range bill.Lines {
		want, reason := 3.0, "finished" // the winner's reported seconds
		if l.Index%2 == 1 {
			want, reason = 4, "canceled-after-request" // started 4 s before the cancel
		}
		if l.SetId != req.Id || l.SlotSeconds != want || l.Reason != reason {
			t.Fatalf("line %v: want set %d, %g slot-seconds, reason %s", l, req.Id, want, reason)
		}
	}
}

// Retries of a disclose-and-request with the same idempotency key, at once
// and after a restart, make one set and, once its copy finishes, one
// charge.
func TestBreakIdempotentRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 2)
	req := &batchv1.DiscloseRequest{Name: "once", Tasks: echo(1), Request: true, IdempotencyKey: "k"}
	ids := make([]int64, 16)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.tasks.Disclose(ctx(t), req)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = res.TaskSet.Id
		}()
	}
	wg.Wait()
	w.won(w.start().CopyId, "x")
	b.close()
	b = setup(t, options{dir: b.dir})
	again := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), req))
	for _, id := range append(ids, again.TaskSet.Id) {
		if id != ids[0] {
			t.Fatalf("retries made sets %v and %d, want one", ids, again.TaskSet.Id)
		}
	}
	if !again.Replayed || again.TaskSet.Counts.Finished != 1 {
		t.Fatalf("replay after restart: %v", again)
	}
	list := must[*batchv1.ListTaskSetsResponse](t)(b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{}))
	if len(list.TaskSets) != 1 {
		t.Fatalf("%d sets, want 1", len(list.TaskSets))
	}
	if got := checkLedger(t, b.dir); got != 1 {
		t.Fatalf("%d charges, want 1", got)
	}
}

// A worker reporting another worker's copy while it still runs is refused
// and changes nothing: the real worker's report then wins with its own
// output and seconds. Reports with seconds that are not finite are refused
// with InvalidArgument and do not fail the honest reports committed in the
// same group commit.
func TestBreakForgedAndBadReports(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	const n = 8
	w, _ := b.worker(t, "w", n)
	thief, _ := b.worker(t, "thief", 1)
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(n + 1), Request: true}))
	var starts []*batchv1.StartCopy
	for i := 0; i < n; i++ {
		starts = append(starts, w.start())
	}
	theirs := thief.start()
	b.clock.Advance(2 * time.Second) // the honest reports' 2 s
	_, err := thief.finish(starts[0].CopyId, "forged", 0, 1000)
	wantCode(t, err, connect.CodePermissionDenied)
	var wg sync.WaitGroup
	for _, st := range starts {
		for _, bad := range []float64{math.NaN(), math.Inf(1), -1} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: st.CopyId, RunSeconds: bad, CpuSeconds: 1})
				if connect.CodeOf(err) != connect.CodeInvalidArgument {
					t.Errorf("report of %g seconds: %v, want InvalidArgument", bad, err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := w.finish(st.CopyId, "honest", 0, 2)
			if err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
				t.Errorf("honest report of copy %d: %v %v", st.CopyId, res, err)
			}
		}()
	}
	wg.Wait()
	_, err = b.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "thief", Copies: []*batchv1.CopyProgress{{CopyId: theirs.CopyId, Progress: math.NaN()}}})
	wantCode(t, err, connect.CodeInvalidArgument)
	out := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: starts[0].SetId, Index: starts[0].Index}))
	if string(out.Stdout) != "honest" || out.SlotSeconds != 2 || out.Worker != "w" {
		t.Fatalf("output after a forged report: %q, %g slot-seconds, worker %s", out.Stdout, out.SlotSeconds, out.Worker)
	}
	if got := checkLedger(t, b.dir); got != n {
		t.Fatalf("%d charges, want %d", got, n)
	}
}

// The bill's totals, groups and date ranges on a pinned clock: work that
// ran while disclosed and was never requested (or was canceled) and a copy
// lost by its worker are free and shown as such; the scaled billed
// resources are billed / requested work; since and until select lines and
// free work by when they were billed or ended; per-set and per-owner sums
// add up.
func TestBillTotalsAndRanges(t *testing.T) {
	t.Parallel()
	b := setup(t, options{prices: store.Prices{SlotSecond: 1}})
	t0 := b.clock.Now()
	w, _ := b.worker(t, "w", 5)
	setA := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "a", Tasks: echo(3)})).TaskSet
	setB := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "b", Tasks: echo(2), Request: true})).TaskSet
	st := map[[2]int64]*batchv1.StartCopy{}
	for i := 0; i < 5; i++ {
		s := w.start()
		st[[2]int64{s.SetId, int64(s.Index)}] = s
	}
	report := func(set, idx int64, run float64, killed bool, want batchv1.ReportOutcome) {
		t.Helper()
		res, err := b.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: st[[2]int64{set, idx}].CopyId,
			RunSeconds: run, CpuSeconds: run / 4, Killed: killed})
		if err != nil || res.Outcome != want {
			t.Fatalf("report of %d/%d: %v %v, want %v", set, idx, res, err, want)
		}
	}
	// t0+2: set a's three tasks run while disclosed, 2 s each.
	b.clock.Advance(2 * time.Second)
	for i := int64(0); i < 3; i++ {
		report(setA.Id, i, 2, false, batchv1.ReportOutcome_REPORT_OUTCOME_WON)
	}
	// t0+10: a/0 is requested (billed 2 s now), a/2 canceled (free).
	b.clock.Advance(8 * time.Second)
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: setA.Id, Indexes: []int32{0}}))
	must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: setA.Id, Indexes: []int32{2}}))
	// t0+20: b/0 finishes (3 s); b/1's copy is lost by its worker after 5 s
	// (free) and runs again.
	b.clock.Advance(10 * time.Second)
	report(setB.Id, 0, 3, false, batchv1.ReportOutcome_REPORT_OUTCOME_WON)
	report(setB.Id, 1, 5, true, batchv1.ReportOutcome_REPORT_OUTCOME_DISCARDED)
	again := w.start()
	st[[2]int64{setB.Id, 1}] = again
	// t0+30: its second copy finishes (1 s).
	b.clock.Advance(10 * time.Second)
	report(setB.Id, 1, 1, false, batchv1.ReportOutcome_REPORT_OUTCOME_WON)
	checkLedger(t, b.dir)

	at := func(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(t0.Add(d)) }
	type want struct {
		lines                             int64
		billed, executed, lost, requested float64
	}
	for _, c := range []struct {
		name string
		req  *batchv1.GetBillRequest
		want want
	}{
		{"all", &batchv1.GetBillRequest{}, want{3, 6, 4, 5, 6}},
		{"since t0+15", &batchv1.GetBillRequest{Since: at(15 * time.Second)}, want{2, 4, 0, 5, 4}},
		{"until t0+15", &batchv1.GetBillRequest{Until: at(15 * time.Second)}, want{1, 2, 4, 0, 2}},
		{"t0+25 to t0+35", &batchv1.GetBillRequest{Since: at(25 * time.Second), Until: at(35 * time.Second)}, want{1, 1, 0, 0, 1}},
		{"until is exclusive", &batchv1.GetBillRequest{Until: at(10 * time.Second)}, want{0, 0, 4, 0, 0}},
		{"set a", &batchv1.GetBillRequest{SetId: setA.Id}, want{1, 2, 4, 0, 2}},
		{"set b", &batchv1.GetBillRequest{SetId: setB.Id}, want{2, 4, 0, 5, 4}},
	} {
		c.req.IncludeLines = true
		bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), c.req))
		tot := bill.Totals
		f := tot.Free
		got := want{tot.Lines, tot.BilledSlotSeconds, f.ExecutedUnrequestedSlotSeconds, f.LostWithWorkerSlotSeconds, tot.RequestedWorkSlotSeconds}
		if got != c.want || int64(len(bill.Lines)) != c.want.lines || tot.FreeSlotSeconds != c.want.executed+c.want.lost || tot.Amount != c.want.billed ||
			f.SpeculativeLostSlotSeconds != 0 || f.CanceledSlotSeconds != 0 {
			t.Errorf("%s: totals %v (%d lines listed), want %+v", c.name, tot, len(bill.Lines), c.want)
		}
		if c.want.requested > 0 && tot.ScaledBilledResources != c.want.billed/c.want.requested {
			t.Errorf("%s: scaled billed resources %g, want %g", c.name, tot.ScaledBilledResources, c.want.billed/c.want.requested)
		}
	}
	all := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{}))
	sets := map[int64]float64{}
	for _, g := range all.BySet {
		sets[g.SetId] = g.Amount
	}
	if len(sets) != 2 || sets[setA.Id] != 2 || sets[setB.Id] != 4 || len(all.ByOwner) != 1 || all.ByOwner[0].Amount != 6 || all.ByOwner[0].Lines != 3 {
		t.Fatalf("per set %v, per owner %v", all.BySet, all.ByOwner)
	}
}
