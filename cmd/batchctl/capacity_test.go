package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"batchd/client"
	"batchd/sched"
)

// TestImpossibleRequestRefused: on a worker of 2 slots, a task asking for
// 4 slots (or more memory than the worker has) is refused at disclose
// with exit 3, naming the largest worker; one that fits is accepted.
func TestImpossibleRequestRefused(t *testing.T) {
	e := newEnv(t, 2)
	waitWorker(t, e)
	for _, args := range [][]string{{"--cpus", "4"}, {"--memory", "1000T"}} {
		out, errOut, code := e.run(append(append([]string{"disclose", "--request"}, args...), "--", "sleep", "1")...)
		if code != exitPrecondition || !strings.Contains(errOut, "the largest worker up has 2 slots") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("disclose %v: exit %d, stdout %q, stderr %q; want exit %d and one line naming the largest worker", args, code, out, errOut, exitPrecondition)
		}
	}
	e.ok("disclose", "-q", "--cpus", "2", "--", "true")
}

// TestWhyNoWorkerUp: with no worker at all, a task asking for 4 slots is
// accepted (workers may come) and why says no worker is up, with no ETA.
func TestWhyNoWorkerUp(t *testing.T) {
	e := newEnv(t, 0)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--request", "--cpus", "4", "--", "sleep", "1"))
	out := e.ok("why", set+"/0")
	if !strings.Contains(out, "no worker is up") || !strings.Contains(out, "starts in:   unknown") {
		t.Errorf("why %s/0:\n%s\nwant no worker is up, starts in unknown", set, out)
	}
}

// waitWorker waits until the env's worker has registered its slots. It
// lives in another goroutine with its own connection: there is no clock
// to inject, so it polls; go test's -timeout bounds a hang.
func waitWorker(t *testing.T, e *env) {
	t.Helper()
	cl := client.New(client.Config{Server: e.url, HTTPClient: client.WithToken(nil, e.srv.AdminToken())})
	for {
		c, err := cl.GetCluster(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if c.Slots > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCancelSetCancelsRequested: on one slot, a set of a running requested
// task, a queued requested one and a disclosed one: cancel SET cancels all
// three; the running one is stopped and billed, the queued one canceled
// with no ledger line.
func TestCancelSetCancelsRequested(t *testing.T) {
	e := newEnv(t, 1)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--request", "--file", writeTemp(t, "sleep 60\nsleep 60\n")))
	e.ok("disclose", "-q", "--set", set, "--", "sleep", "60")
	id := sched.SetID(mustAtoi(t, set))
	cl := client.New(client.Config{Server: e.url, HTTPClient: client.WithToken(nil, e.srv.AdminToken())})
	err := cl.Watch(t.Context(), id, func(u client.WatchUpdate) error {
		if u.Set.Counts.Running == 1 {
			return client.ErrStopWatch
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.ok("cancel", set), fmt.Sprintf("set %s: canceled 2, stopped 1 (billed for what they used)\n", set); got != want {
		t.Errorf("cancel %s = %q, want %q", set, got, want)
	}
	var st struct {
		Tasks []taskView `json:"tasks"`
	}
	e.json(&st, "status", set)
	for _, x := range st.Tasks {
		if x.State != "canceled" {
			t.Errorf("task %d: %s, want canceled", x.Index, x.State)
		}
	}
	var bill struct {
		Lines []struct {
			Task string `json:"task"`
		} `json:"lines"`
	}
	e.json(&bill, "bill", "--set", set)
	if len(bill.Lines) != 1 {
		t.Errorf("bill of set %s: %d lines (%+v), want 1: the stopped task only", set, len(bill.Lines), bill.Lines)
	}
}
