package main

import (
	"strings"
	"testing"
)

// Odd tasks fail on their first attempt; retry runs them again in place
// (same index, attempt 2), where they succeed. status SET/I lists both
// attempts and output --attempt 1 prints the first one's output.
func TestRetryCLI(t *testing.T) {
	e := newEnv(t, 2)
	script := `echo "$BATCH_TASK_INDEX $BATCH_TASK_ATTEMPT"; [ "$BATCH_TASK_ATTEMPT" -ge 2 ] || [ $((BATCH_TASK_INDEX % 2)) -eq 0 ]`
	set := strings.TrimSpace(e.ok("disclose", "-q", "--request", "--file", writeTemp(t, strings.Repeat(script+"\n", 4))))
	e.ok("watch", set)
	if _, errOut, code := e.run("request", "-q", set); code != 5 || !strings.Contains(errOut, "batchctl retry "+set+"/1,3") {
		t.Errorf("request of the study: exit %d, %q; want 5 and the retry command", code, errOut)
	}
	if _, errOut, code := e.run("retry", set+"/0"); code == 0 || !strings.Contains(errOut, "only failed, timed-out or canceled tasks") {
		t.Errorf("retry of a task that succeeded: exit %d, %q", code, errOut)
	}
	if got := e.ok("retry", set); !strings.Contains(got, "retried 2 tasks (1,3)") {
		t.Errorf("retry printed %q", got)
	}
	e.ok("watch", set)
	for i, want := range []string{"0 1\n", "1 2\n", "2 1\n", "3 2\n"} {
		if got := e.ok("output", set+"/"+string(rune('0'+i))); got != want {
			t.Errorf("output of task %d = %q, want %q", i, got, want)
		}
	}
	if got := e.ok("output", "--attempt", "1", set+"/3"); got != "3 1\n" {
		t.Errorf("output --attempt 1 = %q", got)
	}
	detail := e.ok("status", set+"/3")
	for _, want := range []string{"attempt 2", "2 (current)", "finished", "user", "--attempt 1"} {
		if !strings.Contains(detail, want) {
			t.Errorf("status %s/3 lacks %q:\n%s", set, want, detail)
		}
	}
	var v struct {
		Task struct {
			Attempt int32 `json:"attempt"`
			Copies  []struct {
				Attempt  int32 `json:"attempt"`
				ExitCode int32 `json:"exit_code"`
			} `json:"copies"`
			Attempts []struct {
				Attempt  int32 `json:"attempt"`
				ExitCode int32 `json:"exit_code"`
			} `json:"attempts"`
		} `json:"task"`
	}
	e.json(&v, "status", set+"/3")
	if v.Task.Attempt != 2 || len(v.Task.Attempts) != 1 || v.Task.Attempts[0].ExitCode != 1 || len(v.Task.Copies) < 2 ||
		v.Task.Copies[0].Attempt != 1 || v.Task.Copies[0].ExitCode != 1 || v.Task.Copies[len(v.Task.Copies)-1].Attempt != 2 {
		t.Errorf("status --json %s/3: %+v", set, v.Task)
	}
	var b struct {
		Lines []struct {
			Index   int32 `json:"index"`
			Attempt int32 `json:"attempt"`
		} `json:"lines"`
	}
	e.json(&b, "bill", "--set", set)
	if len(b.Lines) != 6 {
		t.Errorf("bill of set %s: %+v, want 6 lines (4 first attempts, 2 retries)", set, b.Lines)
	}
}

// A set's retry policy retries exit 3 by itself; request waits through it.
func TestRetryPolicyCLI(t *testing.T) {
	e := newEnv(t, 1)
	if _, errOut, code := e.run("disclose", "--retry-on", "3", "--", "true"); code == 0 || !strings.Contains(errOut, "needs --retries") {
		t.Errorf("--retry-on without --retries: exit %d, %q", code, errOut)
	}
	if _, errOut, code := e.run("disclose", "--retries", "1", "--retry-on", "oom", "--", "true"); code == 0 || !strings.Contains(errOut, "retry-on") {
		t.Errorf("--retry-on oom: exit %d, %q", code, errOut)
	}
	set := strings.TrimSpace(e.ok("disclose", "-q", "--retries", "2", "--retry-on", "3", "--",
		"sh", "-c", `echo "attempt $BATCH_TASK_ATTEMPT"; [ "$BATCH_TASK_ATTEMPT" -ge 3 ] || exit 3`))
	out, errOut, code := e.run("request", set+"/0")
	if code != 0 || out != "attempt 3\n" {
		t.Errorf("request through two policy retries = %q, %q, exit %d; want attempt 3, exit 0", out, errOut, code)
	}
	if got := e.ok("status", set+"/0"); !strings.Contains(got, "policy") || !strings.Contains(got, "up to 2 retries on 3") {
		t.Errorf("status %s/0:\n%s", set, got)
	}
}
