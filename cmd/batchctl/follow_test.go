package main

import (
	"strings"
	"testing"
)

// TestOutputFollow: --follow prints stdout to stdout and stderr to
// stderr (--stderr: stderr to stdout) until the task ends; it refuses
// --json and a disclosed task (its output is not readable).
func TestOutputFollow(t *testing.T) {
	e := newEnv(t, 1)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--request", "--", "sh", "-c", "echo out; echo err >&2"))
	out, errOut, code := e.run("output", "--follow", set+"/0")
	if code != 0 || out != "out\n" || errOut != "err\n" {
		t.Errorf("output --follow: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out := e.ok("output", "-f", "--stderr", set+"/0"); out != "err\n" {
		t.Errorf("output -f --stderr: %q", out)
	}
	if _, _, code := e.run("output", "--follow", "--json", set+"/0"); code != exitInvalid {
		t.Errorf("output --follow --json: exit %d, want %d", code, exitInvalid)
	}
	disclosed := strings.TrimSpace(e.ok("disclose", "-q", "--", "true"))
	if _, errOut, code := e.run("output", "--follow", disclosed+"/0"); code != exitPrecondition || !strings.Contains(errOut, "request it") {
		t.Errorf("output --follow of a disclosed task: exit %d, stderr %q", code, errOut)
	}
}
