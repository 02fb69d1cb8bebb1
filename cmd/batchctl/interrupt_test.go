package main

import (
	"bytes"
	"context"
	"os"
	"testing"
)

// TestInterruptsOnlyForServerCalls checks that the Ctrl-C handler is set
// up by the commands that call the server, once, and not by --version,
// --help or completion, which would start its thread for nothing.
func TestInterruptsOnlyForServerCalls(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--version"}, 0},
		{[]string{"--help"}, 0},
		{[]string{"ls", "--help"}, 0},
		{[]string{completeCommand, "re"}, 0},
		{[]string{"--server", "http://127.0.0.1:1", "--retry", "0s", "ls"}, 1},
		{[]string{"--server", "http://127.0.0.1:1", "--retry", "0s", "disclose", "--", "true"}, 1},
	} {
		calls := 0
		ctx := context.WithValue(context.Background(), interruptsKey{}, func() { calls++ })
		var stdout, stderr bytes.Buffer
		argv := append([]string{"batchctl", "--config", os.DevNull, "--data", t.TempDir()}, tc.args...)
		run(ctx, argv, &stdout, &stderr)
		if calls != tc.want {
			t.Errorf("%q set the handler up %d times, want %d (stderr %q)", tc.args, calls, tc.want, stderr.String())
		}
	}
}

// TestInterruptCancels checks that the handler withInterrupts sets up
// cancels the context on SIGINT.
func TestInterruptCancels(t *testing.T) {
	ctx, cancel := withInterrupts(context.Background())
	defer cancel()
	watchInterrupts(ctx)
	watchInterrupts(ctx) // once only
	p, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done() // the test's timeout is the hang guard
}
