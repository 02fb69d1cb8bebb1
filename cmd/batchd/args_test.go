package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"batchd/store"
)

// TestFlagsAfterArguments: `batchd user add NAME --worker` makes a worker
// user (urfave/cli alone would take --worker for an argument), and a
// misspelt command gets a suggestion.
func TestFlagsAfterArguments(t *testing.T) {
	dir := t.TempDir()
	db := store.NewDB(filepath.Join(dir, "batchd.db"))
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	var out, errOut bytes.Buffer
	if err := runApp(t.Context(), newApp(&out, &errOut), []string{"batchd", "user", "add", "ann", "--worker", "--data", dir}); err != nil {
		t.Fatalf("user add ann --worker: %v (%s)", err, errOut.String())
	}
	out.Reset()
	if err := runApp(t.Context(), newApp(&out, &errOut), []string{"batchd", "user", "list", "--data", dir}); err != nil {
		t.Fatal(err)
	}
	line := ""
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "ann") {
			line = l
		}
	}
	if !strings.Contains(line, "worker") {
		t.Fatalf("user list: %q; want ann with role worker", out.String())
	}
	err := runApp(t.Context(), newApp(&out, &errOut), []string{"batchd", "sevre"})
	if err == nil || !strings.Contains(err.Error(), `"serve"`) {
		t.Fatalf("batchd sevre: %v; want a suggestion of serve", err)
	}
}
