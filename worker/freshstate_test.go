package worker

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
)

// An agent that makes its state directory knows that no earlier agent's
// copies can be left from it (and so skips looking for them); an agent
// on an existing state directory does not.
func TestFreshStateDir(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t)
	state := filepath.Join(t.TempDir(), "slurm-42")
	cfg := Config{Server: srv.url(), StateDir: state, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Isolation: IsolationNone}
	a, err := newAgent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newAgent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !a.freshState || b.freshState {
		t.Fatalf("fresh: first agent %v, second %v; want true, false", a.freshState, b.freshState)
	}
}
