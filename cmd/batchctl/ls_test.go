package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAfterAndLs: a set disclosed --after another waits (why says for
// what), starts when the other ends, and ls finds sets by state, name and
// label.
func TestAfterAndLs(t *testing.T) {
	e := newEnv(t, 1)
	first := strings.TrimSpace(e.ok("disclose", "-q", "--request", "--name", "first", "--label", "proj=x", "--", "sleep", "1"))
	second := strings.TrimSpace(e.ok("disclose", "-q", "--request", "--name", "second", "--after", first, "--", "echo", "two"))
	why := e.ok("why", second+"/0")
	if !strings.Contains(why, "waiting for set "+first) {
		t.Errorf("why printed %q, want it to name set %s", why, first)
	}
	if strings.Contains(why, "class:") || strings.Contains(why, "queue;") {
		t.Errorf("why printed a class and a place in line for a task in neither queue: %q", why)
	}
	if st := e.ok("status", second); !strings.Contains(st, "state: waiting; after "+first) {
		t.Errorf("status of the waiting set: %q", st)
	}
	var sets struct {
		Sets []setView `json:"sets"`
	}
	if err := json.Unmarshal([]byte(e.ok("ls", "--json", "--state", "waiting")), &sets); err != nil || len(sets.Sets) != 1 ||
		sets.Sets[0].State != "waiting" || len(sets.Sets[0].After) != 1 || sets.Sets[0].After[0] != first {
		t.Fatalf("ls --state waiting: %+v %v", sets, err)
	}
	// request waits for the result: the set ran once the first ended.
	if out := e.ok("request", second); !strings.Contains(out, "finished") {
		t.Fatalf("request printed %q", out)
	}
	if err := json.Unmarshal([]byte(e.ok("ls", "--json", "--state", "done")), &sets); err != nil {
		t.Fatal(err)
	}
	if len(sets.Sets) != 2 {
		t.Fatalf("ls --state done: %+v, want both sets", sets.Sets)
	}
	if out := e.ok("ls", "--label", "proj=x", "--name", "fir*"); !strings.Contains(out, "first") || strings.Contains(out, "second") {
		t.Errorf("ls --label proj=x --name fir*: %q", out)
	}
	if _, stderr, code := e.run("disclose", "--after", "99999", "--", "true"); code == 0 || !strings.Contains(stderr, "not found") {
		t.Errorf("--after an unknown set: exit %d, %q", code, stderr)
	}
	if _, stderr, code := e.run("disclose", "--after", first+"/0", "--", "true"); code == 0 || !strings.Contains(stderr, "--after-task") {
		t.Errorf("--after SET/I: exit %d, %q", code, stderr)
	}
	if _, stderr, code := e.run("ls", "--state", "bogus"); code == 0 || !strings.Contains(stderr, "--state") {
		t.Errorf("ls --state bogus: exit %d, %q", code, stderr)
	}
}
