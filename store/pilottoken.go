package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"batchd/sched"
)

// This file is the tokens an elastic pool mints for its pilots, one per
// pilot (migration 0017). A pilot token authenticates as its pool's worker
// user, with User.Worker naming the one worker it may speak for; the
// server lets it register that name and nothing else. It lives until
// ExpiresAt or until the pool reports its pilot ended (RevokePilotTokens).

// PilotTokenPrefix starts every pilot token, so that a leaked one is easy
// to tell from a user's.
const PilotTokenPrefix = "bdp_"

// MaxPilotTokenTTL bounds how long a pilot token may live.
const MaxPilotTokenTTL = 30 * 24 * time.Hour

// MintPilotTokenInput names the pilot a token is for.
type MintPilotTokenInput struct {
	// Owner is the pool's worker user; the token authenticates as it.
	Owner string
	// Worker is the only worker name the token may register.
	Worker sched.WorkerID
	// TTL is how long the token lives (at most MaxPilotTokenTTL).
	TTL time.Duration
}

// MintPilotToken mints a token for one pilot and returns it (shown only
// now; the store keeps its hash) with its expiry. Errors: EINVALID (empty
// worker name, a TTL out of range), ENOTFOUND (no live worker user
// Owner).
func (db *DB) MintPilotToken(ctx context.Context, in MintPilotTokenInput) (string, time.Time, error) {
	if in.Worker == "" || len(in.Worker) > 200 {
		return "", time.Time{}, sched.Errorf(sched.EINVALID, "a pilot's worker name must have 1 to 200 bytes")
	}
	if in.TTL <= 0 || in.TTL > MaxPilotTokenTTL {
		return "", time.Time{}, sched.Errorf(sched.EINVALID, "a pilot token lives more than 0 s and at most %s", MaxPilotTokenTTL)
	}
	tok, err := NewToken()
	if err != nil {
		return "", time.Time{}, err
	}
	token := PilotTokenPrefix + strings.TrimPrefix(tok, TokenPrefix)
	var expires time.Time
	err = db.write(ctx, func(tx *Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE name = ? AND role = ? AND revoked_at = 0`, in.Owner, RoleWorker).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return sched.Errorf(sched.ENOTFOUND, "no live worker user %q", in.Owner)
		}
		expires = tx.now.Add(in.TTL)
		// Tokens that ended a day ago are of no use even to an audit.
		if _, err := tx.ExecContext(ctx, `DELETE FROM pilot_tokens WHERE expires_at < ? OR (revoked_at > 0 AND revoked_at < ?)`,
			nanos(tx.now.Add(-24*time.Hour)), nanos(tx.now.Add(-24*time.Hour))); err != nil {
			return fmt.Errorf("forget old pilot tokens: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO pilot_tokens (hash, owner, worker, prefix, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
			HashToken(token), in.Owner, in.Worker, token[:len(PilotTokenPrefix)+4], nanos(tx.now), nanos(expires)); err != nil {
			return fmt.Errorf("add pilot token: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return token, expires, nil
}

// RevokePilotTokens revokes the live tokens minted by owner for these
// workers (their pilots ended) and returns how many it revoked; their next
// call fails.
func (db *DB) RevokePilotTokens(ctx context.Context, owner string, workers []sched.WorkerID) (int, error) {
	if len(workers) == 0 {
		return 0, nil
	}
	var n int64
	err := db.write(ctx, func(tx *Tx) error {
		for _, w := range workers {
			r, err := tx.ExecContext(ctx, `UPDATE pilot_tokens SET revoked_at = ? WHERE owner = ? AND worker = ? AND revoked_at = 0`,
				nanos(tx.now), owner, w)
			if err != nil {
				return fmt.Errorf("revoke pilot token: %w", err)
			}
			k, _ := r.RowsAffected()
			n += k
		}
		return nil
	})
	if err != nil || n == 0 {
		return 0, err
	}
	return int(n), db.revoked(nil)
}

// authenticatePilot reads the pilot token with this hash: live, not
// expired, its pool's worker user live. Errors: EUNAUTHENTICATED.
func authenticatePilot(ctx context.Context, tx *Tx, hash string) (User, error) {
	var (
		u           User
		at, expires int64
	)
	err := tx.QueryRowContext(ctx, `SELECT u.name, u.role, u.created_at, p.worker, p.expires_at FROM pilot_tokens p JOIN users u ON u.name = p.owner
		WHERE p.hash = ? AND p.revoked_at = 0 AND p.expires_at > ? AND u.revoked_at = 0 AND u.role = ?`, hash, nanos(tx.now), RoleWorker).
		Scan(&u.Name, &u.Role, &at, &u.Worker, &expires)
	if err == sql.ErrNoRows {
		return User{}, sched.Errorf(sched.EUNAUTHENTICATED, "unknown, expired or revoked token")
	}
	if err != nil {
		return User{}, err
	}
	u.CreatedAt, u.ExpiresAt = fromNanos(at), fromNanos(expires)
	return u, nil
}
