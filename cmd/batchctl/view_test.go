package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"batchd/sched"
)

// TestJSONShapeStable pins the --json field names of a task: scripts depend
// on them, so a rename must fail here first (fields are only added).
func TestJSONShapeStable(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	task := sched.Task{
		Set: 3, Index: 1, State: sched.TaskFinished,
		Spec:        sched.TaskSpec{Argv: []string{"echo", "hi"}, EstimateSeconds: 2},
		DisclosedAt: at, RequestedAt: at, ExecutedAt: at.Add(time.Second), FinishedAt: at.Add(time.Second),
		VisibleResponseSeconds: 1, ServiceSeconds: 1, Progress: -1, Attempt: 1,
		Copies: []sched.Copy{{ID: 9, Slot: sched.SlotRef{Worker: "w", Slot: 0}, State: sched.CopyWon, StartedAt: at, EndedAt: at.Add(time.Second), Progress: -1, Attempt: 1}},
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, viewTask(task)); err != nil {
		t.Fatal(err)
	}
	want := `{
  "set": 3,
  "index": 1,
  "state": "finished",
  "spec": {
    "argv": [
      "echo",
      "hi"
    ],
    "estimate_seconds": 2
  },
  "disclosed_at": "2026-11-22T10:00:00Z",
  "requested_at": "2026-11-22T10:00:00Z",
  "executed_at": "2026-11-22T10:00:01Z",
  "finished_at": "2026-11-22T10:00:01Z",
  "visible_response_seconds": 1,
  "service_seconds": 1,
  "exit_code": 0,
  "timed_out": false,
  "progress": -1,
  "attempt": 1,
  "copies": [
    {
      "id": 9,
      "worker": "w",
      "slot": 0,
      "speculative": false,
      "state": "won",
      "started_at": "2026-11-22T10:00:00Z",
      "ended_at": "2026-11-22T10:00:01Z",
      "progress": -1,
      "attempt": 1,
      "exit_code": 0,
      "signal": 0,
      "timed_out": false,
      "cpu_seconds": 0,
      "run_seconds": 0
    }
  ]
}`
	if got := strings.TrimSpace(buf.String()); got != want {
		t.Errorf("task JSON =\n%s\nwant\n%s", got, want)
	}
}
