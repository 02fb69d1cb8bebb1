package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeepReachesEveryWayOfDisclosing: --keep applies to a command after
// --, to --file lines and to an array; a --spec task takes "keep" of its
// own; status SET/I shows the patterns, and --dir writes each task's kept
// file under DIR/SET/I.
func TestKeepReachesEveryWayOfDisclosing(t *testing.T) {
	e := newEnv(t, 2)
	dir := t.TempDir()
	lines := filepath.Join(dir, "lines.txt")
	if err := os.WriteFile(lines, []byte("echo line > f\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(spec, []byte(`[{"command": "echo spec > g", "keep": ["g"]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	set := strings.TrimSpace(e.ok("disclose", "-q", "--keep", "f", "--", "sh", "-c", "echo argv > f"))
	e.ok("disclose", "--set", set, "--keep", "f", "--file", lines)
	e.ok("disclose", "--set", set, "--keep", "f", "--array", "0-0", "--", "sh", "-c", "echo array > f")
	e.ok("disclose", "--set", set, "--spec", spec)
	e.ok("request", "-q", set)
	if st := e.ok("status", set+"/3"); !strings.Contains(st, "keeps: g") || !strings.Contains(st, "kept files: 1 (5 B)") {
		t.Errorf("status %s/3:\n%s", set, st)
	}
	out := t.TempDir()
	e.ok("output", "-q", set, "--dir", out)
	for path, want := range map[string]string{"0/f": "argv\n", "1/f": "line\n", "2/f": "array\n", "3/g": "spec\n"} {
		if got, err := os.ReadFile(filepath.Join(out, set, path)); err != nil || string(got) != want {
			t.Errorf("%s/%s = %q, %v; want %q", set, path, got, err, want)
		}
	}
	if _, errOut, code := e.run("disclose", "--keep", "../x", "--", "true"); code != exitInvalid || !strings.Contains(errOut, "--keep") {
		t.Errorf("disclose --keep ../x: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := e.run("output", "--files", set+"/0", "--stderr"); code != exitInvalid || !strings.Contains(errOut, "--files") {
		t.Errorf("output --files --stderr: exit %d, stderr %q", code, errOut)
	}
}
