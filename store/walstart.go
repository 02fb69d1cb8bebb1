package store

import "context"

// startLogOver starts the WAL over once a checkpoint copied all of it
// into the database, if the writer is idle, by a one-row write of its
// own. The first commit after a full checkpoint starts the log over,
// and SQLite syncs the log's new header inside that commit (an fsync,
// 0.5 ms on an idle disk and tens of ms on a busy one): on an idle
// server that commit is a request's, on its way to its copy's start.
// After this write the log holds a frame no checkpoint copied yet, so
// the request's commit appends to it instead. The log starts over as
// often as before, each time a checkpoint copied it all; only the
// commit that pays for it changes.
//
// It takes neither the writer nor the gate when either is held (a
// commit under way will start the log over itself), and it does not
// wake the checkpointer: its frame is copied with the next commit's.
func (db *DB) startLogOver() {
	if !db.gate.TryRLock() {
		return
	}
	defer db.gate.RUnlock()
	if !db.wmu.TryLock() {
		return
	}
	defer db.wmu.Unlock()
	if db.wconn == nil || len(db.committed) > 0 {
		return
	}
	ctx := context.Background()
	if _, err := db.wconn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		db.dropWriteConn()
		return
	}
	if _, err := db.wconn.ExecContext(ctx, "UPDATE wal_start SET n = n + 1"); err != nil {
		if _, rerr := db.wconn.ExecContext(ctx, "ROLLBACK"); rerr != nil {
			db.dropWriteConn()
		}
		return
	}
	if _, err := db.wconn.ExecContext(ctx, "COMMIT"); err != nil {
		if _, rerr := db.wconn.ExecContext(ctx, "ROLLBACK"); rerr != nil {
			db.dropWriteConn()
		}
		return
	}
	db.logStarts.Add(1)
}
