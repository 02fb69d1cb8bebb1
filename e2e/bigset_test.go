package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBigSet discloses 20,000 tasks from a file in one call, lists a page
// of them and the set list while they are there, and cancels them all in
// one call, through batchctl. It asserts counts, never time
// (server.BenchmarkBigSet times 100,000).
func TestBigSet(t *testing.T) {
	c := startServer(t, "--slots", "0")
	const n = 20_000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "echo %d\n", i)
	}
	file := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var d jsonDisclose
	c.ctlJSON(&d, "disclose", "--name", "big", "--file", file)
	if d.Count != n || d.Set.Counts.Total != n || d.Set.Counts.Disclosed != n {
		t.Fatalf("disclose = %+v, want %d disclosed tasks", d, n)
	}
	set := fmt.Sprint(d.Set.ID)

	var page jsonStatus
	c.ctlJSON(&page, "status", "--limit", "10", set)
	if len(page.Tasks) != 10 || page.Tasks[9].Index != 9 || page.Set.Counts.Total != n {
		t.Errorf("status --limit 10: %d tasks (set %+v), want the first 10 of %d", len(page.Tasks), page.Set, n)
	}
	var next jsonStatus
	c.ctlJSON(&next, "status", "--limit", "10", "--page", page.NextPageToken, set)
	if len(next.Tasks) != 10 || next.Tasks[0].Index != 10 || page.NextPageToken == "" {
		t.Errorf("second page after token %q: %d tasks from %v, want 10 from index 10", page.NextPageToken, len(next.Tasks), next.Tasks)
	}
	if ls := c.mustCtl("ls").stdout; !strings.Contains(ls, "big") || !strings.Contains(ls, fmt.Sprint(n)) {
		t.Errorf("ls = %q, want the big set with %d tasks", ls, n)
	}

	var cancels []jsonCancel
	c.ctlJSON(&cancels, "cancel", set)
	if len(cancels) != 1 || cancels[0].Canceled != n || cancels[0].Set.Counts.Canceled != n {
		t.Fatalf("cancel = %+v, want %d canceled", cancels, n)
	}
	var after jsonStatus
	c.ctlJSON(&after, "status", "--limit", "1", "--state", "disclosed", set)
	if len(after.Tasks) != 0 || after.Set.Counts.Disclosed != 0 {
		t.Errorf("after cancel: %d disclosed tasks listed, counts %+v", len(after.Tasks), after.Set.Counts)
	}
}
