package store_test

import (
	"context"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// A token found valid is remembered, but a revocation made through another
// handle on the same database (another process: `batchd user revoke`
// beside a running server) takes effect on the very next check, for the
// revoked user only.
func TestAuthenticateAfterRevocationElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := setup(t)
	_, bob, err := db.AddUser(ctx, store.AddUserInput{Name: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	_, ann, err := db.AddUser(ctx, store.AddUserInput{Name: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	// A revocation before: the revocation file exists already.
	if _, _, err := db.AddUser(ctx, store.AddUserInput{Name: "cat"}); err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeUser(ctx, "cat"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, tok := range []string{bob, ann} {
			if _, err := db.Authenticate(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
	}
	other := store.NewDB(db.Path)
	if err := other.Open(); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.RevokeUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, bob); sched.ErrorCode(err) != sched.EUNAUTHENTICATED {
		t.Fatalf("bob after his revocation elsewhere: %v, want EUNAUTHENTICATED", err)
	}
	if u, err := db.Authenticate(ctx, ann); err != nil || u.Name != "ann" {
		t.Fatalf("ann: %v %v", u, err)
	}
	if _, err := db.Authenticate(ctx, "bd_unknown"); sched.ErrorCode(err) != sched.EUNAUTHENTICATED {
		t.Fatalf("unknown token: %v", err)
	}
}
