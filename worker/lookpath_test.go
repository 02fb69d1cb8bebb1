package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A command name is found on PATH as exec.Command finds it, the child sees
// the name it was given as argv[0], and a program put earlier on PATH is
// found once the cached answer is pathCacheTTL old.
func TestPathCache(t *testing.T) {
	early, late := t.TempDir(), t.TempDir()
	script := []byte("#!/bin/sh\nexit 0\n")
	if err := os.WriteFile(filepath.Join(late, "batchd-probe"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", early+string(os.PathListSeparator)+late)
	var pc pathCache
	t0 := time.Unix(1000, 0)
	run := func(at time.Time) string {
		t.Helper()
		cmd := pc.command(at, []string{"batchd-probe"})
		if cmd.Err != nil {
			t.Fatal(cmd.Err)
		}
		if cmd.Args[0] != "batchd-probe" {
			t.Fatalf("argv[0] = %q, want the name as given", cmd.Args[0])
		}
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		return cmd.Path
	}
	if p := run(t0); p != filepath.Join(late, "batchd-probe") {
		t.Fatalf("found %s", p)
	}
	if err := os.WriteFile(filepath.Join(early, "batchd-probe"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if p := run(t0.Add(pathCacheTTL / 2)); p != filepath.Join(late, "batchd-probe") {
		t.Fatalf("within the TTL found %s, want the remembered one", p)
	}
	if p := run(t0.Add(pathCacheTTL)); p != filepath.Join(early, "batchd-probe") {
		t.Fatalf("after the TTL found %s, want the one earlier on PATH", p)
	}

	// Not found: exec.Command's own error, every time.
	if cmd := pc.command(t0, []string{"batchd-no-such-program"}); cmd.Err == nil {
		t.Fatal("a missing program has no error")
	} else if _, ok := cmd.Err.(*exec.Error); !ok {
		t.Fatalf("error %T %v, want exec's", cmd.Err, cmd.Err)
	}
	// A path is used as it is.
	if cmd := pc.command(t0, []string{"./x", "a"}); cmd.Path != "./x" || cmd.Args[1] != "a" {
		t.Fatalf("path command: %q %q", cmd.Path, cmd.Args)
	}
}
