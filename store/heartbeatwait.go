// A heartbeat's write, timed: the server answers a worker's heartbeat
// without waiting for its write (server/heartbeat_write.go) and keeps
// the write's phases in its metrics, so that a slow one says where its
// time went.

package store

import (
	"context"
	"time"

	"batchd/sched"
)

// HeartbeatWrite is Heartbeat for a heartbeat heard at heard (the copies
// started after it are not missing from it), timed: res.WriterWait is how long it
// waited for the writer (passing a staged disclose's queued chunks like
// every write, writegate.go) and res.Tx how its transaction's time went.
// When the writer is not free at once (busy, or a chunk queued for it),
// it calls busy, if set, before it waits. Errors as Heartbeat's.
func (db *DB) HeartbeatWrite(ctx context.Context, w sched.WorkerID, heard time.Time, copies []CopyProgress, busy func()) (res HeartbeatResult, err error) {
	if err := ctx.Err(); err != nil {
		return res, err
	}
	began := time.Now()
	var unlock func()
	if db.gate.TryRLock() {
		if db.wmu.TryLock() {
			unlock = func() {
				db.wmu.Unlock()
				db.gate.RUnlock()
			}
		} else {
			db.gate.RUnlock()
		}
	}
	if unlock == nil {
		if busy != nil {
			busy()
		}
		unlock = db.lockWriter()
	}
	defer unlock()
	res.WriterWait = time.Since(began)
	err = db.writeHeld(ctx, func(tx *Tx) error {
		if f := db.HeartbeatHeldFunc; f != nil {
			f(w, copies)
		}
		return heartbeatTx(ctx, tx, w, heard, copies, &res)
	})
	res.Tx = db.lastTx
	return res, err
}

// TxTimes is how a write transaction's time went, for the metrics of
// the writes that must not wait (a worker's heartbeat).
type TxTimes struct {
	// Begin is BEGIN IMMEDIATE's: SQLite's write lock, which the
	// checkpointer takes too while it truncates the WAL.
	Begin time.Duration
	// Statements is the transaction's own statements'.
	Statements time.Duration
	// Commit is COMMIT's: the WAL's append (and its sync, if any).
	Commit time.Duration
}
