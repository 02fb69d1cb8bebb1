package worker

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A server restates, on each new Assignments stream, a start for every
// copy it holds as live, and a copy's report may cross that restatement:
// the worker has reported the copy and forgotten it when the restated
// start arrives, and the server, having taken the report, gives the slot
// to the next copy. The worker must not run the ended copy again (twice
// the task's side effects) nor find the next copy's slot busy with it.
func TestRestatedStartOfEndedCopy(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	b := setupWith(t, nil, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))
	})
	runs := filepath.Join(b.dir, "runs")
	b.srv.startCopy(11, 0, sh(`echo 11 >> `+runs+`; sleep 0.2`))
	b.srv.report(11)
	b.srv.waitFor("the worker to forget copy 11", func() bool {
		b.a.mu.Lock()
		defer b.a.mu.Unlock()
		_, held := b.a.copies[11]
		return !held
	})
	// The restatement, then the start the report's slot went to.
	b.srv.startCopy(11, 0, sh(`echo 11 >> `+runs+`; sleep 0.2`))
	b.srv.startCopy(12, 0, sh(`echo 12 >> `+runs))
	b.srv.report(12)
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "11\n12\n" {
		t.Errorf("copies ran %q, want copy 11 once, then 12", got)
	}
	if n := b.srv.reportCount(11); n != 1 {
		t.Errorf("copy 11 reported %d times, want once", n)
	}
	if strings.Contains(log.String(), "start on a busy slot") {
		t.Errorf("the worker found a slot busy:\n%s", log.String())
	}
}
