package e2e

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeptFiles: real binaries. A task's files matching --keep travel with
// its result and come back with output --files (listed, with why some were
// not kept: a symlink, over the cap per task, over the cap per user, a
// pattern that matched nothing), --dir (DIR/SET/I/PATH, never written over
// without --force) and --tar; a pattern that could leave the scratch
// directory is refused at disclose.
func TestKeptFiles(t *testing.T) {
	c := startServer(t, "--slots", "2", "--keep-max-task", "1KiB", "--keep-max-user", "1KiB")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("bd_secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	var d jsonDisclose
	c.ctlJSON(&d, "disclose", "--request", "--keep", "result.txt", "--keep", "out/*.csv", "--keep", "link", "--keep", "big.bin", "--keep", "none.txt",
		"--", "sh", "-c", "echo data > result.txt; mkdir out; echo 1,2 > out/a.csv; echo no > out/b.log; ln -s "+secret+" link; head -c 2000 /dev/zero > big.bin")
	set := d.Set.ID
	c.mustCtl("request", "-q", fmt.Sprint(set))

	files := c.mustCtl("output", "--files", fmt.Sprintf("%d/0", set)).stdout
	for _, want := range []string{"result.txt", "out/a.csv", "link", "symlink", "big.bin", "kept per task", "none.txt", "nothing matched"} {
		if !strings.Contains(files, want) {
			t.Errorf("output --files lacks %q:\n%s", want, files)
		}
	}
	if strings.Contains(files, "b.log") {
		t.Errorf("output --files lists a file no pattern matched:\n%s", files)
	}

	if st := c.mustCtl("status", fmt.Sprintf("%d/0", set)).stdout; !strings.Contains(st, "kept files: 2 (9 B), 3 not kept") {
		t.Errorf("status SET/I does not say what was kept:\n%s", st)
	}

	dir := t.TempDir()
	r := c.mustCtl("output", fmt.Sprint(set), "--dir", dir, "-q")
	for name, want := range map[string]string{
		fmt.Sprintf("%d/0/result.txt", set): "data\n",
		fmt.Sprintf("%d/0/out/a.csv", set):  "1,2\n",
		fmt.Sprintf("%d-0.out", set):        "",
	} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
			t.Errorf("--dir: %s = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, absent := range []string{"link", "big.bin"} {
		if _, err := os.Lstat(filepath.Join(dir, fmt.Sprint(set), "0", absent)); err == nil {
			t.Errorf("--dir wrote %s, which was not kept", absent)
		}
	}
	if !strings.Contains(r.stderr, "link not kept") || !strings.Contains(r.stderr, "big.bin not kept") {
		t.Errorf("--dir does not say what was not kept:\n%s", r.stderr)
	}
	// Written again: refused file by file, unless --force.
	if r := c.ctl("output", fmt.Sprint(set), "--dir", dir, "-q"); r.code != 3 || !strings.Contains(r.stderr, "--force") {
		t.Errorf("--dir over existing kept files: exit %d, stderr %q; want 3 and a hint at --force", r.code, r.stderr)
	}
	c.mustCtl("output", fmt.Sprint(set), "--dir", dir, "-q", "--force")

	tarFile := filepath.Join(t.TempDir(), "out.tar")
	c.mustCtl("output", fmt.Sprint(set), "--tar", "-o", tarFile, "-q")
	f, err := os.Open(tarFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries := map[string]string{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		entries[h.Name] = string(b)
	}
	if got := entries[fmt.Sprintf("%d/0/result.txt", set)]; got != "data\n" {
		t.Errorf("--tar: result.txt = %q; entries %v", got, entries)
	}
	if _, ok := entries[fmt.Sprintf("%d-0.out", set)]; !ok || len(entries) != 4 {
		t.Errorf("--tar entries %v, want the two streams and the two kept files", entries)
	}

	// The user's cap: 9 bytes are stored; 1020 more do not fit in 1 KiB.
	c.ctlJSON(&d, "disclose", "--request", "--keep", "f", "--", "sh", "-c", "head -c 1020 /dev/zero > f")
	c.mustCtl("request", "-q", fmt.Sprint(d.Set.ID))
	if files := c.mustCtl("output", "--files", fmt.Sprintf("%d/0", d.Set.ID)).stdout; !strings.Contains(files, "keep-max-user") {
		t.Errorf("over the user's cap, output --files says:\n%s", files)
	}

	for _, bad := range []string{"/etc/passwd", "../x", "a/../../x", ""} {
		if r := c.ctl("disclose", "--keep", bad, "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "--keep") {
			t.Errorf("disclose --keep %q: exit %d, stderr %q; want 1 (invalid) naming --keep", bad, r.code, r.stderr)
		}
	}
}
