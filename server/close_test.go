package server_test

import (
	"bytes"
	"runtime"
	"testing"

	"batchd/server"
)

// Close returns once the goroutines Start started (the listener's, the
// memory trimmer) have ended: none of them outlives the server to read
// its closed store. Not parallel: it counts the process's goroutines that
// Start created, and parallel tests start servers.
func TestCloseJoinsGoroutines(t *testing.T) {
	// A goroutine's stack names its creator from its creation on, run or
	// not yet.
	started := func() int {
		return bytes.Count(stacks(), []byte("created by batchd/server.(*Server).Start in goroutine"))
	}
	before := started()
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), TickInterval: -1, Logger: logger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if got := started(); got != before+2 {
		t.Fatalf("%d goroutines of Start after Start, want %d", got, before+2)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if got := started(); got != before {
		t.Fatalf("%d goroutines of Start after Close, want %d: they outlived their server", got, before)
	}
}

// stacks returns every goroutine's stack.
func stacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
