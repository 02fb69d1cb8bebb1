package worker

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// WaitTokenFile waits while the token file is there and empty: it returns
// the token once a writer renames a filled file over it, fails at once
// when the file goes away, and fails once the wait is over for a file
// that stays empty. Without a wait an empty file fails at once.
func TestWaitTokenFile(t *testing.T) {
	t.Parallel()
	empty := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "pilot.token")
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		p := empty(t)
		got := make(chan error, 1)
		var tok string
		go func() {
			var err error
			tok, err = WaitTokenFile(context.Background(), p, true, time.Minute)
			got <- err
		}()
		// Give the reader time to find the file empty first.
		waitPolls(t, 2)
		tmp := p + ".new"
		if err := os.WriteFile(tmp, []byte("bdp_pilot7\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil || tok != "bdp_pilot7" {
			t.Fatalf("WaitTokenFile = %q, %v", tok, err)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("the token file is still there: %v", err)
		}
	})
	t.Run("ErrGone", func(t *testing.T) {
		t.Parallel()
		p := empty(t)
		got := make(chan error, 1)
		go func() {
			_, err := WaitTokenFile(context.Background(), p, true, time.Hour)
			got <- err
		}()
		waitPolls(t, 2)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err == nil || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("WaitTokenFile on a removed file: %v, want not-exist", err)
		}
	})
	t.Run("ErrStaysEmpty", func(t *testing.T) {
		t.Parallel()
		if _, err := WaitTokenFile(context.Background(), empty(t), false, 30*time.Millisecond); err == nil {
			t.Fatal("an empty token file gave a token")
		}
	})
	t.Run("ErrEmptyNoWait", func(t *testing.T) {
		t.Parallel()
		if _, err := TokenFromFile(empty(t), false); err == nil {
			t.Fatal("an empty token file gave a token")
		}
	})
	t.Run("ErrCanceled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := WaitTokenFile(ctx, empty(t), false, time.Hour); err == nil {
			t.Fatal("a canceled wait gave a token")
		}
	})
}

// waitPolls sleeps for n of WaitTokenFile's polls.
func waitPolls(t *testing.T, n int) {
	t.Helper()
	time.Sleep(time.Duration(n) * tokenPoll)
}
