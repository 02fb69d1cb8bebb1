// Fair share: users' weights and the usage the scheduler restores from the
// ledger after a restart.

package store

import (
	"context"
	"fmt"
	"math"
	"time"

	"batchd/sched"
)

// SetUserWeight sets a user's fair-share weight. Errors: EINVALID (not a
// positive number), ENOTFOUND (no such user).
func (db *DB) SetUserWeight(ctx context.Context, name string, weight float64) (User, error) {
	if !(weight > 0) || math.IsInf(weight, 0) {
		return User{}, sched.Errorf(sched.EINVALID, "weight %v must be a positive number", weight)
	}
	err := db.write(ctx, func(tx *Tx) error {
		r, err := tx.ExecContext(ctx, `UPDATE users SET weight = ? WHERE name = ?`, weight, name)
		if err != nil {
			return fmt.Errorf("set weight: %w", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return sched.Errorf(sched.ENOTFOUND, "no user %q", name)
		}
		return nil
	})
	if err != nil {
		return User{}, err
	}
	us, err := db.ListUsers(ctx)
	if err != nil {
		return User{}, err
	}
	for _, u := range us {
		if u.Name == name {
			return u, nil
		}
	}
	return User{}, sched.Errorf(sched.ENOTFOUND, "no user %q", name)
}

// UsageBucket is the billed slot-seconds of one owner in one time bucket.
type UsageBucket struct {
	Owner       string
	SlotSeconds float64
	// At is the middle of the bills' times in the bucket.
	At time.Time
}

// Usage sums the ledger's slot-seconds per owner since since, in buckets of
// width: the scheduler's decayed usage after a restart. Decaying a bucket
// from its middle instead of from each line's own time errs by at most a
// factor 2^(width/2/half-life) either way.
func (db *DB) Usage(ctx context.Context, since time.Time, width time.Duration) ([]UsageBucket, error) {
	w := max(int64(width), 1)
	var out []UsageBucket
	err := db.read(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT owner, SUM(slot_seconds), MIN(billed_at), MAX(billed_at)
			FROM bill_lines WHERE billed_at >= ? GROUP BY owner, billed_at / ? ORDER BY owner, MIN(billed_at)`, nanos(since), w)
		if err != nil {
			return fmt.Errorf("usage: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				b      UsageBucket
				lo, hi int64
			)
			if err := rows.Scan(&b.Owner, &b.SlotSeconds, &lo, &hi); err != nil {
				return err
			}
			b.At = fromNanos(lo + (hi-lo)/2)
			out = append(out, b)
		}
		return rows.Err()
	})
	return out, err
}
