package worker

import (
	"path/filepath"
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
// of reported as the task's failed result. Without HandBack the same copy
// is reported as a failure (exit 143): the case HandBack exists for.
func TestHandBack(t *testing.T) {
	t.Parallel()
	for _, handBack := range []bool{true, false} {
		b := setupWith(t, nil, func(c *Config) { c.HandBack = handBack })
		pidFile := filepath.Join(b.dir, "pid")
		b.srv.startCopy(1, 0, sh(`echo $$ > `+pidFile+`; exec sleep 1000`))
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
		// ... and the agent to see it end (a zombie is not dead to it
		// yet): the stop must come after, as the batch system's does.
		eventually(t, "the agent to see the copy end", func() bool {
			b.a.mu.Lock()
			defer b.a.mu.Unlock()
			c := b.a.copies[1]
			return c == nil || c.state == copyEnded
		})
		if err := b.stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		r := b.srv.report(1)
		if handBack && !r.Killed {
			t.Errorf("hand-back: the signalled copy was reported as a result (exit %d), not handed back", r.ExitCode)
		}
		if !handBack && (r.Killed || r.ExitCode != 128+int32(syscall.SIGTERM)) {
			t.Errorf("without hand-back: %v, want exit 143 reported as the result", r)
		}
	}
}
