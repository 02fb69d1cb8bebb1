package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRelativeCommandHint: a task that names its program by a relative
// path runs in its scratch directory, exits 127, and request, status and
// output say why on stderr; with --dir it finds the program; a task that
// exits 127 for a program looked up in $PATH gets no hint.
func TestRelativeCommandHint(t *testing.T) {
	e := newEnv(t, 1)
	// The worker may run copies as another user: a directory it can
	// enter (t.TempDir's are 0700 under a 0700 parent).
	dir, err := os.MkdirTemp("", "batchctl-hint-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sim.sh"), []byte("#!/bin/sh\necho sim $1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	set := strings.TrimSpace(e.ok("disclose", "-q", "--", "./sim.sh", "1"))
	_, errOut, code := e.run("request", set+"/0")
	if code != 127 || !strings.Contains(errOut, "scratch directory") || !strings.Contains(errOut, "./sim.sh") {
		t.Errorf("request: exit %d, stderr %q; want 127 and a hint naming the scratch directory and ./sim.sh", code, errOut)
	}
	for _, args := range [][]string{{"status", set + "/0"}, {"status", set}, {"output", set + "/0"}} {
		if _, errOut, code := e.run(args...); code != 0 || !strings.Contains(errOut, "hint: task "+set+"/0 exited 127") {
			t.Errorf("%v: exit %d, stderr %q; want the hint", args, code, errOut)
		}
	}
	set = strings.TrimSpace(e.ok("disclose", "-q", "--dir", dir, "--", "./sim.sh", "2"))
	if out, errOut, code := e.run("request", set+"/0"); code != 0 || out != "sim 2\n" {
		t.Errorf("request with --dir: %q, %q, exit %d", out, errOut, code)
	}
	set = strings.TrimSpace(e.ok("disclose", "-q", "--", "sh", "-c", "no-such-program-here"))
	if _, errOut, code := e.run("request", set+"/0"); code != 127 || strings.Contains(errOut, "hint:") {
		t.Errorf("request of a $PATH program: exit %d, stderr %q; want 127 and no hint", code, errOut)
	}
}
