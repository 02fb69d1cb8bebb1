package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/sched"
)

// TestCodesRoundTrip checks the one table both ways: a sched code sent by the
// server as a Connect code comes back as the same sched code.
func TestCodesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range codes {
		if got, want := ConnectCode(c.sched), c.connect; got != want {
			t.Errorf("ConnectCode(%q) = %v, want %v", c.sched, got, want)
		}
		if got, want := SchedCode(ConnectCode(c.sched)), c.sched; got != want {
			t.Errorf("SchedCode(ConnectCode(%q)) = %q, want %q", c.sched, got, want)
		}
	}
	if got, want := ConnectCode("no such code"), connect.CodeInternal; got != want {
		t.Errorf("ConnectCode(unknown) = %v, want %v", got, want)
	}
	if got, want := SchedCode(connect.CodeDeadlineExceeded), sched.EUNAVAILABLE; got != want {
		t.Errorf("SchedCode(DeadlineExceeded) = %q, want %q", got, want)
	}
}

func TestFromConnect(t *testing.T) {
	t.Parallel()
	err := fromConnect(connect.NewError(connect.CodeNotFound, errors.New("task set 9 not found")))
	if got, want := sched.ErrorCode(err), sched.ENOTFOUND; got != want {
		t.Errorf("code = %q, want %q", got, want)
	}
	if got, want := sched.ErrorMessage(err), "task set 9 not found"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if err := fromConnect(fmt.Errorf("wrapped: %w", context.Canceled)); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context became %v", err)
	}
	if fromConnect(nil) != nil {
		t.Error("nil error became non-nil")
	}
}

// TestRetryUnreachable calls a port nobody listens on: the call is retried
// (with the injected sleep, so no real wait) and ends as EUNAVAILABLE.
func TestRetryUnreachable(t *testing.T) {
	t.Parallel()
	sleeps := 0
	var waits []time.Duration
	c := New(Config{
		Server:   "127.0.0.1:1", // nothing listens on port 1
		RetryFor: 1 << 40,       // long; the sleep hook ends it
		SleepFunc: func(ctx context.Context, d time.Duration) error {
			sleeps++
			waits = append(waits, d)
			if sleeps == 3 {
				return errors.New("enough")
			}
			return nil
		},
	})
	_, err := c.Disclose(context.Background(), DiscloseInput{Tasks: []sched.TaskSpec{{Argv: []string{"true"}}}})
	if got, want := sched.ErrorCode(err), sched.EUNAVAILABLE; got != want {
		t.Fatalf("code = %q (%v), want %q", got, err, want)
	}
	if got, want := sleeps, 3; got != want {
		t.Errorf("sleeps = %d, want %d", got, want)
	}
	// The waits double and are jittered below each ceiling: between half
	// the ceiling and the ceiling, and not all exactly the ceiling.
	ceil, exact := minBackoff, 0
	for i, d := range waits {
		if d < ceil/2 || d > ceil {
			t.Errorf("wait %d = %v, want in [%v, %v]", i, d, ceil/2, ceil)
		}
		if d == ceil {
			exact++
		}
		ceil *= 2
	}
	if exact == len(waits) {
		t.Errorf("waits %v: no jitter", waits)
	}
}
