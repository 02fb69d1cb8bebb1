package client_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"batchd/client"
	"batchd/sched"
)

// TestFollowOutputResumes: a follow stream cut after the first line is
// resumed from the copy and offset received, so that every byte comes
// once, and ends with the task. (The resumed stream reads the copy's live
// output or, once the task has ended, its stored output: either way from
// the offset. The task cannot wait for a file of the test's: its worker
// may run it as another uid.)
func TestFollowOutputResumes(t *testing.T) {
	t.Parallel()
	url := startServer(t, 1)
	cut := &cutTransport{path: "/FollowOutput"}
	c := client.New(client.Config{Server: url, HTTPClient: authed(&http.Client{Transport: cut}, url),
		RetryFor: time.Minute, SleepFunc: func(context.Context, time.Duration) error { return nil }})
	d, err := c.Disclose(t.Context(), client.DiscloseInput{Request: true, Tasks: []sched.TaskSpec{{NoSpeculation: true,
		Argv: []string{"sh", "-c", `echo one; sleep 1; echo two`}}}})
	if err != nil {
		t.Fatal(err)
	}
	var (
		chunks []client.OutputChunk
		out    []byte
	)
	err = c.FollowOutput(t.Context(), sched.TaskRef{Set: d.Set.ID}, client.FollowFrom{}, func(ch client.OutputChunk) error {
		if len(ch.Stdout) == 0 && !ch.Ended {
			return nil
		}
		if ch.StdoutOffset != int64(len(out)) {
			t.Errorf("chunk at offset %d after %d bytes", ch.StdoutOffset, len(out))
		}
		chunks = append(chunks, ch)
		out = append(out, ch.Stdout...)
		if string(out) == "one\n" {
			if n := cut.cutAll(); n != 1 {
				t.Errorf("%d streams before the cut, want 1", n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "one\ntwo\n" {
		t.Fatalf("followed %q, want one and two once each", out)
	}
	last := chunks[len(chunks)-1]
	if !last.Ended || last.State != sched.TaskFinished || last.Switched {
		t.Fatalf("last chunk %+v, want the end of a finished task", last)
	}
	cut.mu.Lock()
	defer cut.mu.Unlock()
	if len(cut.streams) < 2 {
		t.Fatalf("%d streams, want the resumed one too", len(cut.streams))
	}
}
