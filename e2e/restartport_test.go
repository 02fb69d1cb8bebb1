package e2e

import (
	"net"
	"testing"
	"time"
)

// TestRestartRetriesATakenPort: a server restarted on its address while
// another socket holds that port for a moment (a client that dialled the
// dead port and connected to itself, as TestKillUnderAPILoad's clients
// once did in CI) starts once the port is free, instead of failing the
// test with "address already in use".
func TestRestartRetriesATakenPort(t *testing.T) {
	c := startServer(t, "--slots", "0")
	c.server.kill()
	l, err := net.Listen("tcp", c.addr)
	if err != nil {
		t.Fatalf("take the dead server's port: %v", err)
	}
	freed := make(chan struct{})
	go func() {
		defer close(freed)
		time.Sleep(500 * time.Millisecond) // a moment the restart must outlast; no bound is asserted
		l.Close()
	}()
	c.start("--slots", "0")
	<-freed
	c.mustCtl("status")
}
