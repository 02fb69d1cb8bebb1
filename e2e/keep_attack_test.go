package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeptFilesAttacks: real binaries. A task tries to have the worker
// hand over what it must not: a symlink to the server's admin.token, a
// symlinked directory into the data directory, a hard link to batchd.db,
// a FIFO (an open that would never return) and a file over the cap. Each
// is refused with its reason, no secret reaches output --dir, and the
// worker goes on (the next task runs). As root under uid isolation, where
// the task cannot read those files itself, and without isolation, where
// it runs as the worker's own user.
func TestKeptFilesAttacks(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"none", nil},
		{"uid", []string{"--isolation", "uid", "--slot-uids", "62200-62215"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "uid" && os.Geteuid() != 0 {
				t.Skip("uid isolation needs root")
			}
			c := startServer(t, append([]string{"--slots", "2", "--keep-max-task", "64KiB"}, tc.args...)...)
			secret := c.adminToken()
			script := fmt.Sprintf(`ln -s %[1]s/admin.token token; ln -s %[1]s data; ln %[1]s/batchd.db hard 2>/dev/null || echo no-hard-link; `+
				`mkfifo fifo; head -c 100000 /dev/zero > big; echo ok > ok.txt; cat %[1]s/admin.token 2>/dev/null | head -c 3 | grep -q bd_ && echo READS-TOKEN; true`, c.data)
			var d jsonDisclose
			c.ctlJSON(&d, "disclose", "--request", "--keep", "token", "--keep", "data/*", "--keep", "hard", "--keep", "fifo", "--keep", "big", "--keep", "ok.txt",
				"--", "sh", "-c", script)
			req := c.mustCtl("request", fmt.Sprintf("%d/0", d.Set.ID))
			if tc.name == "uid" && strings.Contains(req.stdout, "READS-TOKEN") {
				t.Fatalf("uid: the task reads admin.token itself; the test cannot tell the worker's part")
			}
			files := c.mustCtl("output", "--files", fmt.Sprintf("%d/0", d.Set.ID)).stdout
			for _, want := range []string{"token", "symlink", "data", "fifo", "FIFO", "big", "kept per task", "ok.txt"} {
				if !strings.Contains(files, want) {
					t.Errorf("output --files lacks %q:\n%s", want, files)
				}
			}
			if !strings.Contains(req.stdout, "no-hard-link") && !strings.Contains(files, "hard") {
				t.Errorf("the hard link is neither refused nor listed:\n%s", files)
			}
			dir := t.TempDir()
			c.mustCtl("output", "-q", fmt.Sprint(d.Set.ID), "--dir", dir)
			err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
				if err != nil || info.IsDir() {
					return err
				}
				if info.Mode()&os.ModeType != 0 {
					t.Errorf("--dir wrote %s, not a regular file", p)
				}
				b, err := os.ReadFile(p)
				if err == nil && (strings.Contains(string(b), secret) || strings.Contains(string(b), "SQLite format")) {
					t.Errorf("%s holds the server's secrets", p)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(d.Set.ID), "0", "ok.txt")); err != nil || string(got) != "ok\n" {
				t.Errorf("ok.txt = %q, %v; the task's own file was not kept", got, err)
			}
			// The worker is not stuck on the FIFO: the next task runs.
			c.ctlJSON(&d, "disclose", "--request", "--", "echo", "next")
			if r := c.mustCtl("request", fmt.Sprintf("%d/0", d.Set.ID)); r.stdout != "next\n" {
				t.Errorf("the next task printed %q", r.stdout)
			}
		})
	}
}
