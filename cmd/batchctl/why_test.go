package main

import (
	"strings"
	"testing"
	"time"
)

// TestWhyAndMaxRunning: on a server without workers, a set capped at one
// copy: why names the reasons (no worker up, the cap) and the line, status has a WHY column and
// shows the cap, --json carries the same.
func TestWhyAndMaxRunning(t *testing.T) {
	e := newEnv(t, 0)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--request", "--max-running", "1", "--file", writeTemp(t, "true\ntrue\ntrue\n")))
	out := e.ok("why", set+"/0")
	for _, want := range []string{"task " + set + "/0 (requested) waits", "no worker is up", "class:       requested", "position 0", "0 of 0 free", "assuming:"} {
		if !strings.Contains(out, want) {
			t.Errorf("why %s/0 printed %q; want %q in it", set, out, want)
		}
	}
	if out := e.ok("why", set+"/2"); !strings.Contains(out, "capped by --max-running") || !strings.Contains(out, "position 2") {
		t.Errorf("why %s/2 printed %q; want capped at position 2", set, out)
	}
	st := e.ok("status", set)
	for _, want := range []string{"why", "(at most 1 at once)", "max-running", "no worker up"} {
		if !strings.Contains(st, want) {
			t.Errorf("status %s printed %q; want %q in it", set, st, want)
		}
	}
	var w struct {
		Tasks []struct {
			Index      int32  `json:"index"`
			Reason     string `json:"reason"`
			Position   int    `json:"position"`
			MaxRunning int    `json:"max_running"`
		} `json:"tasks"`
	}
	e.json(&w, "why", set)
	if len(w.Tasks) != 3 || w.Tasks[0].Reason != "no-worker-up" || w.Tasks[1].Reason != "max-running" || w.Tasks[2].Position != 2 || w.Tasks[2].MaxRunning != 1 {
		t.Errorf("why --json %s = %+v", set, w.Tasks)
	}
	if _, _, code := e.run("disclose", "--max-running", "-1", "--", "true"); code != exitInvalid {
		t.Errorf("disclose --max-running -1: exit %d, want %d", code, exitInvalid)
	}
	if _, _, code := e.run("why", set+"/7"); code != exitNotFound {
		t.Errorf("why of a task that does not exist: exit %d, want %d", code, exitNotFound)
	}
}

// TestResourceFlags: disclose --cpus and --memory reach the task's spec
// (accepted with no worker up: one may come), why says no worker is up,
// and a memory size that is not one is refused.
func TestResourceFlags(t *testing.T) {
	e := newEnv(t, 0)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--request", "--cpus", "2", "--memory", "1.5G", "--", "true"))
	var st struct {
		Tasks []struct {
			Spec struct {
				Cpus     int32 `json:"cpus"`
				MemoryMB int64 `json:"memory_mb"`
			} `json:"spec"`
		} `json:"tasks"`
	}
	e.json(&st, "status", set)
	if len(st.Tasks) != 1 || st.Tasks[0].Spec.Cpus != 2 || st.Tasks[0].Spec.MemoryMB != 1536 {
		t.Fatalf("status --json: %+v; want cpus 2 and 1536 MiB", st.Tasks)
	}
	if out := e.ok("why", set+"/0"); !strings.Contains(out, "no worker is up") {
		t.Errorf("why %s/0 printed %q", set, out)
	}
	if _, errOut, code := e.run("disclose", "--memory", "lots", "--", "true"); code != exitInvalid || !strings.Contains(errOut, "memory size") {
		t.Errorf("disclose --memory lots: exit %d, stderr %q", code, errOut)
	}
}

// TestWhyShowsBoundsAsBounds: for the last of 100,000 requested tasks on
// one slot, why shows the cut counts as "≥ N" and the ETA as "not before";
// --json carries the bounds; the running task, past its 1 s estimate,
// has no finish estimate and why says so.
func TestWhyShowsBoundsAsBounds(t *testing.T) {
	e := newEnv(t, 1)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--request", "--estimate", "1s", "--array", "0-99999", "--", "sleep", "60"))
	out := e.ok("why", set+"/99999")
	for _, want := range []string{"position ≥ 256", "≥ ", "starts in:   not before ~", "finishes in: not before ~"} {
		if !strings.Contains(out, want) {
			t.Errorf("why %s/99999:\n%s\nwant %q in it", set, out, want)
		}
	}
	var w struct {
		Tasks []whyView `json:"tasks"`
	}
	e.json(&w, "why", set+"/99999")
	if len(w.Tasks) != 1 || w.Tasks[0].PositionExact || w.Tasks[0].TasksAheadExact || !w.Tasks[0].StartIsLowerBound {
		t.Errorf("why --json %s/99999: %+v; want the counts and the start as lower bounds", set, w.Tasks)
	}
	// Task 0 runs (sleep 60) past its 1 s estimate; poll until why says so
	// (go test's -timeout bounds a hang).
	for {
		out = e.ok("why", set+"/0")
		if strings.Contains(out, "is running") && strings.Contains(out, "finishes in: unknown: it has run past its estimate") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.json(&w, "why", set+"/0")
	if !w.Tasks[0].PastEstimate || w.Tasks[0].FinishInSeconds >= 0 {
		t.Errorf("why --json %s/0: %+v; want past_estimate and no finish", set, w.Tasks[0])
	}
}
