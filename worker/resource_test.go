package worker

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// TestRegisterOffersMemory: the agent offers the machine's memory by
// default, what Config.MemoryMB says otherwise, none when it is negative;
// it registers its isolation and its limits, and says once, in its log,
// that its tasks are not isolated (the tests' agents run with none).
func TestRegisterOffersMemory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  int64
		want func(int64) bool
	}{
		{0, func(m int64) bool { return m > 0 && m == machineMemoryMB() }},
		{2048, func(m int64) bool { return m == 2048 }},
		{-1, func(m int64) bool { return m == 0 }},
	} {
		var log bytes.Buffer
		b := setupWith(t, nil, func(c *Config) {
			c.MemoryMB = tc.cfg
			c.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))
		})
		b.srv.mu.Lock()
		got := b.srv.registers[0].GetMemoryMb()
		iso, limits := b.srv.registers[0].GetIsolation(), b.srv.registers[0].GetLimits()
		b.srv.mu.Unlock()
		if iso != "none" || limits == "" {
			t.Errorf("registered isolation %q, limits %q; want none and some limits", iso, limits)
		}
		if !tc.want(got) {
			t.Errorf("Config.MemoryMB %d: registered %d MiB", tc.cfg, got)
		}
		if err := b.stop(); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(log.String(), "NOT ISOLATED"); n != 1 {
			t.Errorf("the log says %d times that tasks are not isolated, want once:\n%s", n, log.String())
		}
	}
}

// syncWriter serializes writes to w (the agent logs from several
// goroutines).
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
