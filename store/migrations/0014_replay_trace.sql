-- 0014: what `batchd sim replay` needs beyond the tasks and copies already
-- kept: the scheduler configuration each server start ran with, and when
-- workers came and went with their slots. Times are Unix nanoseconds.
CREATE TABLE sched_runs (
	id         INTEGER PRIMARY KEY,
	started_at INTEGER NOT NULL,
	config     TEXT    NOT NULL -- JSON of sched.Config
);
CREATE TABLE worker_events (
	id          INTEGER PRIMARY KEY,
	at          INTEGER NOT NULL,
	worker      TEXT    NOT NULL,
	event       TEXT    NOT NULL CHECK (event IN ('up', 'down')),
	slots       INTEGER NOT NULL DEFAULT 0,
	can_suspend INTEGER NOT NULL DEFAULT 0,
	memory_mb   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX worker_events_at ON worker_events (at, id);
