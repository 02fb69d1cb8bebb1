package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"batchd/sched"
	"batchd/store"
)

func TestPilotToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	if _, _, err := db.AddUser(ctx, store.AddUserInput{Name: "pool", Role: store.RoleWorker}); err != nil {
		t.Fatal(err)
	}
	_, userTok, err := db.AddUser(ctx, store.AddUserInput{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	tok, expires, err := db.MintPilotToken(ctx, store.MintPilotTokenInput{Owner: "pool", Worker: "slurm-7", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, store.PilotTokenPrefix) || !expires.Equal(t0.Add(time.Hour)) {
		t.Fatalf("token %q expires %v", tok, expires)
	}

	t.Run("OK", func(t *testing.T) {
		u, err := db.Authenticate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := u, (store.User{Name: "pool", Role: store.RoleWorker, CreatedAt: t0, Worker: "slurm-7", ExpiresAt: expires}); got != want {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		// A user's token stays a user's: no pilot binding.
		u, err = db.Authenticate(ctx, userTok)
		if err != nil || u.Worker != "" || u.Role != store.RoleUser {
			t.Fatalf("user token: %+v %v", u, err)
		}
	})
	t.Run("ErrNotWorkerUser", func(t *testing.T) {
		_, _, err := db.MintPilotToken(ctx, store.MintPilotTokenInput{Owner: "alice", Worker: "slurm-8", TTL: time.Hour})
		code(t, err, sched.ENOTFOUND)
	})
	t.Run("ErrTTL", func(t *testing.T) {
		_, _, err := db.MintPilotToken(ctx, store.MintPilotTokenInput{Owner: "pool", Worker: "slurm-8", TTL: store.MaxPilotTokenTTL + time.Second})
		code(t, err, sched.EINVALID)
		_, _, err = db.MintPilotToken(ctx, store.MintPilotTokenInput{Owner: "pool", Worker: "", TTL: time.Hour})
		code(t, err, sched.EINVALID)
	})
	t.Run("ErrRevoked", func(t *testing.T) {
		other, _, err := db.MintPilotToken(ctx, store.MintPilotTokenInput{Owner: "pool", Worker: "slurm-9", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Authenticate(ctx, other); err != nil { // now in the cache
			t.Fatal(err)
		}
		// Another owner's revocation leaves it alone.
		if n, err := db.RevokePilotTokens(ctx, "alice", []sched.WorkerID{"slurm-9"}); err != nil || n != 0 {
			t.Fatalf("revoke by another owner: %d %v", n, err)
		}
		n, err := db.RevokePilotTokens(ctx, "pool", []sched.WorkerID{"slurm-9"})
		if err != nil || n != 1 {
			t.Fatalf("revoke: %d %v", n, err)
		}
		_, err = db.Authenticate(ctx, other)
		code(t, err, sched.EUNAUTHENTICATED)
		if _, err := db.Authenticate(ctx, tok); err != nil {
			t.Fatalf("another pilot's token was revoked too: %v", err)
		}
	})
	t.Run("ErrExpired", func(t *testing.T) {
		if _, err := db.Authenticate(ctx, tok); err != nil { // now in the cache
			t.Fatal(err)
		}
		*now = expires
		_, err := db.Authenticate(ctx, tok)
		code(t, err, sched.EUNAUTHENTICATED)
		*now = t0
	})
}
