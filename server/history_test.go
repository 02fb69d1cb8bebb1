package server_test

import (
	"slices"
	"testing"

	batchv1 "batchd/proto/batch/v1"
	"batchd/server"
)

// GetHistory returns the samples the server took, oldest first: the
// cluster's queues, running copies, slots and requested tasks finished
// since the sample before, and a set's queued and running tasks and the
// tasks that came to need no more runs since the sample before. A set that ended gets a last sample with the
// rest of its tasks; the rings keep an hour, and an ended set's ring goes
// an hour after it ended.
func TestHistory(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(3), Request: true})).TaskSet
	c0 := w.start()
	b.srv.SampleHistory()

	b.clock.Advance(server.HistoryInterval)
	if _, err := w.finish(c0.CopyId, "", 0, 1); err != nil {
		t.Fatal(err)
	}
	c1 := w.start()
	b.srv.SampleHistory()

	b.clock.Advance(server.HistoryInterval)
	must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, All: true}))
	if m := w.next(); m.GetKill() != c1.CopyId {
		t.Fatalf("want the kill of copy %d, got %v", c1.CopyId, m)
	}
	if _, err := w.finish(c1.CopyId, "", 137, 1); err != nil {
		t.Fatal(err)
	}
	b.srv.SampleHistory()

	type row struct{ queued, running, done int64 }
	read := func(id int64) ([]row, *batchv1.GetHistoryResponse) {
		t.Helper()
		res := must[*batchv1.GetHistoryResponse](t)(b.cluster.GetHistory(ctx(t), &batchv1.GetHistoryRequest{SetId: id}))
		var rows []row
		for _, s := range res.Samples {
			rows = append(rows, row{s.QueuedRequested + s.QueuedDisclosed, s.Running, s.Done})
		}
		return rows, res
	}
	rows, res := read(set.Id)
	if want := []row{{2, 1, 0}, {1, 1, 1}, {0, 0, 2}}; !slices.Equal(rows, want) {
		t.Errorf("the set's history is %v, want %v", rows, want)
	}
	if res.IntervalSeconds != 10 || !res.Samples[1].At.AsTime().Equal(res.Samples[0].At.AsTime().Add(server.HistoryInterval)) {
		t.Errorf("interval %d s, samples at %v and %v", res.IntervalSeconds, res.Samples[0].At.AsTime(), res.Samples[1].At.AsTime())
	}
	rows, res = read(0)
	// The cluster's throughput counts requested tasks that finished: not the canceled ones.
	if want := []row{{2, 1, 0}, {1, 1, 1}, {0, 0, 0}}; !slices.Equal(rows, want) {
		t.Errorf("the cluster's history is %v, want %v", rows, want)
	}
	if s := res.Samples[0]; s.Slots != 1 || s.BusySlots != 1 {
		t.Errorf("the cluster's first sample has %d of %d slots busy, want 1 of 1", s.BusySlots, s.Slots)
	}

	// An hour and more later: the cluster keeps the last hour, the ended set's ring is gone.
	for range 400 {
		b.clock.Advance(server.HistoryInterval)
		b.srv.SampleHistory()
	}
	if rows, _ := read(0); len(rows) != 360 || rows[0] != (row{}) {
		t.Errorf("after 403 samples the cluster keeps %d, the oldest %v; want the last 360 (an hour), idle", len(rows), rows[0])
	}
	if rows, _ := read(set.Id); len(rows) != 0 {
		t.Errorf("an hour after the set ended its history still holds %d samples", len(rows))
	}
}
