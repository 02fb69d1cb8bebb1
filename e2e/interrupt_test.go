package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCtlInterruptDuringCall sends SIGINT to a real batchctl process
// whose call is in flight (a listener that reads the request and never
// answers) and checks that batchctl says so and exits with 130, not by
// the signal: the handler is set up before the first call.
func TestCtlInterruptDuringCall(t *testing.T) {
	_, batchctl := binaries(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(batchctl, "--server", "http://"+ln.Addr().String(), "--token", "bd_x", "--config", os.DevNull,
		"--data", os.DevNull, "request", "1/0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	conn, err := ln.Accept() // the test's timeout is the hang guard
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The whole request read: batchctl is in its call.
	if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("batchctl after SIGINT: %v, want exit status 130 (stderr %q)", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr = %q, want it to say interrupted", stderr.String())
	}
}
