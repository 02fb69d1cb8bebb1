package server_test

import (
	"sync"
	"testing"

	"batchd/server"
)

// recordGC is a server.GCPolicy that counts its calls and their restores.
type recordGC struct {
	mu                                 sync.Mutex
	tighten, loosen, restored, freeOSM int
}

func (g *recordGC) count(n *int) func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	*n++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.restored++
	}
}

func (g *recordGC) Tighten() func() { return g.count(&g.tighten) }
func (g *recordGC) Loosen() func()  { return g.count(&g.loosen) }
func (g *recordGC) FreeOSMemory() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.freeOSM++
}

// The server steers the collector only through the policy it is given:
// loading its state loosens it, and restores it after.
func TestGCPolicy(t *testing.T) {
	t.Parallel()
	g := &recordGC{}
	srv, err := server.New(server.Config{DataDir: t.TempDir(), TickInterval: -1, GC: g})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.loosen != 1 || g.restored != 1 || g.tighten != 0 {
		t.Errorf("after New: loosen %d, tighten %d, restored %d; want one loosen, restored", g.loosen, g.tighten, g.restored)
	}
}
