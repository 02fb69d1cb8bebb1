// The writer's gate: every write passes a staged disclose's queued
// chunks. The store has one writer, and a chunk holds it for thousands
// of rows. Without the gate, a worker's report of a copy's end (or a
// dispatch decision) that came while the chunks of eight concurrent
// discloses queued for the writer waited for all eight; with it, it
// waits for at most two: the chunk writing, and the one that passed the
// gate before the report came.
//
// A chunk passes the gate alone (Lock) and holds it only until it has
// the writer; every other write holds it shared (RLock) while it waits
// for the writer and writes. A chunk that waits at the gate holds back
// writes that come after it (sync.RWMutex lets no new reader in while a
// writer waits), so chunks are not starved either: they take turns with
// the writes queued between them.

package store

import "context"

// lockWriter takes the writer for a write that is not a chunk, and
// returns what gives it back.
func (db *DB) lockWriter() (unlock func()) {
	db.waiting.Add(1)
	db.gate.RLock()
	db.wmu.Lock()
	db.waiting.Add(-1)
	return func() {
		db.wmu.Unlock()
		db.gate.RUnlock()
	}
}

// writeChunk is write for one chunk of a staged disclose: it lets every
// write queued at the gate go first (see above).
func (db *DB) writeChunk(ctx context.Context, fn func(tx *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	db.waiting.Add(1)
	db.gate.Lock()
	db.wmu.Lock()
	db.gate.Unlock()
	db.waiting.Add(-1)
	defer db.wmu.Unlock()
	return db.writeHeld(ctx, fn)
}

// writesWaiting is how many writes wait for the writer now (a heartbeat's
// bounded wait not counted).
func (db *DB) writesWaiting() int64 { return db.waiting.Load() }
