package store_test

import (
	"context"
	"testing"
	"time"

	"batchd/sched"
	"batchd/store"
)

// The trace carries GPUs as it carries slots and memory: each task's
// request, and each worker's offer, also after its goodbye (a
// registration with no slots and no GPUs).
func TestTraceCarriesGPUs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	for _, in := range []store.RegisterInput{{Worker: "gpu", Slots: 2, GPUs: 2}, {Worker: "cpu", Slots: 1}} {
		if _, err := db.RegisterWorker(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	tasks := echo(2)
	tasks[1].GPUs = 2
	if _, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: tasks, Request: true}); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(time.Second)
	if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "gpu", Stopping: true}); err != nil {
		t.Fatal(err)
	}
	tr, err := db.ExportTrace(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	gpus := map[sched.WorkerID]int32{}
	for _, w := range tr.Workers {
		gpus[w.ID] = w.GPUs
	}
	if gpus["gpu"] != 2 || gpus["cpu"] != 0 || len(gpus) != 2 {
		t.Errorf("trace workers' GPUs %v, want gpu 2 and cpu 0", gpus)
	}
	if len(tr.Sets) != 1 || len(tr.Sets[0].Tasks) != 2 || tr.Sets[0].Tasks[0].GPUs != 0 || tr.Sets[0].Tasks[1].GPUs != 2 {
		t.Errorf("trace tasks %+v, want GPUs 0 and 2", tr.Sets)
	}
}
