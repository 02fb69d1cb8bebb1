package main

import (
	"encoding/json"
	"strings"
	"testing"

	"batchd/client"
	"batchd/sched"
)

// TestEarlierAttemptsShowTheirExit: a task retried twice by its policy
// (exit 3 each time) while disclosed, then requested: status SET/I shows
// exit 3 for every attempt and every copy, in the table and in JSON. While
// it is only disclosed, no exit status shows (not a false 0).
func TestEarlierAttemptsShowTheirExit(t *testing.T) {
	e := newEnv(t, 1)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--retries", "2", "--retry-on", "nonzero", "--", "sh", "-c", "exit 3"))
	id := sched.SetID(mustAtoi(t, set))
	cl := client.New(client.Config{Server: e.url, HTTPClient: client.WithToken(nil, e.srv.AdminToken())})
	err := cl.Watch(t.Context(), id, func(u client.WatchUpdate) error {
		if u.Set.Counts.Executed == 1 {
			return client.ErrStopWatch
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := func(out string) (attempts, copies []string) {
		in := ""
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(l, "attempts"):
				in = "a"
			case strings.HasPrefix(l, "copies"):
				in = "c"
			case strings.HasPrefix(l, "| ") && !strings.Contains(l, " state "): // a row, not the header
				f := strings.Split(l, "|")
				if in == "a" {
					attempts = append(attempts, strings.TrimSpace(f[5]))
				} else if in == "c" {
					copies = append(copies, strings.TrimSpace(f[7]))
				}
			}
		}
		return attempts, copies
	}
	a, c := rows(e.ok("--wide", "status", set+"/0"))
	if strings.Join(a, ",") != "-,-,-" || strings.Join(c, ",") != "-,-,-" {
		t.Errorf("disclosed: attempt exits %q, copy exits %q; want all -", a, c)
	}
	if _, _, code := e.run("request", set+"/0"); code != 3 {
		t.Fatalf("request: exit %d, want 3", code)
	}
	a, c = rows(e.ok("--wide", "status", set+"/0"))
	if strings.Join(a, ",") != "3,3,3" || strings.Join(c, ",") != "3,3,3" {
		t.Errorf("requested: attempt exits %q, copy exits %q; want 3 everywhere", a, c)
	}
	var st struct {
		Task struct {
			Copies []struct {
				ExitCode int32 `json:"exit_code"`
			} `json:"copies"`
			Attempts []struct {
				ExitCode int32 `json:"exit_code"`
			} `json:"attempts"`
		} `json:"task"`
	}
	if err := json.Unmarshal([]byte(e.ok("--json", "status", set+"/0")), &st); err != nil {
		t.Fatal(err)
	}
	for i, x := range st.Task.Copies {
		if x.ExitCode != 3 {
			t.Errorf("JSON copy %d: exit %d, want 3", i, x.ExitCode)
		}
	}
	for i, x := range st.Task.Attempts {
		if x.ExitCode != 3 {
			t.Errorf("JSON attempt %d: exit %d, want 3", i, x.ExitCode)
		}
	}
}
