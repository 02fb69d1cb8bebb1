//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFollowOutput follows a running task with `batchctl output --follow`,
// on the server's own slots and on a remote `batchd worker`: the follower
// prints the first line while status still says the task runs (the task
// waits for a file the test writes only then), and ends with the task,
// having printed everything once. A follower of the finished task gets
// its stored output; another user's follow is not found.
func TestFollowOutput(t *testing.T) {
	for _, remote := range []bool{false, true} {
		name := "local"
		if remote {
			name = "remote"
		}
		t.Run(name, func(t *testing.T) {
			var c *cluster
			if remote {
				c = startServer(t, "--slots", "0")
				c.startWorker("wf", 1)
			} else {
				c = startServer(t, "--slots", "1")
			}
			gate := filepath.Join(t.TempDir(), "go")
			var d jsonDisclose
			c.ctlJSON(&d, "disclose", "--request", "--no-speculation", "--", "sh", "-c",
				`echo one; echo warn >&2; while [ ! -e "$0" ]; do sleep 0.05; done; echo two`, gate)
			task := fmt.Sprintf("%d/0", d.Set.ID)

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			cmd := exec.CommandContext(ctx, c.batchctl, "--server", c.url(), "--data", c.data, "--config", os.DevNull,
				"output", "--follow", task)
			stdout, stderr := &syncBuffer{}, &syncBuffer{}
			cmd.Stdout, cmd.Stderr = stdout, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()

			waitFor(t, patience, "the first line followed", func() bool { return stdout.String() == "one\n" })
			var st jsonStatus
			c.ctlJSON(&st, "status", fmt.Sprint(d.Set.ID))
			if s := st.Tasks[0].State; s != "requested" || len(st.Tasks[0].Copies) == 0 || st.Tasks[0].Copies[0].State != "running" {
				t.Fatalf("task %s while its first line was followed, want requested with a running copy: %+v", s, st.Tasks[0])
			}
			select {
			case err := <-done:
				t.Fatalf("follow ended while the task runs: %v\n%s%s", err, stdout.String(), stderr.String())
			default:
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("follow: %v\nstderr: %s", err, stderr.String())
			}
			if got := stdout.String(); got != "one\ntwo\n" {
				t.Errorf("followed stdout %q, want %q", got, "one\ntwo\n")
			}
			if got := stderr.String(); got != "warn\n" {
				t.Errorf("followed stderr %q, want %q", got, "warn\n")
			}

			r := c.mustCtl("output", "--follow", task)
			if r.stdout != "one\ntwo\n" || r.stderr != "warn\n" {
				t.Errorf("follow of the finished task: stdout %q stderr %q", r.stdout, r.stderr)
			}
			other := addUser(t, c, 0, "mallory")
			if r := c.ctlAs(other, "output", "--follow", task); r.code != 2 || !strings.Contains(r.stderr, "not found") {
				t.Errorf("another user's follow: exit %d, stderr %q; want 2, not found", r.code, r.stderr)
			}
		})
	}
}
