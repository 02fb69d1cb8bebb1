package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestServerKillRestart SIGKILLs the server in the middle of a workload and
// restarts it on the same data directory: every acknowledged disclose,
// request, cancel and bill line is still there, every requested task
// finishes and is billed exactly once, a disclose sent while the server was
// down lands exactly once, and a waiting `batchctl request` rides it out.
// A stop rule that fired stays fired, and held tasks stay held; a set
// waiting for its dependencies still waits and then runs once.
func TestServerKillRestart(t *testing.T) {
	args := []string{"--slots", "4", "--lease", "10s"} // the killed server's copies are lost a lease after the restart
	c := startServer(t, args...)

	// A set whose stop rule fired before the kill.
	var stop jsonDisclose
	c.ctlJSON(&stop, "disclose", "--name", "stop", "--stop-on-success", "--array", "0-5", "--", `[ "$BATCH_ARRAY_VALUE" = 0 ] || sleep 60`)
	waitFor(t, patience, "the stop rule to fire", func() bool { return c.stopStatus(stop.Set.ID).Set.Stopped != nil })

	lines := make([]string, 12)
	for i := range lines {
		lines[i] = `sleep 0.4; echo "a-$BATCH_TASK_INDEX"`
	}
	var a jsonDisclose
	c.ctlJSON(&a, "disclose", "--name", "a", "--request", "--file", writeFile(t, "a.txt", lines...))

	var b jsonDisclose
	c.ctlJSON(&b, "disclose", "--name", "b", "--file", writeFile(t, "b.txt", "echo b0", "echo b1", "echo b2", "sleep 30", "sleep 30", "sleep 30"))
	c.mustCtl("request", "--no-wait", fmt.Sprintf("%d/0-2", b.Set.ID))
	var cb []jsonCancel
	// The three unrequested tasks only: `cancel SET` would stop the
	// requested ones too.
	c.ctlJSON(&cb, "cancel", fmt.Sprintf("%d/3-5", b.Set.ID))
	if cb[0].Canceled != 3 {
		t.Fatalf("cancel b = %+v, want 3 canceled", cb[0])
	}
	// A held set: its tasks never end, so all three stay held.
	var held jsonDisclose
	c.ctlJSON(&held, "disclose", "--name", "held", "--array", "0-2", "--", "sleep 60")
	c.mustCtl("hold", fmt.Sprint(held.Set.ID))

	// Dependencies across the kill: "waits" waits for gate, a disclosed
	// sleep that only a cancel ends, and must still wait after the
	// restart; "after-a" waits for a's last task, which ends around the
	// kill, and runs once, released before or after it.
	var gate, waits, afterA jsonDisclose
	c.ctlJSON(&gate, "disclose", "--name", "gate", "--max-running", "1", "--", "sleep", "300")
	c.ctlJSON(&waits, "disclose", "--name", "waits", "--request", "--after", fmt.Sprintf("%d:any", gate.Set.ID), "--", "echo", "waits")
	c.ctlJSON(&afterA, "disclose", "--name", "after-a", "--request", "--after-task", fmt.Sprintf("%d/11", a.Set.ID), "--", "echo", "after-a")

	// A waiting request for all of set a, started before the kill.
	waiter := exec.Command(c.batchctl, "--server", c.url(), "--token", c.adminToken(), "--retry", patience.String(), "--json", "request", fmt.Sprint(a.Set.ID))
	var waitOut, waitErr bytes.Buffer
	waiter.Stdout, waiter.Stderr = &waitOut, &waitErr
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = waiter.Process.Kill() })

	// Let part of the work finish and be billed, then kill the server.
	var before jsonBill
	waitFor(t, patience, "two bill lines", func() bool {
		before = jsonBill{}
		c.ctlJSON(&before, "bill")
		return len(before.Lines) >= 2
	})
	c.server.kill()

	// A disclose while the server is down: batchctl retries with the same
	// idempotency key until the server is back.
	late := exec.Command(c.batchctl, "--server", c.url(), "--token", c.adminToken(), "--retry", patience.String(), "--json", "disclose", "--name", "late", "--request", "--", "echo", "late")
	var lateOut, lateErr bytes.Buffer
	late.Stdout, late.Stderr = &lateOut, &lateErr
	if err := late.Start(); err != nil {
		t.Fatal(err)
	}
	c.start(args...)
	if err := late.Wait(); err != nil {
		t.Fatalf("disclose across the restart: %v\n%s", err, lateErr.String())
	}
	var l jsonDisclose
	if err := json.Unmarshal(lateOut.Bytes(), &l); err != nil {
		t.Fatalf("late disclose printed %q: %v", lateOut.String(), err)
	}

	if err := waiter.Wait(); err != nil {
		t.Fatalf("request waiting across the restart: %v\nstdout %s\nstderr %s", err, waitOut.String(), waitErr.String())
	}
	var waited struct {
		Tasks  []jsonTask `json:"tasks"`
		Failed int        `json:"failed"`
	}
	if err := json.Unmarshal(waitOut.Bytes(), &waited); err != nil || len(waited.Tasks) != 12 || waited.Failed != 0 {
		t.Errorf("waiting request printed %q (%v), want 12 finished tasks", waitOut.String(), err)
	}

	// The set waiting for gate still waits, and says for what; canceling
	// gate (any outcome will do) releases it.
	var waiting struct {
		Sets []jsonSet `json:"sets"`
	}
	c.ctlJSON(&waiting, "ls", "--state", "waiting")
	if len(waiting.Sets) != 1 || waiting.Sets[0].ID != waits.Set.ID {
		t.Errorf("waiting sets after the restart = %+v, want set %d alone", waiting.Sets, waits.Set.ID)
	}
	if why := c.mustCtl("why", fmt.Sprintf("%d/0", waits.Set.ID)).stdout; !strings.Contains(why, fmt.Sprintf("waiting for set %d", gate.Set.ID)) {
		t.Errorf("why after the restart: %q, want it waiting for set %d", why, gate.Set.ID)
	}
	c.mustCtl("cancel", fmt.Sprint(gate.Set.ID))
	if got := c.mustCtl("request", fmt.Sprintf("%d/0", waits.Set.ID)).stdout; got != "waits\n" {
		t.Errorf("released set printed %q, want %q", got, "waits\n")
	}
	if got := c.mustCtl("request", fmt.Sprintf("%d/0", afterA.Set.ID)).stdout; got != "after-a\n" {
		t.Errorf("set after a/11 printed %q, want %q", got, "after-a\n")
	}

	// Everything requested finishes: wait for b/0-2 and the late task too.
	c.mustCtl("request", fmt.Sprintf("%d/0-2", b.Set.ID))
	if got, want := c.mustCtl("request", fmt.Sprintf("%d/0", l.Set.ID)).stdout, "late\n"; got != want {
		t.Errorf("late task printed %q, want %q", got, want)
	}
	for i := 0; i < 12; i++ {
		if got, want := c.mustCtl("output", fmt.Sprintf("%d/%d", a.Set.ID, i)).stdout, fmt.Sprintf("a-%d\n", i); got != want {
			t.Errorf("output %d/%d = %q, want %q", a.Set.ID, i, got, want)
		}
	}

	// Acknowledged disclose, request and cancel survived.
	var sets struct {
		Sets []jsonSet `json:"sets"`
	}
	c.ctlJSON(&sets, "ls")
	names := map[string]int{}
	for _, s := range sets.Sets {
		names[s.Name]++
	}
	if names["a"] != 1 || names["b"] != 1 || names["late"] != 1 || names["stop"] != 1 || names["held"] != 1 ||
		names["gate"] != 1 || names["waits"] != 1 || names["after-a"] != 1 || len(sets.Sets) != 8 {
		t.Errorf("sets after restart = %+v, want a, b, late, stop, held, gate, waits and after-a once each", sets.Sets)
	}
	// The fired rule and the holds survived.
	if s := c.stopStatus(stop.Set.ID).Set; s.Stopped == nil || s.Stopped.Index != 0 || s.Stopped.Canceled != 5 || s.Counts.Canceled != 5 {
		t.Errorf("stopped set after the restart: %+v", s)
	}
	hs := c.stopStatus(held.Set.ID)
	if hs.Set.Counts.Held != 3 {
		t.Errorf("held set after the restart: %+v, want 3 held", hs.Set)
	}
	for _, task := range hs.Tasks {
		if task.State != "disclosed" {
			t.Errorf("held task %d is %s after the restart", task.Index, task.State)
		}
	}
	var sb jsonStatus
	c.ctlJSON(&sb, "status", fmt.Sprint(b.Set.ID))
	for _, task := range sb.Tasks {
		want := "finished"
		if task.Index >= 3 {
			want = "canceled"
		}
		if task.State != want {
			t.Errorf("task %d/%d is %s after the restart, want %s", task.Set, task.Index, task.State, want)
		}
	}

	// Bill lines written before the kill are intact, and every requested
	// task is billed exactly once.
	var after jsonBill
	c.ctlJSON(&after, "bill")
	byID := map[int64]jsonBillLine{}
	for _, line := range after.Lines {
		byID[line.ID] = line
	}
	for _, line := range before.Lines {
		if got, ok := byID[line.ID]; !ok || got != line {
			t.Errorf("bill line %+v changed to %+v across the restart", line, got)
		}
	}
	want := map[ref]int{}
	for i := int32(0); i < 12; i++ {
		want[ref{a.Set.ID, i}] = 1
	}
	for i := int32(0); i < 3; i++ {
		want[ref{b.Set.ID, i}] = 1
	}
	want[ref{l.Set.ID, 0}] = 1
	want[ref{waits.Set.ID, 0}] = 1
	want[ref{afterA.Set.ID, 0}] = 1
	got := billByTask(after)
	if len(got) != len(want) {
		t.Errorf("billed tasks = %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("task %d/%d billed %d times, want %d", k.set, k.index, got[k], n)
		}
	}
	if t.Failed() {
		t.Logf("bill after restart: %s", strings.TrimSpace(c.mustCtl("bill", "--lines").stdout))
	}
}
