package store_test

import (
	"context"
	"testing"
	"time"

	"batchd/sched"
	"batchd/store"
)

// Weights: 1 by default, set at creation or later, kept; bad values and
// unknown users are errors with their codes.
func TestUserWeight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := setup(t)
	if _, _, err := db.AddUser(ctx, store.AddUserInput{Name: "ann"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.AddUser(ctx, store.AddUserInput{Name: "bob", Weight: 2.5}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.AddUser(ctx, store.AddUserInput{Name: "neg", Weight: -1}); sched.ErrorCode(err) != sched.EINVALID {
		t.Fatalf("negative weight: %v, want EINVALID", err)
	}
	u, err := db.SetUserWeight(ctx, "ann", 3)
	if err != nil || u.Weight != 3 {
		t.Fatalf("SetUserWeight = %+v, %v", u, err)
	}
	if _, err := db.SetUserWeight(ctx, "nobody", 1); sched.ErrorCode(err) != sched.ENOTFOUND {
		t.Fatalf("unknown user: %v, want ENOTFOUND", err)
	}
	if _, err := db.SetUserWeight(ctx, "ann", 0); sched.ErrorCode(err) != sched.EINVALID {
		t.Fatalf("weight 0: %v, want EINVALID", err)
	}
	us, err := db.ListUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, u := range us {
		got[u.Name] = u.Weight
	}
	if got["ann"] != 3 || got["bob"] != 2.5 {
		t.Fatalf("weights %v, want ann 3, bob 2.5", got)
	}
	if b, err := db.Usage(ctx, time.Unix(0, 0), time.Minute); err != nil || len(b) != 0 {
		t.Fatalf("Usage of an empty ledger = %v, %v", b, err)
	}
}
