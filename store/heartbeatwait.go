// A heartbeat's bounded wait for the writer: a worker's heartbeat that
// finds the single writer busy (a large disclose's chunks, one after
// another) for longer than its bound writes nothing and leaves its
// progress to the next heartbeat, which carries all its copies' progress
// again, rather than wait its turn behind API writes.

package store

import (
	"context"
	"sync"
	"time"

	"batchd/sched"
)

// HeartbeatWithin is Heartbeat with a bounded wait for the writer: when
// the writer does not come free within d (0: try once), or a staged
// disclose's chunk is queued for it, it writes nothing and returns
// res.Deferred. res.WriterWait is how long it waited.
// Errors as Heartbeat's.
func (db *DB) HeartbeatWithin(ctx context.Context, d time.Duration, w sched.WorkerID, copies []CopyProgress) (res HeartbeatResult, err error) {
	if err := ctx.Err(); err != nil {
		return res, err
	}
	// A staged disclose's chunk that holds the gate waits for the writer
	// and then holds it for thousands of rows (writegate.go): no wait of
	// ours would see the writer free. Wait only while no chunk is queued,
	// and keep queued chunks out meanwhile: on a loaded machine each of
	// the wait's sleeps may take a hundred milliseconds and more.
	if !db.gate.TryRLock() {
		res.Deferred = true
		return res, nil
	}
	defer db.gate.RUnlock()
	began := time.Now()
	got := tryLockWithin(&db.wmu, d)
	res.WriterWait = time.Since(began)
	if !got {
		res.Deferred = true
		return res, nil
	}
	defer db.wmu.Unlock()
	err = db.writeHeld(ctx, func(tx *Tx) error {
		if f := db.HeartbeatHeldFunc; f != nil {
			f(w)
		}
		return heartbeatTx(ctx, tx, w, copies, &res)
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

// tryLockWithin takes m if it comes within d, and says whether it did. It
// tries now and then rather than queue, so it never holds up whoever
// takes m next.
func tryLockWithin(m *sync.Mutex, d time.Duration) bool {
	if m.TryLock() {
		return true
	}
	deadline := time.Now().Add(d)
	for wait := 50 * time.Microsecond; time.Now().Before(deadline); wait = min(2*wait, 2*time.Millisecond) {
		time.Sleep(min(wait, time.Until(deadline)))
		if m.TryLock() {
			return true
		}
	}
	return false
}
