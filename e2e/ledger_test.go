package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"
	_ "github.com/mattn/go-sqlite3"

	"batchd/client"
	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
)

// TestKillBetweenFinishAndAck SIGKILLs a real `batchd serve` while a
// worker's ReportFinished is in flight (at a different moment each round:
// before the commit, between the commit and the answer, after it), then
// restarts it; the worker holds its result, registers again listing the
// copy, and reports again until it gets an answer, as the agent does.
// Every round's answer is WON, and the ledger holds exactly one charge per
// requested task, for its winning copy.
func TestKillBetweenFinishAndAck(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	c := startServer(t, "--slots", "0", "--lease", "60s")
	hc := &http.Client{}
	tasks := batchv1connect.NewTaskSetServiceClient(hc, c.url(), connect.WithInterceptors(client.BearerInterceptor(c.adminToken())))
	workers := batchv1connect.NewWorkerServiceClient(hc, c.url(), connect.WithInterceptors(client.BearerInterceptor(c.workerToken())))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	const name = "fake-agent"
	var held []*batchv1.HeldCopy // copies whose result is not yet answered
	register := func() {
		t.Helper()
		deadline := time.Now().Add(patience)
		for {
			_, err := workers.Register(ctx, &batchv1.RegisterRequest{Isolation: "namespaces", Name: name, Slots: 1, Running: held})
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("register: %v", err)
			}
			time.Sleep(50 * time.Millisecond) // another process: no clock to inject
		}
	}
	nextStart := func() *batchv1.StartCopy {
		t.Helper()
		sctx, scancel := context.WithCancel(ctx)
		defer scancel()
		s, err := workers.Assignments(sctx, &batchv1.AssignmentsRequest{WorkerId: name})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for s.Receive() {
			if st := s.Msg().GetStart(); st != nil {
				return st
			}
		}
		t.Fatalf("no start: %v", s.Err())
		return nil
	}
	report := func(st *batchv1.StartCopy) (*batchv1.ReportFinishedResponse, error) {
		return workers.ReportFinished(ctx, &batchv1.ReportFinishedRequest{WorkerId: name, CopyId: st.CopyId,
			Stdout: []byte(fmt.Sprintf("result of copy %d", st.CopyId)), CpuSeconds: 0.5, RunSeconds: 1.5})
	}

	delays := []time.Duration{0, 200 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond}
	for round, d := range delays {
		register()
		if _, err := tasks.Disclose(ctx, &batchv1.DiscloseRequest{Name: fmt.Sprint("round-", round), Request: true,
			Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}}}}); err != nil {
			t.Fatal(err)
		}
		st := nextStart()
		held = []*batchv1.HeldCopy{{CopyId: st.CopyId, Slot: st.Slot}}
		type answer struct {
			res *batchv1.ReportFinishedResponse
			err error
		}
		first := make(chan answer, 1)
		go func() {
			res, err := report(st)
			first <- answer{res, err}
		}()
		time.Sleep(d) // the moment of the kill moves through the call
		c.server.kill()
		a := <-first
		c.start("--slots", "0", "--lease", "60s")
		register()
		// The agent reports until it gets an answer; replays get the same.
		res, err := report(st)
		if err != nil {
			t.Fatalf("round %d: report after restart: %v", round, err)
		}
		if res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON || (a.err == nil && a.res.Outcome != res.Outcome) {
			t.Fatalf("round %d: answers %v then %v, want WON", round, a, res.Outcome)
		}
		held = nil
	}
	bill, err := tasks.ListTaskSets(ctx, &batchv1.ListTaskSetsRequest{})
	if err != nil || len(bill.TaskSets) != len(delays) {
		t.Fatalf("sets: %v %v", bill, err)
	}
	for _, s := range bill.TaskSets {
		if s.Counts.Finished != 1 {
			t.Fatalf("set %d: %v", s.Id, s.Counts)
		}
	}
	if got := checkLedger(t, c.data); got != len(delays) {
		t.Fatalf("%d charges, want %d", got, len(delays))
	}
}

// checkLedger checks the ledger invariants on the data directory's
// database (read-only, beside the running server) and returns the number
// of charges: no task charged twice, every finished task charged once for
// its winning copy, no charge of an unrequested task, and the ledger's sum
// equal to the winning copies of the requested tasks.
func checkLedger(t *testing.T, data string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(data, "batchd.db")+"?mode=ro&_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`SELECT COUNT(*) FROM (SELECT set_id, idx FROM bill_lines WHERE kind = 'charge' GROUP BY set_id, idx HAVING COUNT(*) > 1)`,
		`SELECT COUNT(*) FROM tasks t WHERE t.state = 'finished' AND (SELECT COUNT(*) FROM bill_lines b
			WHERE b.set_id = t.set_id AND b.idx = t.idx AND b.kind = 'charge' AND b.copy_id = t.win_copy) != 1`,
		`SELECT COUNT(*) FROM bill_lines b JOIN tasks t ON t.set_id = b.set_id AND t.idx = b.idx WHERE t.requested_at = 0`,
	} {
		var n int
		if err := db.QueryRow(q).Scan(&n); err != nil || n != 0 {
			t.Fatalf("ledger invariant broken (%d, %v): %s", n, err, q)
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
		t.Fatalf("ledger sums %g slot-seconds, winning copies %g", billed, won)
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM bill_lines WHERE kind = 'charge'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
