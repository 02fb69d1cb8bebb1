package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain runs the test binary as a livesim task when asked to: the
// test below stops and resumes a real task process.
func TestMain(m *testing.M) {
	if os.Getenv("LIVESIM_TEST_TASK") == "1" {
		if err := task(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTaskDoesNotRunWhileStopped: a task stopped (SIGSTOP) and resumed
// (SIGCONT) as the worker suspends a copy goes on from where it stopped.
// It does not count the stop as run time: its first progress after the
// resume is far from done, and it keeps running.
func TestTaskDoesNotRunWhileStopped(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "progress")
	// β huge and cap = scale: every draw is 3 s.
	cmd := exec.Command(os.Args[0], "--dir", dir, "--seed", "1", "--key", "j0", "--beta", "1e9", "--scale", "3", "--cap", "3", "--step", "50ms")
	cmd.Env = append(os.Environ(), "LIVESIM_TEST_TASK=1", "BATCH_TASK_INDEX=0", "BATCH_PROGRESS_FILE="+prog)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ended := make(chan struct{})
	go func() { done <- cmd.Wait(); close(ended) }()
	defer func() {
		_ = cmd.Process.Kill()
		<-ended
	}()
	lines := func() []float64 {
		b, _ := os.ReadFile(prog)
		var xs []float64
		for _, f := range strings.Fields(string(b)) {
			if x, err := strconv.ParseFloat(f, 64); err == nil {
				xs = append(xs, x)
			}
		}
		return xs
	}
	// Wait for its first progress, then stop it for longer than its draw.
	hang := time.Now().Add(2 * time.Minute)
	for len(lines()) == 0 {
		if time.Now().After(hang) {
			t.Fatalf("no progress from the task (stderr %q)", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	before := len(lines())
	time.Sleep(4 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for len(lines()) <= before {
		select {
		case err := <-done:
			t.Fatalf("the task ended on its resume (err %v, progress %v): it counted its stop as run time", err, lines())
		default:
		}
		if time.Now().After(hang) {
			t.Fatal("no progress after the resume")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := lines()[before]; got >= 0.9 {
		t.Fatalf("first progress after the resume %.3f, want far from done (progress %v)", got, lines())
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the task did not end")
	}
	if xs := lines(); xs[len(xs)-1] != 1 {
		t.Fatalf("last progress %v, want 1", xs[len(xs)-1])
	}
}
