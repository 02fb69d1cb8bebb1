package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The stop rule fires on the server: the first task prints the match, the
// second (running, sleeping) is killed, the rest are canceled, and status
// says which task fired it, in its header and in JSON.
func TestStopOnOutput(t *testing.T) {
	e := newEnv(t, 2)
	if _, errOut, code := e.run("disclose", "--stop-on-output", "((", "--", "true"); code != exitInvalid || !strings.Contains(errOut, "stop-on-output") {
		t.Fatalf("a bad expression: exit %d, %q", code, errOut)
	}
	set := strings.TrimSpace(e.ok("disclose", "-q", "--stop-on-output", "^found [0-9]+", "--array", "0-9", "--",
		`if [ "$BATCH_ARRAY_VALUE" = 0 ]; then echo found 42; else sleep 60; fi`))
	var st struct {
		Set struct {
			Counts struct {
				Canceled int64 `json:"canceled"`
				Executed int64 `json:"executed"`
			} `json:"counts"`
			Stopped *struct {
				Index    int32  `json:"index"`
				Why      string `json:"why"`
				Canceled int64  `json:"canceled"`
			} `json:"stopped"`
		} `json:"set"`
	}
	for deadline := time.Now().Add(time.Minute); st.Set.Stopped == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("the rule did not fire: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
		e.json(&st, "status", set)
	}
	if s := st.Set; s.Stopped.Index != 0 || s.Stopped.Why != "output matched" || s.Stopped.Canceled != 9 || s.Counts.Canceled != 9 || s.Counts.Executed != 1 {
		t.Fatalf("set after the stop: %+v", s)
	}
	if out := e.ok("status", set); !strings.Contains(out, "stop rule: on output") || !strings.Contains(out, "fired by "+set+"/0 (output matched)") {
		t.Fatalf("status header lacks the rule:\n%s", out)
	}
	// The match's output is the user's to request.
	if out := e.ok("request", set+"/0"); out != "found 42\n" {
		t.Fatalf("request of the task that fired: %q", out)
	}
}

// Held tasks wait and why says so; release lets them run. update changes
// a set in place; disclose --set with a cap of 0 points to update.
func TestHoldReleaseUpdate(t *testing.T) {
	e := newEnv(t, 1)
	if _, errOut, code := e.run("hold"); code != exitInvalid || !strings.Contains(errOut, "hold what?") {
		t.Fatalf("hold without a set: exit %d, %q", code, errOut)
	}
	set := strings.TrimSpace(e.ok("disclose", "-q", "--max-running", "1", "--array", "0-1", "--", "sleep 60"))
	if out := e.ok("hold", set); !strings.Contains(out, "held") {
		t.Fatalf("hold printed %q", out)
	}
	// Task 0 may have started before the hold; task 1 waits either way.
	if out := e.ok("why", set+"/1"); !strings.Contains(out, "held") {
		t.Fatalf("why of a held task:\n%s", out)
	}
	if out := e.ok("status", set); !strings.Contains(out, "held (batchctl release "+set+")") {
		t.Fatalf("status of a held set:\n%s", out)
	}
	if out := e.ok("release", set); !strings.Contains(out, "0 held now") {
		t.Fatalf("release printed %q", out)
	}
	if _, errOut, code := e.run("update", set); code != exitInvalid || !strings.Contains(errOut, "nothing to change") {
		t.Fatalf("update without a change: exit %d, %q", code, errOut)
	}
	if _, _, code := e.run("update", set, "--stop-on-exit", "300"); code != exitInvalid {
		t.Fatalf("update with a bad exit code: exit %d", code)
	}
	if out := e.ok("update", set, "--max-running", "0", "--timeout", "5s", "--stop-after", "2"); !strings.Contains(out, "no cap") ||
		!strings.Contains(out, "stops after 2 successes") {
		t.Fatalf("update printed %q", out)
	}
	var st struct {
		Set struct {
			MaxRunning     int32   `json:"max_running"`
			TimeoutSeconds float64 `json:"timeout_seconds"`
			Stop           struct {
				After int32 `json:"after"`
			} `json:"stop"`
		} `json:"set"`
	}
	e.json(&st, "status", set)
	if st.Set.MaxRunning != 0 || st.Set.TimeoutSeconds != 5 || st.Set.Stop.After != 2 {
		t.Fatalf("set after update: %+v", st.Set)
	}
	if _, errOut, code := e.run("disclose", "--set", set, "--max-running", "0"); code != exitInvalid || !strings.Contains(errOut, fmt.Sprintf("batchctl update %s --max-running 0", set)) {
		t.Fatalf("disclose --set --max-running 0: exit %d, %q", code, errOut)
	}
	if out := e.ok("disclose", "--set", set, "--max-running", "3"); !strings.Contains(out, "at most 3") {
		t.Fatalf("disclose --set --max-running 3 printed %q", out)
	}
	e.ok("cancel", set)
}

// A --spec file carries a stop rule as the flags do; a bad one is refused
// naming the file's field.
func TestSpecStopRule(t *testing.T) {
	e := newEnv(t, 1)
	bad := `{"stop_on_exit": "x", "tasks": [{"argv": ["true"]}]}`
	if _, errOut, code := e.run("disclose", "--spec", writeTemp(t, bad)); code != exitInvalid || !strings.Contains(errOut, "stop_on_exit") {
		t.Fatalf("a bad stop_on_exit: exit %d, %q", code, errOut)
	}
	spec := `{"name": "s", "stop_on_exit": "7", "tasks": [{"command": "exit 7"}, {"command": "sleep 60"}, {"command": "sleep 60"}]}`
	set := strings.TrimSpace(e.ok("disclose", "-q", "--spec", writeTemp(t, spec)))
	if out := e.ok("status", set); !strings.Contains(out, "stop rule: on exit 7") {
		t.Fatalf("status of a set from a spec with a stop rule:\n%s", out)
	}
	var st struct {
		Set struct {
			Stopped *struct {
				Index int32 `json:"index"`
			} `json:"stopped"`
		} `json:"set"`
	}
	for deadline := time.Now().Add(time.Minute); st.Set.Stopped == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("the spec's rule did not fire: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
		e.json(&st, "status", set)
	}
	if st.Set.Stopped.Index != 0 {
		t.Fatalf("fired by task %d, want 0", st.Set.Stopped.Index)
	}
}
