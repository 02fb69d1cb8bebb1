package store

import (
	"context"
	"fmt"
	"os"
	"time"
)

// DefaultWALLimit is the size the WAL file is cut back to (SQLite's
// journal_size_limit) once its pages are all in the database: the writer
// truncates it when it starts the log over, and the checkpointer
// truncates it to nothing when it is past this size and no reader holds
// an older snapshot. Pages a long reader kept in use may take the file
// past it for as long as that reader lasts, never for good.
const DefaultWALLimit = 16 << 20

// truncateWait bounds how long a TRUNCATE checkpoint waits for the
// readers of the latest snapshot to end (SQLite's busy handler on the
// checkpointer's connection). It holds the write lock while it waits, so
// this is also the longest a write may wait behind it.
const truncateWait = 20 * time.Millisecond

// walLimitPragma sets the WAL's journal_size_limit on the writer's
// connection (the one that starts the log over after a full checkpoint).
func (db *DB) walLimitPragma(ctx context.Context) error {
	_, err := db.wconn.ExecContext(ctx, fmt.Sprintf("PRAGMA journal_size_limit = %d", db.WALLimit))
	return err
}

// WALFileBytes returns the size of the WAL file on disk (0 when there is
// none): the high-water mark of the log since it was last truncated,
// which the pages in use (CheckpointStats) do not show.
func (db *DB) WALFileBytes() int64 {
	st, err := os.Stat(db.Path + "-wal")
	if err != nil {
		return 0
	}
	return st.Size()
}

// FileBytes returns the size of the database file on disk, the WAL not
// included.
func (db *DB) FileBytes() int64 {
	st, err := os.Stat(db.Path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// TruncateStats returns how many TRUNCATE checkpoints cut the WAL file
// back and how many found readers that would not end within their wait.
func (db *DB) TruncateStats() (truncated, busy int64) {
	return db.truncates.Load(), db.truncBusy.Load()
}

// checkpointOnce copies what it can of the WAL into the database without
// waiting (PASSIVE). When that moved every page, so that no reader needs
// an older snapshot from the log, and the log's file is past the limit,
// it runs a TRUNCATE checkpoint, which waits at most truncateWait for the
// readers of the latest snapshot and then empties the file. all says
// that the log's pages are all in the database: the next commit would
// start it over (see startLogOver).
func (db *DB) checkpointOnce() (all bool, err error) {
	var busy, logPages, moved int
	if err := db.ck.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &moved); err != nil {
		return false, err
	}
	db.walPages.Store(int64(logPages))
	all = logPages > 0 && moved == logPages
	if logPages < 0 || moved < logPages || db.WALFileBytes() <= db.WALLimit {
		return all, nil
	}
	if err := db.ck.QueryRow("PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &moved); err != nil {
		return false, err
	}
	if busy != 0 {
		db.truncBusy.Add(1)
		return all, nil
	}
	db.walPages.Store(0)
	db.truncates.Add(1)
	return true, nil
}
