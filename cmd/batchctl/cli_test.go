package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"batchd/client"
	"batchd/sched"
)

// TestFlagsAfterArgumentsAndSuggestions: flags may follow the task
// references; a misspelt command or flag gets a suggestion; an unknown
// flag after the references is named as such.
func TestFlagsAfterArgumentsAndSuggestions(t *testing.T) {
	e := newEnv(t, 0)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--", "true"))
	if out := e.ok("request", set+"/0", "--no-wait"); !strings.Contains(out, "requested") {
		t.Errorf("request %s/0 --no-wait printed %q", set, out)
	}
	var st struct {
		Tasks []struct {
			State string `json:"state"`
		} `json:"tasks"`
	}
	e.json(&st, "status", set, "--state", "requested")
	if len(st.Tasks) != 1 || st.Tasks[0].State != "requested" {
		t.Errorf("status %s --state requested: %+v", set, st.Tasks)
	}
	_, errOut, code := e.run("reqest", set+"/0")
	if code != exitInvalid || !strings.Contains(errOut, "unknown command 'reqest'") || !strings.Contains(errOut, `"request"`) {
		t.Errorf("reqest: exit %d, stderr %q; want exit 1 suggesting request", code, errOut)
	}
	_, errOut, code = e.run("status", set, "--nope")
	if code != exitInvalid || !strings.Contains(errOut, `"--nope" is not a flag of status`) {
		t.Errorf("status %s --nope: exit %d, stderr %q", set, code, errOut)
	}
}

// TestStateFilterRunningAndFailed: --state takes running (a copy runs)
// and failed (finished with a non-zero exit or timed out) besides the
// task states, and names them all when given something else.
func TestStateFilterRunningAndFailed(t *testing.T) {
	e := newEnv(t, 1)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--request", "--file", writeTemp(t, "exit 3\ntrue\nsleep 60\n")))
	id := sched.SetID(mustAtoi(t, set))
	cl := client.New(client.Config{Server: e.url, HTTPClient: client.WithToken(nil, e.srv.AdminToken())})
	// Wait (no deadline: go test's -timeout bounds a hang) until 0 and 1
	// finished and 2 runs on the one slot.
	err := cl.Watch(t.Context(), id, func(u client.WatchUpdate) error {
		if u.Set.Counts.Finished == 2 && u.Set.Counts.Running == 1 {
			return client.ErrStopWatch
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	indexes := func(args ...string) []int32 {
		var st struct {
			Tasks []struct {
				Index int32 `json:"index"`
			} `json:"tasks"`
		}
		e.json(&st, append([]string{"status", set}, args...)...)
		var out []int32
		for _, x := range st.Tasks {
			out = append(out, x.Index)
		}
		return out
	}
	if got := indexes("--state", "running"); len(got) != 1 || got[0] != 2 {
		t.Errorf("--state running: %v, want [2]", got)
	}
	if got := indexes("--state", "failed"); len(got) != 1 || got[0] != 0 {
		t.Errorf("--state failed: %v, want [0]", got)
	}
	if got := indexes("--state", "failed,running"); len(got) != 2 {
		t.Errorf("--state failed,running: %v, want [0 2]", got)
	}
	_, errOut, code := e.run("status", set, "--state", "fnished")
	if code != exitInvalid || !strings.Contains(errOut, "running, failed") {
		t.Errorf("--state fnished: exit %d, stderr %q", code, errOut)
	}
	e.ok("cancel", set+"/2")
}

// TestTableWidth: with $COLUMNS (as with a terminal's width) tables fit
// in it, wrapping long cells; --wide lets them be as wide as they are.
func TestTableWidth(t *testing.T) {
	e := newEnv(t, 0)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--", "sh", "-c", "echo a rather long command line that makes the table wide"))
	widest := func(s string) int { // the table's lines
		n := 0
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "|") {
				n = max(n, len([]rune(l)))
			}
		}
		return n
	}
	t.Setenv("COLUMNS", "80")
	if got := widest(e.ok("status", set)); got > 80 || got == 0 {
		t.Errorf("status with COLUMNS=80: a table %d columns wide", got)
	}
	if got := widest(e.ok("status", set, "--wide")); got <= 80 {
		t.Errorf("status --wide with COLUMNS=80: %d columns wide, want the whole table", got)
	}
}

// TestArrayStatusAndWideCommand: the tasks of an array show their values
// before their (shared) command; with a width to fit ($COLUMNS) a command
// is cut at 40 characters, and --wide (or a pipe) shows it whole.
func TestArrayStatusAndWideCommand(t *testing.T) {
	e := newEnv(t, 0)
	if pipe := e.ok("status", strings.TrimSpace(e.ok("disclose", "-q", "--", "sh", "-c", "echo a command line longer than forty characters, whole"))); !strings.Contains(pipe, "forty characters, whole") {
		t.Errorf("status into a pipe cuts the command:\n%s", pipe)
	}
	t.Setenv("COLUMNS", "200")
	set := strings.TrimSpace(e.ok("disclose", "-q", "--array", "5-9:2", "--", "echo value $BATCH_ARRAY_VALUE and then a long tail that goes past forty characters"))
	out := e.ok("status", set)
	for i, v := range []string{"5", "7", "9"} {
		if !strings.Contains(out, fmt.Sprintf("%s/%d", set, i)) || !strings.Contains(out, "["+v+"] echo value") {
			t.Errorf("status of array: no task %d with value %s:\n%s", i, v, out)
		}
	}
	if strings.Contains(out, "past forty characters") {
		t.Errorf("status without --wide shows the whole long command:\n%s", out)
	}
	if wide := e.ok("status", set, "--wide"); !strings.Contains(wide, "past forty characters") {
		t.Errorf("status --wide cuts the command:\n%s", wide)
	}
}

// TestCompleteOffersWordsAndStopsAtDashDash: the completion entry point
// offers commands and flags, nothing after "--" (a task's own command
// line) and nothing for a flag's value; it never reaches a server.
func TestCompleteOffersWordsAndStopsAtDashDash(t *testing.T) {
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{"re"}, "request\nretry\nrelease\n"},
		{[]string{"status", "--js"}, "--json\n"},
		{[]string{"--server", "http://x", "canc"}, "cancel\n"},
		{[]string{"disclose", "--", ""}, ""},
		{[]string{"disclose", "--request", "--", "sh", "-"}, ""},
		{[]string{"disclose", "--file", ""}, ""},
		{[]string{"completion", "z"}, "zsh\n"},
	} {
		var out bytes.Buffer
		code := run(t.Context(), append([]string{"batchctl", completeCommand}, c.words...), &out, io.Discard)
		if code != 0 || out.String() != c.want {
			t.Errorf("complete %q: %q (exit %d), want %q", c.words, out.String(), code, c.want)
		}
	}
}
