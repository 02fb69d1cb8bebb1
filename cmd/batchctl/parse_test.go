package main

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"batchd/sched"
)

func TestParseSel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want taskSel
		err  bool
	}{
		{in: "3", want: taskSel{Set: 3, All: true}},
		{in: "3/0", want: taskSel{Set: 3, Indexes: []int32{0}}},
		{in: "3/0,2,5-7", want: taskSel{Set: 3, Indexes: []int32{0, 2, 5, 6, 7}}},
		{in: "0", err: true},
		{in: "x/1", err: true},
		{in: "3/", err: true},
		{in: "3/7-5", err: true},
		{in: "3/-1", err: true},
		{in: "3/a", err: true},
	} {
		got, err := parseSel(tc.in)
		if tc.err {
			if got, want := sched.ErrorCode(err), sched.EINVALID; got != want {
				t.Errorf("parseSel(%q) code = %q, want %q", tc.in, got, want)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseSel(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseSelsMerges(t *testing.T) {
	t.Parallel()
	got, err := parseSels([]string{"3/1", "4", "3/2", "4/0"})
	if err != nil {
		t.Fatal(err)
	}
	want := []taskSel{{Set: 3, Indexes: []int32{1, 2}}, {Set: 4, All: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseSels = %+v, want %+v", got, want)
	}
}

func TestParseWhen(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"", time.Time{}},
		{"24h", now.Add(-24 * time.Hour)},
		{"7d", now.Add(-7 * 24 * time.Hour)},
		{"2026-11-20T10:00:00Z", time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)},
		{"2026-11-20", time.Date(2026, 11, 20, 0, 0, 0, 0, time.Local)},
	} {
		got, err := parseWhen("since", tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if _, err := parseWhen("since", "yesterday", now); sched.ErrorCode(err) != sched.EINVALID {
		t.Errorf("parseWhen(yesterday) err = %v, want EINVALID", err)
	}
}

func TestParseSeconds(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{"": 0, "30": 30, "2.5": 2.5, "2m": 120, "1h30m": 5400} {
		if got, err := parseSeconds("estimate", in); err != nil || got != want {
			t.Errorf("parseSeconds(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseSeconds("estimate", "-3s"); err == nil {
		t.Error("parseSeconds(-3s) accepted a negative duration")
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{sched.Errorf(sched.EINVALID, "x"), 1},
		{sched.Errorf(sched.ERESOURCEEXHAUSTED, "x"), 1},
		{sched.Errorf(sched.ENOTFOUND, "x"), 2},
		{fmt.Errorf("wrapped: %w", sched.Errorf(sched.EFAILEDPRECONDITION, "x")), 3},
		{sched.Errorf(sched.EUNAVAILABLE, "x"), 4},
		{&exitError{code: 42}, 42},
		{context.Canceled, 130},
		{fmt.Errorf("flag provided but not defined: -x"), 1},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestUsageErrors runs the app on bad command lines: each fails with exit
// status 1 and a message, before any call to a server (none listens on the
// port given).
func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"disclose"},
		{"disclose", "--estimate", "soon", "--", "true"},
		{"disclose", "--file", "/nonexistent/commands.txt"},
		{"request"},
		{"request", "x/1"},
		{"cancel"},
		{"output", "3"},
		{"watch"},
		{"bill", "--since", "yesterday"},
		{"status", "--state", "bogus", "3"},
		{"nosuchcommand"},
	} {
		var stdout, stderr bytes.Buffer
		argv := append([]string{"batchctl", "--server", "127.0.0.1:1", "--retry", "0s"}, args...)
		if got, want := run(context.Background(), argv, &stdout, &stderr), exitInvalid; got != want {
			t.Errorf("%v: exit %d, want %d (stderr %q)", args, got, want, stderr.String())
		}
		if stderr.Len() == 0 {
			t.Errorf("%v: nothing on stderr", args)
		}
	}
}

// TestUnreachable checks exit status 4 when no server listens.
func TestUnreachable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	argv := []string{"batchctl", "--server", "http://127.0.0.1:1", "--retry", "0s", "ls"}
	if got, want := run(context.Background(), argv, &stdout, &stderr), exitUnavailable; got != want {
		t.Fatalf("exit %d, want %d (stderr %q)", got, want, stderr.String())
	}
	if !strings.Contains(stderr.String(), "unavailable") {
		t.Errorf("stderr = %q, want it to say the server is unavailable", stderr.String())
	}
}

func TestHelpTeaches(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if got := run(context.Background(), []string{"batchctl", "--help"}, &stdout, &stderr); got != 0 {
		t.Fatalf("exit %d", got)
	}
	for _, want := range []string{"Exit status:", "batchctl request 1/0", "disclose", "bill"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
