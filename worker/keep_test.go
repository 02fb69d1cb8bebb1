//go:build linux

package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// keptByPath indexes a report's kept files by path.
func keptByPath(files []*batchv1.KeptFileContent) map[string]*batchv1.KeptFileContent {
	m := map[string]*batchv1.KeptFileContent{}
	for _, f := range files {
		m[f.GetFile().GetPath()] = f
	}
	return m
}

func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// Patterns match regular files by name and by glob, one directory level
// per component, in path order; a pattern that matches nothing is said.
func TestCollectKeptMatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "result.txt"), "data\n", 0o640)
	write(t, filepath.Join(dir, "out", "a.csv"), "1,2\n", 0o644)
	write(t, filepath.Join(dir, "out", "b.csv"), "3,4\n", 0o755)
	write(t, filepath.Join(dir, "out", "c.log"), "no\n", 0o644)
	write(t, filepath.Join(dir, "out", "deep", "d.csv"), "no\n", 0o644)
	got := collectKept(dir, []string{"out/*.csv", "result.txt", "missing.txt", "result.txt"}, keepRules{cap: 1 << 20, uid: -1})
	var paths []string
	for _, f := range got {
		paths = append(paths, f.GetFile().GetPath())
	}
	if want := "out/a.csv out/b.csv result.txt missing.txt"; strings.Join(paths, " ") != want {
		t.Fatalf("paths %v, want %s", paths, want)
	}
	m := keptByPath(got)
	if f := m["result.txt"]; string(f.GetContent()) != "data\n" || f.GetFile().GetNotKept() != "" || f.GetFile().GetMode() != 0o640 || f.GetFile().GetSize() != 5 {
		t.Errorf("result.txt: %v %q", f.GetFile(), f.GetContent())
	}
	if f := m["out/b.csv"]; string(f.GetContent()) != "3,4\n" || f.GetFile().GetMode() != 0o755 {
		t.Errorf("out/b.csv: %v %q", f.GetFile(), f.GetContent())
	}
	if f := m["missing.txt"]; !strings.Contains(f.GetFile().GetNotKept(), "nothing matched") {
		t.Errorf("missing.txt: %v, want 'nothing matched'", f.GetFile())
	}
}

// What a task may plant to make a root worker hand over what it could
// not read itself is refused, by name, with the reason; nothing blocks.
func TestCollectKeptRefusesPlants(t *testing.T) {
	t.Parallel()
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "admin.token")
	write(t, secret, "bd_secret", 0o600)
	dir := t.TempDir()
	if err := os.Symlink(secret, filepath.Join(dir, "result.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secretDir, filepath.Join(dir, "out")); err != nil { // a symlink on the way
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(dir, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	// A sparse file far over the cap: refused by its size, never read.
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got := collectKept(dir, []string{"result.txt", "out/*", "fifo", "dir.txt", "hard.txt", "sparse"}, keepRules{cap: 1 << 20, uid: -1})
	m := keptByPath(got)
	for path, why := range map[string]string{
		"result.txt": "symlink", "out": "symlink", "fifo": "FIFO", "dir.txt": "directory", "hard.txt": "hard links", "sparse": "bigger than the 1 MiB kept per task",
	} {
		f := m[path]
		if f == nil {
			t.Errorf("%s: not listed; want it refused (%s)", path, why)
			continue
		}
		if !strings.Contains(f.GetFile().GetNotKept(), why) || len(f.GetContent()) != 0 {
			t.Errorf("%s: not_kept %q, %d bytes; want refused for %q", path, f.GetFile().GetNotKept(), len(f.GetContent()), why)
		}
	}
	for _, f := range got {
		if strings.Contains(string(f.GetContent()), "bd_secret") {
			t.Errorf("%s: the secret was kept", f.GetFile().GetPath())
		}
	}
	if f := m["sparse"]; f.GetFile().GetSize() != 1<<40 {
		t.Errorf("sparse: size %d, want the size it claims", f.GetFile().GetSize())
	}
}

// A copy that ran as a uid of its own hands over only files that uid owns.
func TestCollectKeptOwner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "mine"), "x", 0o644)
	got := collectKept(dir, []string{"mine"}, keepRules{cap: 1 << 20, uid: os.Getuid() + 1})
	if why := got[0].GetFile().GetNotKept(); !strings.Contains(why, "owned by uid") || len(got[0].GetContent()) != 0 {
		t.Errorf("a file of another uid: not_kept %q, want refused", why)
	}
	got = collectKept(dir, []string{"mine"}, keepRules{cap: 1 << 20, uid: os.Getuid()})
	if got[0].GetFile().GetNotKept() != "" || string(got[0].GetContent()) != "x" {
		t.Errorf("the copy's own file: %v %q, want kept", got[0].GetFile(), got[0].GetContent())
	}
}

// The cap counts all files together, in path order: the file that does
// not fit is refused with the cap and what took it; later smaller ones
// that fit are kept. Too many matches end in one entry that says so.
func TestCollectKeptCaps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a"), strings.Repeat("a", 600), 0o644)
	write(t, filepath.Join(dir, "b"), strings.Repeat("b", 600), 0o644)
	write(t, filepath.Join(dir, "c"), strings.Repeat("c", 100), 0o644)
	got := collectKept(dir, []string{"?"}, keepRules{cap: 1024, uid: -1})
	m := keptByPath(got)
	if len(m["a"].GetContent()) != 600 || len(m["c"].GetContent()) != 100 {
		t.Errorf("a and c: %d and %d bytes kept, want 600 and 100", len(m["a"].GetContent()), len(m["c"].GetContent()))
	}
	if why := m["b"].GetFile().GetNotKept(); !strings.Contains(why, "over the 1 KiB kept per task") || len(m["b"].GetContent()) != 0 {
		t.Errorf("b: not_kept %q, want over the cap", why)
	}

	many := t.TempDir()
	for i := range sched.MaxKeptFiles + 5 {
		write(t, filepath.Join(many, fmt.Sprintf("f%04d", i)), "", 0o644)
	}
	got = collectKept(many, []string{"f*"}, keepRules{cap: 1 << 20, uid: -1})
	if len(got) != sched.MaxKeptFiles+1 {
		t.Fatalf("%d entries, want %d and one that says the rest were left", len(got), sched.MaxKeptFiles+1)
	}
	if last := got[len(got)-1].GetFile(); last.GetPath() != "f*" || !strings.Contains(last.GetNotKept(), "more files matched") {
		t.Errorf("last entry %v, want the pattern and 'more files matched'", last)
	}
}

// The agent collects the files after the copy ends and sends them with
// its result; a FIFO the task leaves does not hang it, and the scratch
// directory is gone afterwards.
func TestCopyKeepsFiles(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	spec := sh(`echo data > result.txt; mkfifo pipe; mkdir out; echo 1 > out/x.csv; ln -s /etc/passwd link.txt`)
	spec.Keep = []string{"result.txt", "pipe", "out/*.csv", "link.txt"}
	b.srv.startCopy(1, 0, spec)
	r := b.srv.report(1)
	if r.ExitCode != 0 {
		t.Fatalf("exit %d: %s", r.ExitCode, r.Stderr)
	}
	m := keptByPath(r.Kept)
	if string(m["result.txt"].GetContent()) != "data\n" || string(m["out/x.csv"].GetContent()) != "1\n" {
		t.Errorf("kept %v", r.Kept)
	}
	if m["pipe"].GetFile().GetNotKept() == "" || m["link.txt"].GetFile().GetNotKept() == "" {
		t.Errorf("pipe and link kept: %v", r.Kept)
	}
	eventually(t, "the copy's files gone after its report", func() bool {
		found, _ := filepath.Glob(filepath.Join(b.a.scratchRoot, "*", "result.txt"))
		return len(found) == 0
	})
}

// Under uid isolation, a task that links to a file it cannot read (the
// worker's root-only token) gets nothing of it: neither through a symlink
// nor through a hard link.
func TestIsolatedCopyKeepRefusesSecret(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("uid isolation needs root")
	}
	secret := filepath.Join(t.TempDir(), "admin.token")
	write(t, secret, "bd_secret", 0o600)
	b := setupWith(t, nil, func(c *Config) { c.Isolation = IsolationUID; c.SlotUIDs = UIDRange{First: 61300, Count: 4} })
	spec := sh(`ln -s ` + secret + ` result.txt; ln ` + secret + ` hard.txt 2>/dev/null; echo mine > own.txt; cat result.txt 2>/dev/null || echo unreadable`)
	spec.Keep = []string{"*.txt"}
	b.srv.startCopy(1, 0, spec)
	r := b.srv.report(1)
	if !strings.Contains(string(r.Stdout), "unreadable") {
		t.Fatalf("the task could read the secret itself: %q", r.Stdout)
	}
	m := keptByPath(r.Kept)
	if string(m["own.txt"].GetContent()) != "mine\n" {
		t.Errorf("own.txt not kept: %v", r.Kept)
	}
	if m["result.txt"] == nil || !strings.Contains(m["result.txt"].GetFile().GetNotKept(), "symlink") {
		t.Errorf("result.txt: %v, want refused as a symlink", m["result.txt"].GetFile())
	}
	for _, f := range r.Kept {
		if strings.Contains(string(f.GetContent()), "bd_secret") {
			t.Errorf("%s: the secret was kept", f.GetFile().GetPath())
		}
	}
}
