package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the module's root (this package sits two levels below it).
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTreeClean: the tree as committed breaks no rule.
func TestTreeClean(t *testing.T) {
	t.Chdir(root(t))
	pkgs, err := list("")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: the module was not read", len(pkgs))
	}
	if bad := check(pkgs); len(bad) > 0 {
		t.Errorf("violations in the tree:\n%s", strings.Join(bad, "\n"))
	}
}

// TestPlantedViolations plants, for each rule, one file that breaks it
// (through go list's overlay, leaving the tree alone) and checks that
// exactly that rule reports it.
func TestPlantedViolations(t *testing.T) {
	r := root(t)
	t.Chdir(r)
	cases := []struct {
		dir, pkg, imp, rule string
	}{
		{"sched", "sched", "encoding/json\"\n\t_ \"batchd/internal/jitter", "sched imports only the standard library"},
		{"sched/sim", "sim", "batchd/store", "the simulator imports only"},
		{"store", "store", "batchd/sched/sim", "store imports neither"},
		{"cmd/batchctl", "main", "batchd/store", "batchctl is CGO-free"},
		{"cmd/batchctl", "main", "github.com/mattn/go-sqlite3", "batchctl is CGO-free"},
		{"worker", "worker", "batchd/store", "worker and pool never import"},
		{"pool", "pool", "batchd/server", "worker and pool never import"},
		{"client", "client", "batchd/worker", "client is the typed client only"},
		{"server", "server", "batchd/worker", "server imports neither"},
		{"client", "client", "batchd/cmd/internal/cliarg", "nothing outside cmd imports cmd"},
		{"internal/wire", "wire", "batchd/sched", "the wire contract"},
		{"internal/forkbase", "forkbase", "batchd/worker", "the wire contract"},
		{"internal/promtext", "promtext", "batchd/server", "the wire contract"},
		{"sched/sim", "sim", "batchd/store", "only server, store, cmd/batchd"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s->%s", c.dir, c.imp), func(t *testing.T) {
			tmp := t.TempDir()
			src := filepath.Join(tmp, "planted.go")
			body := fmt.Sprintf("package %s\n\nimport _ %q\n", c.pkg, c.imp)
			if strings.Contains(c.imp, "\n") {
				body = fmt.Sprintf("package %s\n\nimport (\n\t_ \"%s\"\n)\n", c.pkg, c.imp)
			}
			if err := os.WriteFile(src, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{
				filepath.Join(r, c.dir, fmt.Sprintf("zz_planted_%d.go", i)): src}})
			ovPath := filepath.Join(tmp, "overlay.json")
			if err := os.WriteFile(ovPath, ov, 0o644); err != nil {
				t.Fatal(err)
			}
			pkgs, err := list(ovPath)
			if err != nil {
				t.Fatal(err)
			}
			bad := check(pkgs)
			found := false
			for _, b := range bad {
				if strings.HasPrefix(b, c.rule) {
					found = true
				}
			}
			if !found {
				t.Errorf("planting %s in %s: rule %q did not fire; violations: %q", c.imp, c.dir, c.rule, bad)
			}
		})
	}
}
