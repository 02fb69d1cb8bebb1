package main

import (
	"strings"
	"testing"
	"time"

	"batchd/client"
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
	if !strings.Contains(out, "no worker is up") || !strings.Contains(out, "starts in:   ?") {
		t.Errorf("why %s/0:\n%s\nwant no worker is up, starts in ?", set, out)
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
