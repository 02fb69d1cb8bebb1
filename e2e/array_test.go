package e2e

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArraysShellAndBulkOutput: real binaries. An array by step 3 under
// bash, and a second array appended to the same set, give every task its
// place in the set as $BATCH_TASK_INDEX and its value as
// $BATCH_ARRAY_VALUE; bash's $RANDOM is set (and sh's, dash, is not). The
// outputs then come back in bulk, in pages of 64 bytes so that a 300-byte
// task spans pages: as files (--dir), as a tar stream (--tar) and in
// request --json --with-output, each task's streams checked.
func TestArraysShellAndBulkOutput(t *testing.T) {
	c := startServer(t, "--slots", "4")
	line := `echo "i=$BATCH_TASK_INDEX v=$BATCH_ARRAY_VALUE r=${RANDOM:+set}"; echo "e$BATCH_TASK_INDEX" >&2; ` +
		`if [ "$BATCH_ARRAY_VALUE" = 9 ]; then printf 'y%.0s' $(seq 300); fi`
	var first jsonDisclose
	c.ctlJSON(&first, "disclose", "--request", "--array", "3-21:3", "--shell", "bash", "--", line)
	if first.FirstIndex != 0 || first.Count != 7 {
		t.Fatalf("array 3-21:3 disclosed %+v, want 7 tasks from 0", first)
	}
	set := first.Set.ID
	var second jsonDisclose
	c.ctlJSON(&second, "disclose", "--set", fmt.Sprint(set), "--request", "--array", "0-1", "--", line) // sh: dash
	if second.FirstIndex != 7 || second.Count != 2 {
		t.Fatalf("appended array 0-1 disclosed %+v, want 2 tasks from 7", second)
	}
	c.mustCtl("request", "-q", fmt.Sprint(set)) // waits for all nine

	want := map[int]string{}
	for i := range 9 {
		v, r := 3+3*i, "set"
		if i >= 7 {
			v, r = i-7, "" // the appended array, under dash
		}
		want[i] = fmt.Sprintf("i=%d v=%d r=%s\n", i, v, r)
		if v == 9 {
			want[i] += strings.Repeat("y", 300)
		}
	}
	sh, _ := filepath.EvalSymlinks("/bin/sh")
	check := func(how string, i int, stdout, stderr string) {
		t.Helper()
		w := want[i]
		if i >= 7 && !strings.HasSuffix(sh, "dash") {
			// Not dash: its $RANDOM may be set; the rest must hold.
			stdout = strings.Replace(stdout, "r=set\n", "r=\n", 1)
		}
		if stdout != w || stderr != fmt.Sprintf("e%d\n", i) {
			t.Errorf("%s: task %d: stdout %q stderr %q, want %q and %q", how, i, stdout, stderr, w, fmt.Sprintf("e%d\n", i))
		}
	}

	// --dir, in pages of 64 bytes.
	dir := filepath.Join(t.TempDir(), "out")
	r := c.mustCtl("output", fmt.Sprint(set), "--dir", dir, "--page-bytes", "64")
	if !strings.Contains(r.stderr, "9 tasks") {
		t.Errorf("output --dir: no count on stderr: %q", r.stderr)
	}
	files, _ := os.ReadDir(dir)
	if len(files) != 18 {
		t.Errorf("output --dir wrote %d files, want 18", len(files))
	}
	for i := range 9 {
		o, err1 := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d-%d.out", set, i)))
		e, err2 := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d-%d.err", set, i)))
		if err1 != nil || err2 != nil {
			t.Fatalf("output --dir: %v %v", err1, err2)
		}
		check("output --dir", i, string(o), string(e))
	}

	// --tar of a range, in pages of 64 bytes.
	tarPath := filepath.Join(t.TempDir(), "out.tar")
	c.mustCtl("output", fmt.Sprintf("%d/1-8", set), "--tar", "-o", tarPath, "--page-bytes", "64")
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]string{}
	var names []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("output --tar: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = string(b)
		names = append(names, h.Name)
	}
	if len(names) != 16 || names[0] != fmt.Sprintf("%d-1.out", set) || names[1] != fmt.Sprintf("%d-1.err", set) {
		t.Errorf("output --tar entries %v, want 1.out, 1.err ... 8.err", names)
	}
	for i := 1; i < 9; i++ {
		check("output --tar", i, got[fmt.Sprintf("%d-%d.out", set, i)], got[fmt.Sprintf("%d-%d.err", set, i)])
	}

	// request --json --with-output of several tasks.
	r = c.mustCtl("--json", "request", "--with-output", fmt.Sprintf("%d/0,2,3", set))
	var req struct {
		Tasks []struct {
			Index  int `json:"index"`
			Output *struct {
				Stdout string `json:"stdout"`
				Stderr string `json:"stderr"`
			} `json:"output"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &req); err != nil {
		t.Fatalf("request --json --with-output: %v\n%s", err, r.stdout)
	}
	if len(req.Tasks) != 3 {
		t.Fatalf("request --json --with-output: %d tasks, want 3", len(req.Tasks))
	}
	for _, task := range req.Tasks {
		if task.Output == nil {
			t.Errorf("request --with-output: task %d has no output", task.Index)
			continue
		}
		check("request --with-output", task.Index, task.Output.Stdout, task.Output.Stderr)
	}

	// A whole set: read from its start, not by index.
	r = c.mustCtl("--json", "request", "--with-output", fmt.Sprint(set))
	req.Tasks = nil
	if err := json.Unmarshal([]byte(r.stdout), &req); err != nil {
		t.Fatalf("request --json --with-output SET: %v\n%s", err, r.stdout)
	}
	if len(req.Tasks) != 9 {
		t.Fatalf("request --json --with-output SET: %d tasks, want 9", len(req.Tasks))
	}
	for _, task := range req.Tasks {
		if task.Output == nil {
			t.Errorf("request --with-output SET: task %d has no output", task.Index)
			continue
		}
		check("request --with-output SET", task.Index, task.Output.Stdout, task.Output.Stderr)
	}

	// A task not requested has no output to read: the others are written,
	// it is named, and the exit status says so.
	c.mustCtl("disclose", "--set", fmt.Sprint(set), "--", "true")
	dir2 := filepath.Join(t.TempDir(), "out2")
	r = c.ctl("output", fmt.Sprint(set), "--dir", dir2)
	if r.code != 3 || !strings.Contains(r.stderr, fmt.Sprintf("%d/9", set)) {
		t.Errorf("output --dir with an unrequested task: exit %d, stderr %q; want 3 naming %d/9", r.code, r.stderr, set)
	}
	if files, _ := os.ReadDir(dir2); len(files) != 18 {
		t.Errorf("output --dir with an unrequested task wrote %d files, want the other 18", len(files))
	}
}

// TestArrayErrors: bad ranges are refused with a message that says what
// is wrong, and nothing is disclosed.
func TestArrayErrors(t *testing.T) {
	c := startServer(t, "--slots", "1")
	for _, tc := range []struct{ array, want string }{
		{"", "empty"},
		{"9-3", "reversed"},
		{"0-9:0", "step"},
		{"0-9:x", "step"},
		{"a-3", "LOW"},
		{"0-5000000", "at most 1000000"},
	} {
		r := c.ctl("disclose", "--array", tc.array, "--", "true")
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("--array %q: exit %d, stderr %q; want a failure saying %q", tc.array, r.code, r.stderr, tc.want)
		}
	}
	r := c.ctl("disclose", "--array", "0-3")
	if r.code == 0 || !strings.Contains(r.stderr, "after --") {
		t.Errorf("--array without a command: exit %d, stderr %q", r.code, r.stderr)
	}
	var sets struct {
		Sets []jsonSet `json:"sets"`
	}
	if c.ctlJSON(&sets, "ls"); len(sets.Sets) != 0 {
		t.Errorf("refused arrays left %d sets", len(sets.Sets))
	}
}
