// When the scheduler heard of a request, for the trace a replay runs.

package store

import (
	"context"
	"fmt"
	"time"

	"batchd/sched"
)

// RequestHeard is one request call the scheduler heard: the set and the
// stamp the call's tasks carry as their requested_at (a Request's
// RequestedAt, a requesting Disclose's DisclosedAt).
type RequestHeard struct {
	Set         sched.SetID
	RequestedAt time.Time
}

// recordHeard records that the scheduler heard each of heard at tx's time.
// A call recorded already keeps its first time.
func recordHeard(ctx context.Context, tx *Tx, heard []RequestHeard) error {
	at := nanos(tx.now)
	for _, h := range heard {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO request_heard (set_id, requested_at, heard_at) VALUES (?, ?, ?)`,
			h.Set, nanos(h.RequestedAt), at); err != nil {
			return fmt.Errorf("record a request heard: %w", err)
		}
	}
	return nil
}
