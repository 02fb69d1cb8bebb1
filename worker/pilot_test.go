package worker

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With IdleExit the agent leaves by itself once it held no copy for that
// long: after its copy ended and was reported, it registers a goodbye
// (zero slots) and Run returns nil.
func TestIdleExit(t *testing.T) {
	t.Parallel()
	b := setupWith(t, nil, func(c *Config) { c.IdleExit = 300 * time.Millisecond })
	b.srv.startCopy(1, 0, sh(`sleep 0.5; echo done`))
	if r := b.srv.report(1); r.Killed || r.ExitCode != 0 {
		t.Fatalf("copy 1: %v, want its result", r)
	}
	select {
	case err := <-b.done:
		b.done <- err // for Cleanup
		if err != nil {
			t.Fatalf("Run = %v, want nil after the idle exit", err)
		}
	case <-time.After(patience):
		t.Fatal("the idle agent did not leave")
	}
	b.srv.mu.Lock()
	last := b.srv.registers[len(b.srv.registers)-1]
	b.srv.mu.Unlock()
	if last.Slots != 0 {
		t.Errorf("last Register has %d slots, want 0 (the goodbye)", last.Slots)
	}
}

// In HandBack mode a copy that the batch system's signal ended just before
// the worker's own stop (the whole job gets SIGTERM) is handed back:
// reported killed, so the server runs it again and bills nothing, instead
// of reported as the task's failed result, whether the signal killed it or
// its trap chose an exit status (143, as a shell's, or 1). Without
// HandBack the same copy is reported as a failure: the case HandBack
// exists for.
func TestHandBack(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, script string
		exit         int32
	}{
		{"killed by the signal", `echo $$ > PID; exec sleep 1000`, 128 + int32(syscall.SIGTERM)},
		{"trap exits 143", `trap 'exit 143' TERM; echo $$ > PID; sleep 1000 & wait`, 143},
		{"trap exits 1", `trap 'exit 1' TERM; echo $$ > PID; sleep 1000 & wait`, 1},
	}
	for _, tc := range cases {
		for _, handBack := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/hand-back=%v", tc.name, handBack), func(t *testing.T) {
				t.Parallel()
				b := setupWith(t, nil, func(c *Config) { c.HandBack = handBack })
				pidFile := filepath.Join(b.dir, "pid")
				b.srv.startCopy(1, 0, sh(strings.ReplaceAll(tc.script, "PID", pidFile)))
				b.srv.startCopy(2, 1, sh(`echo finished`))
				if r := b.srv.report(2); r.Killed || r.ExitCode != 0 {
					t.Fatalf("copy 2 (ended before the stop): %v, want its result", r)
				}
				pid := readPIDs(t, pidFile, 1)[0]
				// The batch system signals the copy first, then the worker.
				if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the copy to die", func() bool { return !alive(pid) })
				// ... and the agent to take its end (a zombie is not dead to
				// it yet), as far as delivering it or holding it for the
				// stop: the stop comes after, as the batch system's may.
				eventually(t, "the agent to deliver or hold the copy's end", func() bool {
					if b.srv.reportCount(1) > 0 {
						return true
					}
					b.a.mu.Lock()
					defer b.a.mu.Unlock()
					c := b.a.copies[1]
					return c == nil || c.awaitingStop
				})
				if err := b.stop(); err != nil {
					t.Fatalf("Run = %v", err)
				}
				r := b.srv.report(1)
				if handBack && !r.Killed {
					t.Errorf("hand-back: the signalled copy was reported as a result (exit %d), not handed back", r.ExitCode)
				}
				if !handBack && (r.Killed || r.ExitCode != tc.exit) {
					t.Errorf("without hand-back: %v, want exit %d reported as the result", r, tc.exit)
				}
			})
		}
	}
}

// In HandBack mode a copy that fails on its own, with no stop coming, is
// still the task's result (after handBackWait), and a success before the
// stop is delivered at once.
func TestHandBackRealFailure(t *testing.T) {
	t.Parallel()
	b := setupWith(t, nil, func(c *Config) { c.HandBack = true })
	b.srv.startCopy(1, 0, sh(`exit 3`))
	b.srv.startCopy(2, 1, sh(`exit 0`))
	if r := b.srv.report(2); r.Killed || r.ExitCode != 0 {
		t.Errorf("copy 2: %v, want exit 0 as its result", r)
	}
	if r := b.srv.report(1); r.Killed || r.ExitCode != 3 {
		t.Errorf("copy 1: %v, want exit 3 as its result", r)
	}
}
