package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"batchd/sched/sim"
)

// docs/sim.md's summary quotes results only through claims, as the notes
// do: every field names a claim reference, every reference of its own is
// used, and its fixed numbers are the papers' and the workloads'.
func TestSimDocFromClaims(t *testing.T) {
	refs := simDocFields()
	used := map[string]bool{}
	for _, f := range regexp.MustCompile(`\{\{(?:(?:atleast|atmost|within) )?(\w+)[^}]*\}\}`).FindAllStringSubmatch(simDocTemplate, -1) {
		if _, ok := refs[f[1]]; !ok {
			t.Errorf("sim.md field {{%s}} names no claim", f[1])
		}
		used[f[1]] = true
	}
	for name := range simDocRefs {
		if !used[name] {
			t.Errorf("sim.md claim reference %q is not used", name)
		}
	}
	allowed := map[string]bool{"50%": true, "34%": true, "4%": true, "20%": true, "10%": true, "5%": true, "60%": true, "80%": true, "95%": true, "4×": true, "2×": true, "1%": true, "1.537": true, "1.525": true}
	for _, n := range regexp.MustCompile(`\d+(\.\d+)?[%×]|\d+\.\d{3}`).FindAllString(simDocTemplate, -1) {
		if !allowed[n] {
			t.Errorf("sim.md summary holds the fixed number %q: quote a claim instead", n)
		}
	}
}

// The report rewrites only the block between the marks, and leaves a page
// without them alone.
func TestWriteSimDoc(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "sim.md")
	head, tail := "# The simulator\n\nhand-written 1.5×\n\n", "\n\n## Later\n\nhand-written too\n"
	if err := os.WriteFile(name, []byte(head+simDocBegin+"\n\nstale 9.99×\n"+simDocEnd+tail), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := []sim.Claim{{Key: "hopper-60%", Ours: sim.Summary{Mean: 37.5, HalfWidth: 2.5}, Unit: "%"}}
	if err := writeSimDoc(name, cs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if !strings.HasPrefix(got, head+simDocBegin+"\n\n") || !strings.HasSuffix(got, simDocEnd+tail) {
		t.Errorf("the page outside the block changed:\n%s", got)
	}
	if strings.Contains(got, "stale") || !strings.Contains(got, "by 37.5% ± 2.50 at 60%") || strings.Contains(got, "{{") {
		t.Errorf("block not rewritten from the claims:\n%s", got)
	}
	plain := filepath.Join(dir, "plain.md")
	if err := os.WriteFile(plain, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeSimDoc(plain, cs); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(plain); string(b) != head {
		t.Errorf("a page without the marks changed")
	}
	if err := writeSimDoc(filepath.Join(dir, "missing.md"), cs); err != nil {
		t.Errorf("missing page: %v", err)
	}
}
