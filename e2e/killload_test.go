package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"batchd/client"
	"batchd/sched"
)

// TestKillUnderAPILoad SIGKILLs the server while API clients disclose,
// request and read as fast as they can, and restarts it: every disclose
// the server acknowledged is there after the restart, its task finishes
// and is billed exactly once, and no task, acknowledged or not, carries
// two bill lines. API writes are carried out in batches under one lock
// and the decisions of a batch in a transaction of their own: an answer
// is sent only once its write is committed.
func TestKillUnderAPILoad(t *testing.T) {
	args := []string{"--slots", "2", "--lease", "10s"}
	c := startServer(t, args...)
	cl := client.New(client.Config{Server: c.url(), HTTPClient: client.WithToken(&http.Client{}, c.adminToken())})

	const clients = 12
	ctx, stop := context.WithCancel(t.Context())
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked []sched.SetID // sets whose disclose was answered
	)
	killNow := make(chan struct{})
	var killOnce sync.Once
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				res, err := cl.Disclose(ctx, client.DiscloseInput{Name: fmt.Sprintf("load-%d-%d", i, n), Request: true,
					IdempotencyKey: client.NewIdempotencyKey(), Tasks: []sched.TaskSpec{{Argv: []string{"echo", fmt.Sprint(i, n)}}}})
				if err != nil {
					continue // the server is down, or was killed before it answered: not acknowledged
				}
				mu.Lock()
				acked = append(acked, res.Set.ID)
				if len(acked) == 150 {
					killOnce.Do(func() { close(killNow) })
				}
				mu.Unlock()
				_, _ = cl.GetTaskSet(ctx, client.GetTaskSetInput{Set: res.Set.ID})
			}
		}()
	}
	<-killNow
	c.server.kill()
	c.start(args...)
	// Keep the load on across the restart for a while, then stop it.
	waitFor(t, patience, "more acknowledged discloses after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 250
	})
	stop()
	wg.Wait()

	for _, set := range acked {
		c.mustCtl("request", fmt.Sprintf("%d/0", set)) // waits until it finished
	}
	var bill jsonBill
	c.ctlJSON(&bill, "bill", "--lines")
	byTask := billByTask(bill)
	for _, set := range acked {
		if n := byTask[ref{int64(set), 0}]; n != 1 {
			t.Errorf("acknowledged set %d: %d bill lines, want 1", set, n)
		}
	}
	for r, n := range byTask {
		if n != 1 {
			t.Errorf("task %d/%d: %d bill lines", r.set, r.index, n)
		}
	}
	t.Logf("%d discloses acknowledged, %d tasks billed", len(acked), len(byTask))
}
