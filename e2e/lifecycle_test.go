package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// writeFile writes lines to a new file in the test's temp dir.
func writeFile(t *testing.T, name string, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLifecycle drives disclose → request → output → cancel → bill through
// the real batchctl against a real batchd, and the bad inputs a person
// meets on the way.
func TestLifecycle(t *testing.T) {
	c := startServer(t, "--slots", "4")

	// One task from argv; a waited request prints its output and exits
	// with its status.
	var one jsonDisclose
	c.ctlJSON(&one, "disclose", "--name", "one", "--", "sh", "-c", "echo hello; echo oops >&2; exit 3")
	if one.Count != 1 || one.FirstIndex != 0 || one.Set.ID <= 0 {
		t.Fatalf("disclose one = %+v", one)
	}
	r := c.ctl("request", fmt.Sprintf("%d/0", one.Set.ID))
	if got, want := r.code, 3; got != want {
		t.Errorf("request exit = %d, want %d (stderr %q)", got, want, r.stderr)
	}
	if got, want := r.stdout, "hello\n"; got != want {
		t.Errorf("request stdout = %q, want %q", got, want)
	}
	if !strings.Contains(r.stderr, "oops\n") {
		t.Errorf("request stderr = %q, want the task's stderr", r.stderr)
	}
	if got, want := c.mustCtl("output", fmt.Sprintf("%d/0", one.Set.ID)).stdout, "hello\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	if got, want := c.mustCtl("output", "--stderr", fmt.Sprintf("%d/0", one.Set.ID)).stdout, "oops\n"; got != want {
		t.Errorf("output --stderr = %q, want %q", got, want)
	}

	// A file of commands, one per line; comments and blank lines skipped.
	file := writeFile(t, "commands.txt",
		"# five tasks",
		"echo task-0",
		"echo task-1",
		"",
		`echo "$BATCH_TASK_SET/$BATCH_TASK_INDEX"`,
		"echo task-3",
		"echo task-4",
	)
	var five jsonDisclose
	c.ctlJSON(&five, "disclose", "--name", "five", "--file", file)
	s := five.Set.ID
	if five.Count != 5 {
		t.Fatalf("disclose --file count = %d, want 5", five.Count)
	}
	r = c.mustCtl("request", fmt.Sprintf("%d/0,1", s))
	for _, want := range []string{fmt.Sprintf("%d/0", s), fmt.Sprintf("%d/1", s), "finished"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("request of two tasks printed %q, want it to contain %q", r.stdout, want)
		}
	}
	if got, want := c.mustCtl("request", fmt.Sprintf("%d/2", s)).stdout, fmt.Sprintf("%d/2\n", s); got != want {
		t.Errorf("task saw BATCH_TASK_SET/BATCH_TASK_INDEX = %q, want %q", got, want)
	}

	// Cancel the rest, twice: the second time says they were canceled already.
	var cancels []jsonCancel
	c.ctlJSON(&cancels, "cancel", fmt.Sprint(s))
	if len(cancels) != 1 || cancels[0].Canceled != 2 || cancels[0].AlreadyCanceled != 0 {
		t.Errorf("cancel = %+v, want 2 canceled", cancels)
	}
	r = c.mustCtl("cancel", fmt.Sprint(s))
	if !strings.Contains(r.stdout, "canceled 0") || !strings.Contains(r.stdout, "already canceled 2") {
		t.Errorf("second cancel printed %q, want it to say 2 were already canceled", r.stdout)
	}

	// Bad input: the exit status tells what went wrong.
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"request", fmt.Sprintf("%d/3", s)}, 3},  // canceled
		{[]string{"output", fmt.Sprintf("%d/4", s)}, 3},   // canceled, never requested
		{[]string{"request", "999999/0"}, 2},              // unknown set
		{[]string{"request", fmt.Sprintf("%d/77", s)}, 2}, // unknown task
		{[]string{"disclose", "--spec", writeFile(t, "empty.json", `{"tasks": [{"argv": []}]}`)}, 1},
		{[]string{"disclose", "--spec", writeFile(t, "none.json", `{"tasks": []}`)}, 1},
		{[]string{"disclose", "--set", fmt.Sprint(s), "--", "echo", "more"}, 3},                // the rest was canceled: the set is closed
		{append([]string{"disclose", "--"}, strings.Fields(strings.Repeat("x ", 1025))...), 1}, // past the argv limit
	} {
		if r := c.ctl(tc.args...); r.code != tc.code || r.stderr == "" {
			t.Errorf("batchctl %s: exit %d, want %d, with a message (stderr %q)", strings.Join(tc.args, " "), r.code, tc.code, r.stderr)
		}
	}

	// The set as batchctl shows it.
	var st jsonStatus
	c.ctlJSON(&st, "status", fmt.Sprint(s))
	want := []string{"finished", "finished", "finished", "canceled", "canceled"}
	if len(st.Tasks) != len(want) {
		t.Fatalf("status has %d tasks, want %d", len(st.Tasks), len(want))
	}
	for i, task := range st.Tasks {
		if task.State != want[i] {
			t.Errorf("task %d/%d is %s, want %s", s, i, task.State, want[i])
		}
	}
	if ls := c.mustCtl("ls").stdout; !strings.Contains(ls, "five") || !strings.Contains(ls, "one") {
		t.Errorf("ls = %q, want both sets", ls)
	}

	// The bill: one line per requested task, none for the canceled ones.
	var b jsonBill
	c.ctlJSON(&b, "bill")
	got := billByTask(b)
	wantBill := map[ref]int{{one.Set.ID, 0}: 1, {s, 0}: 1, {s, 1}: 1, {s, 2}: 1}
	if len(got) != len(wantBill) || int(b.Totals.Lines) != len(wantBill) {
		t.Errorf("bill lines per task = %v (totals %d), want %v", got, b.Totals.Lines, wantBill)
	}
	for k, n := range wantBill {
		if got[k] != n {
			t.Errorf("task %d/%d billed %d times, want %d", k.set, k.index, got[k], n)
		}
	}
	if human := c.mustCtl("bill").stdout; !strings.Contains(human, "scaled billed resources") {
		t.Errorf("bill printed %q", human)
	}
	// The four local slots, and the four requested tasks that finished.
	r = c.mustCtl("cluster")
	for _, re := range []string{`slots: \d busy of 4\n`, `\| finished tasks +\| 4 +\|`} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("cluster printed %q, want it to match %s", r.stdout, re)
		}
	}
}
