package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The JSON shapes of retry's tests (a subset of cmd/batchctl/view.go).

type jsonAttemptTask struct {
	Task struct {
		Index    int32 `json:"index"`
		State    string
		Attempt  int32 `json:"attempt"`
		Attempts []struct {
			Attempt   int32  `json:"attempt"`
			State     string `json:"state"`
			ExitCode  int32  `json:"exit_code"`
			TimedOut  bool   `json:"timed_out"`
			RetriedBy string `json:"retried_by"`
		} `json:"attempts"`
		Copies []struct {
			ID       int64  `json:"id"`
			Attempt  int32  `json:"attempt"`
			Worker   string `json:"worker"`
			State    string `json:"state"`
			ExitCode int32  `json:"exit_code"`
			TimedOut bool   `json:"timed_out"`
		} `json:"copies"`
	} `json:"task"`
}

type jsonAttemptBill struct {
	Totals struct {
		Lines int64              `json:"lines"`
		Free  map[string]float64 `json:"free"`
	} `json:"totals"`
	Lines []struct {
		Set     int64  `json:"set"`
		Index   int32  `json:"index"`
		Attempt int32  `json:"attempt"`
		Copy    int64  `json:"copy"`
		Reason  string `json:"reason"`
	} `json:"lines"`
}

// charges counts a set's bill lines per (index, attempt).
func charges(b jsonAttemptBill, set int64) map[[2]int32]int {
	m := map[[2]int32]int{}
	for _, l := range b.Lines {
		if l.Set == set {
			m[[2]int32{l.Index, l.Attempt}]++
		}
	}
	return m
}

// TestRetryInPlaceKeepsIndex runs an index-keyed study: task I computes
// I*I from $BATCH_TASK_INDEX and writes it with its attempt, both to
// stdout and to a file named by its index and attempt. Every third task
// fails on its first attempt by design. batchctl retry runs them again in
// place: the outputs are then checked per index, so a retry that ran the
// task under another index (a new set, say, whose indexes restart at 0)
// fails here. Each requested attempt is billed once.
func TestRetryInPlaceKeepsIndex(t *testing.T) {
	c := startServer(t, "--slots", "3")
	dir := t.TempDir()
	const n = 9
	line := fmt.Sprintf(`i=$BATCH_TASK_INDEX; a=$BATCH_TASK_ATTEMPT; echo "index $i attempt $a square $((i*i))"; touch %s/$i.$a; `+
		`[ $((i %% 3)) -ne 1 ] || [ "$a" -ge 2 ] || exit 1`, dir)
	lines := make([]string, n)
	for i := range lines {
		lines[i] = line
	}
	var d jsonDisclose
	c.ctlJSON(&d, "disclose", "--request", "--name", "study", "--file", writeFile(t, "study.txt", lines...))
	set := d.Set.ID
	if r := c.ctl("request", "-q", fmt.Sprint(set)); r.code == 0 {
		t.Fatalf("the first run of the study succeeded; tasks 1, 4, 7 must fail by design:\n%s%s", r.stdout, r.stderr)
	}
	var failed []int32
	var st jsonStatus
	c.ctlJSON(&st, "status", "--state", "failed", fmt.Sprint(set))
	for _, tk := range st.Tasks {
		failed = append(failed, tk.Index)
	}
	if fmt.Sprint(failed) != "[1 4 7]" {
		t.Fatalf("failed tasks %v, want [1 4 7]", failed)
	}

	var rr []struct {
		Retried []int32 `json:"retried"`
	}
	c.ctlJSON(&rr, "retry", fmt.Sprint(set))
	if len(rr) != 1 || fmt.Sprint(rr[0].Retried) != "[1 4 7]" {
		t.Fatalf("retry answered %+v, want tasks 1, 4, 7", rr)
	}
	if r := c.ctl("request", "-q", fmt.Sprint(set)); r.code != 0 {
		t.Fatalf("the retried study did not succeed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	c.ctlJSON(&st, "status", fmt.Sprint(set))
	if st.Set.Counts.Total != n || st.Set.Counts.Finished != n {
		t.Fatalf("set after the retry: %+v, want %d tasks, all finished, in the same set", st.Set.Counts, n)
	}
	for i := int32(0); i < n; i++ {
		want := int32(1)
		if i%3 == 1 {
			want = 2
		}
		ref := fmt.Sprintf("%d/%d", set, i)
		got := c.mustCtl("output", ref).stdout
		if exp := fmt.Sprintf("index %d attempt %d square %d\n", i, want, i*i); got != exp {
			t.Errorf("output of %s = %q, want %q", ref, got, exp)
		}
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%d.%d", i, want))); err != nil {
			t.Errorf("task %d left no marker of attempt %d: %v", i, want, err)
		}
		var tk jsonAttemptTask
		c.ctlJSON(&tk, "status", ref)
		if tk.Task.Attempt != want || int32(len(tk.Task.Attempts)) != want-1 {
			t.Errorf("status %s: attempt %d with %d earlier, want attempt %d", ref, tk.Task.Attempt, len(tk.Task.Attempts), want)
		}
		if want == 2 {
			if a := tk.Task.Attempts[0]; a.ExitCode != 1 || a.RetriedBy != "user" || a.State != "finished" {
				t.Errorf("status %s: first attempt %+v, want finished with exit 1, retried by the user", ref, a)
			}
			old := c.mustCtl("output", "--attempt", "1", ref).stdout
			if exp := fmt.Sprintf("index %d attempt 1 square %d\n", i, i*i); old != exp {
				t.Errorf("output --attempt 1 %s = %q, want %q", ref, old, exp)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != n+3 {
		t.Errorf("markers: %d files (%v), want %d: one per attempt", len(entries), err, n+3)
	}

	var b jsonAttemptBill
	c.ctlJSON(&b, "bill", "--set", fmt.Sprint(set))
	ch := charges(b, set)
	if len(b.Lines) != n+3 || len(ch) != n+3 {
		t.Errorf("bill: %d lines over %d attempts, want %d: one per requested attempt", len(b.Lines), len(ch), n+3)
	}
	for k, m := range ch {
		if m != 1 {
			t.Errorf("task %d attempt %d billed %d times", k[0], k[1], m)
		}
	}
}

// TestRetryPolicy: the set's policy retries exit 3 twice and a timeout
// once, by itself; a retried task sees its attempt; earlier attempts are
// listed with who retried them.
func TestRetryPolicy(t *testing.T) {
	c := startServer(t, "--slots", "2")
	var d jsonDisclose
	// Requested at once, so that every attempt is requested (a disclosed
	// task's failed attempts are retried too, but free and unreadable).
	c.ctlJSON(&d, "disclose", "--request", "--retries", "2", "--retry-on", "3", "--", "sh", "-c",
		`echo "attempt $BATCH_TASK_ATTEMPT"; [ "$BATCH_TASK_ATTEMPT" -ge 3 ] || exit 3`)
	r := c.mustCtl("request", fmt.Sprintf("%d/0", d.Set.ID))
	if r.stdout != "attempt 3\n" {
		t.Errorf("request through the policy printed %q, want attempt 3", r.stdout)
	}
	var tk jsonAttemptTask
	c.ctlJSON(&tk, "status", fmt.Sprintf("%d/0", d.Set.ID))
	if tk.Task.Attempt != 3 || len(tk.Task.Attempts) != 2 || tk.Task.Attempts[1].ExitCode != 3 || tk.Task.Attempts[1].RetriedBy != "policy" {
		t.Errorf("status: %+v", tk.Task)
	}
	var b jsonAttemptBill
	c.ctlJSON(&b, "bill", "--set", fmt.Sprint(d.Set.ID))
	if ch := charges(b, d.Set.ID); len(b.Lines) != 3 || ch[[2]int32{0, 1}] != 1 || ch[[2]int32{0, 2}] != 1 || ch[[2]int32{0, 3}] != 1 {
		t.Errorf("bill %+v, want one line for each of the 3 requested attempts", b.Lines)
	}

	// Exit 4 is not in the policy: no retry.
	c.ctlJSON(&d, "disclose", "--request", "--retries", "2", "--retry-on", "3", "--", "sh", "-c", `exit 4`)
	if r := c.ctl("request", fmt.Sprintf("%d/0", d.Set.ID)); r.code != 4 {
		t.Errorf("exit 4: request exit %d, want 4", r.code)
	}
	c.ctlJSON(&tk, "status", fmt.Sprintf("%d/0", d.Set.ID))
	if tk.Task.Attempt != 1 {
		t.Errorf("exit 4 was retried: attempt %d", tk.Task.Attempt)
	}

	// The first attempt runs out of its timeout, the second is quick.
	c.ctlJSON(&d, "disclose", "--request", "--timeout", "1s", "--retries", "1", "--retry-on", "timeout", "--", "sh", "-c",
		`[ "$BATCH_TASK_ATTEMPT" -ge 2 ] || exec sleep 60; echo "attempt $BATCH_TASK_ATTEMPT in time"`)
	r = c.mustCtl("request", fmt.Sprintf("%d/0", d.Set.ID))
	if r.stdout != "attempt 2 in time\n" {
		t.Errorf("request through a timeout printed %q", r.stdout)
	}
	c.ctlJSON(&tk, "status", fmt.Sprintf("%d/0", d.Set.ID))
	if len(tk.Task.Attempts) != 1 || !tk.Task.Attempts[0].TimedOut || len(tk.Task.Copies) < 2 || !tk.Task.Copies[0].TimedOut {
		t.Errorf("status after a timeout: %+v", tk.Task)
	}
	detail := c.mustCtl("status", fmt.Sprintf("%d/0", d.Set.ID)).stdout
	for _, want := range []string{"timed out", "yes", "policy", "2 (current)"} {
		if !strings.Contains(detail, want) {
			t.Errorf("status detail lacks %q:\n%s", want, detail)
		}
	}
}

// TestRetryOnLostFree kills a `batchd worker` in the middle of a copy of a
// set that retries on lost: the re-run is the task's attempt 2 (it sees
// BATCH_TASK_ATTEMPT=2), the lost attempt is listed and costs nothing, and
// the task is billed once, for attempt 2.
func TestRetryOnLostFree(t *testing.T) {
	c := startServer(t, "--slots", "0", "--lease", "10s") // the killed worker's copy is lost a lease later
	workers := map[string]*proc{"wa": c.startWorker("wa", 1), "wb": c.startWorker("wb", 1)}
	var d jsonDisclose
	c.ctlJSON(&d, "disclose", "--request", "--no-speculation", "--retries", "1", "--retry-on", "lost", "--",
		"sh", "-c", `sleep 2; echo "attempt $BATCH_TASK_ATTEMPT"`)
	task := fmt.Sprintf("%d/0", d.Set.ID)
	var tk jsonAttemptTask
	waitFor(t, patience, "a running copy", func() bool {
		c.ctlJSON(&tk, "status", task)
		return len(tk.Task.Copies) > 0 && tk.Task.Copies[0].State == "running"
	})
	first := tk.Task.Copies[0]
	victim := workers[first.Worker]
	if victim == nil {
		t.Fatalf("copy %+v runs on a worker the test did not start", first)
	}
	victim.kill()
	r := c.mustCtl("request", task)
	if r.stdout != "attempt 2\n" {
		t.Errorf("request after the loss printed %q, want attempt 2", r.stdout)
	}
	c.ctlJSON(&tk, "status", task)
	if tk.Task.Attempt != 2 || len(tk.Task.Attempts) != 1 || tk.Task.Attempts[0].State != "lost" || tk.Task.Copies[0].State != "lost" {
		t.Errorf("status after the loss: %+v", tk.Task)
	}
	var b jsonAttemptBill
	c.ctlJSON(&b, "bill")
	if len(b.Lines) != 1 || b.Lines[0].Attempt != 2 || b.Lines[0].Copy == first.ID {
		t.Errorf("bill lines %+v, want one, for attempt 2", b.Lines)
	}
	if b.Totals.Free["lost_with_worker_slot_seconds"] <= 0 {
		t.Errorf("free work %v: the lost copy's time is not counted as lost with a worker", b.Totals.Free)
	}
}
