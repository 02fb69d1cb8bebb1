package worker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/internal/wire"
)

// A worker that cannot renew its lease stops its copies when the lease
// ends; a renewal lets the ones the server still wants run again and kills
// the ones it lost.
func TestLeaseLapseStopsCopies(t *testing.T) {
	t.Parallel()
	b := setup(t, func(f *fakeServer) { f.lease, f.hb = 1, 0.1 })
	pidFile := filepath.Join(b.dir, "pid")
	b.srv.startCopy(1, 0, sh(`echo $$ > `+pidFile+`; while :; do :; done`))
	pid := readPIDs(t, pidFile, 1)[0]
	state := func() byte { st, _ := readProcStat(pid); return st.State }
	lapsed := func() bool { b.a.mu.Lock(); defer b.a.mu.Unlock(); return b.a.leaseLapsed }

	// The server goes away: within about a lease the copy is stopped.
	b.srv.stop()
	eventually(t, "copy stopped at the lease's end", func() bool { return lapsed() && state() == 'T' })
	b.a.mu.Lock()
	if c := b.a.copies[1]; c == nil || !c.leaseStopped || c.state != copyRunning {
		t.Errorf("copy 1 after the lapse: %+v, want lease-stopped and running as the server knows it", c)
	}
	b.a.mu.Unlock()
	// Back before it lost the copy: the copy runs on.
	b.srv.start()
	eventually(t, "copy running again", func() bool { return !lapsed() && state() != 'T' })
	if n := b.srv.reportCount(1); n != 0 {
		t.Fatalf("copy 1 reported %d times, want still running", n)
	}
	// Gone again, and this time the server lost the copy meanwhile: it is
	// killed, not resumed.
	b.srv.stop()
	eventually(t, "copy stopped again", func() bool { return lapsed() && state() == 'T' })
	b.srv.mu.Lock()
	b.srv.registerKill = []int64{1}
	b.srv.mu.Unlock()
	b.srv.start()
	if r := b.srv.report(1); !r.Killed {
		t.Errorf("copy 1 report %v, want killed", r)
	}
}

// A worker that cannot suspend kills its copies when its lease ends; a
// result held from before is kept and delivered.
func TestLeaseLapseKillsWithoutSuspend(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(f *fakeServer) { f.lease, f.hb = 1, 0.1 }, func(c *Config) { c.NoSuspend = true })
	gate := filepath.Join(b.dir, "go")
	b.srv.startCopy(1, 0, sh(`while :; do sleep 0.05; done`))
	b.srv.startCopy(2, 1, sh(`while [ ! -e `+gate+` ]; do sleep 0.02; done; echo done`))
	b.srv.waitFor("copies in heartbeat", func() bool {
		n := len(b.srv.heartbeats)
		return n > 0 && len(b.srv.heartbeats[n-1].Copies) == 2
	})
	// Copy 2 ends before the outage, its report refused for now: its
	// result is held through it.
	b.srv.mu.Lock()
	b.srv.refuse[2] = connect.CodeUnavailable
	b.srv.mu.Unlock()
	touch(t, gate)
	eventually(t, "copy 2 result held", func() bool {
		b.a.mu.Lock()
		defer b.a.mu.Unlock()
		c := b.a.copies[2]
		return c != nil && c.result != nil
	})
	b.srv.stop()
	b.srv.mu.Lock()
	delete(b.srv.refuse, 2)
	b.srv.mu.Unlock()
	eventually(t, "copy 1 killed at the lease's end", func() bool {
		b.a.mu.Lock()
		defer b.a.mu.Unlock()
		c := b.a.copies[1]
		return c != nil && c.result != nil && c.result.Killed
	})
	b.srv.start()
	if r := b.srv.report(1); !r.Killed {
		t.Errorf("copy 1 report %v, want killed", r)
	}
	if r := b.srv.report(2); r.Killed || string(r.Stdout) != "done\n" {
		t.Errorf("copy 2 report %v, want its held result", r)
	}
}

// The protocol's clocks follow the lease.
func TestLeaseTiming(t *testing.T) {
	t.Parallel()
	hb, call, ping := wire.LeaseTiming(5 * time.Second)
	if hb != time.Second || call != 5*time.Second/3 || ping != time.Second {
		t.Errorf("LeaseTiming(5s) = %v, %v, %v", hb, call, ping)
	}
	l := newLeaseClient(15 * time.Second)
	old := l.t
	if old.HTTP2.SendPingTimeout != 3*time.Second || old.HTTP2.PingTimeout != 3*time.Second {
		t.Errorf("15 s lease: pings %+v", old.HTTP2)
	}
	l.setLease(5 * time.Second)
	if l.t == old || l.t.HTTP2.SendPingTimeout != time.Second {
		t.Errorf("5 s lease: pings %+v", l.t.HTTP2)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// BenchNoExec (benchmarks only) ends each copy at once, exit 0, without
// running its command.
func TestBenchNoExec(t *testing.T) {
	t.Parallel()
	b := setupWith(t, nil, func(c *Config) { c.BenchNoExec = true })
	marker := filepath.Join(b.dir, "ran")
	b.srv.startCopy(1, 0, sh(`touch `+marker+`; exit 3`))
	if r := b.srv.report(1); r.ExitCode != 0 || r.Killed || r.StartError != "" {
		t.Errorf("report %v, want exit 0", r)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the command ran: %v", err)
	}
}
