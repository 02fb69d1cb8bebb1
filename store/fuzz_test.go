package store_test

import (
	"context"
	"math"
	"strconv"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// FuzzDiscloseHash drives the idempotency path of the store: the content
// hash ignores the environment's order, a retry with the same content
// replays the first answer and one with other content is ECONFLICT. No
// input makes the store fail with an uncoded error.
func FuzzDiscloseHash(f *testing.F) {
	db := store.NewDB(f.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	f.Add("n", "echo", "x", "A", "b", 1.5, false, int64(0))
	f.Add("", "", "", "", "", math.Copysign(0, -1), true, int64(1)) // negative zero
	f.Add("\x00", "a\x00b", "\xff", "K", "", 1e300, false, int64(-1))
	n := 0
	f.Fuzz(func(t *testing.T, name, a0, a1, k, v string, est float64, request bool, set int64) {
		if math.IsNaN(est) || math.IsInf(est, 0) {
			return // the server refuses them before the store (and JSON cannot hold them)
		}
		ctx := context.Background()
		n++
		spec := sched.TaskSpec{Argv: []string{a0, a1}, Env: map[string]string{k: v, k + "2": v + "2"}, EstimateSeconds: est}
		in := store.DiscloseInput{Owner: "u", SetID: sched.SetID(set), Name: name, Tasks: []sched.TaskSpec{spec, spec},
			IdempotencyKey: "k" + strconv.Itoa(n), Request: request}
		same := in
		same.Tasks = []sched.TaskSpec{spec, {Argv: []string{a0, a1}, Env: map[string]string{k + "2": v + "2", k: v}, EstimateSeconds: est}}
		if in.Hash() != same.Hash() {
			t.Fatal("equal content hashes differently")
		}
		first, err := db.Disclose(ctx, in)
		if err != nil {
			if sched.ErrorCode(err) == sched.EINTERNAL {
				t.Fatalf("uncoded error: %v", err)
			}
			return
		}
		again, err := db.Disclose(ctx, same)
		if err != nil || !again.Replayed || again.Set.ID != first.Set.ID || again.FirstIndex != first.FirstIndex || again.Count != 2 {
			t.Fatalf("retry: %+v, %v; first %+v", again, err, first)
		}
		other := in
		other.Tasks = in.Tasks[:1]
		if _, err := db.Disclose(ctx, other); sched.ErrorCode(err) != sched.ECONFLICT {
			t.Fatalf("other content: %v, want ECONFLICT", err)
		}
	})
}
