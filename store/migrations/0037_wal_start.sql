-- 0037: one row the checkpointer changes to start the WAL over while the
-- writer is idle (store/walstart.go), so that a request's commit after an
-- idle spell appends to the log instead of starting it over, which syncs
-- the log's new header inside that commit.
CREATE TABLE wal_start (n INTEGER NOT NULL);
INSERT INTO wal_start (n) VALUES (0);
