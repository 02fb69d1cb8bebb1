-- 0028: fewer B-trees written per finished task. outputs was a rowid table
-- with its primary key in an index of its own: two B-tree inserts a row.
-- WITHOUT ROWID keeps each row in its key's B-tree, one insert. A big
-- output's bytes go to overflow pages either way. The table is rebuilt
-- and its rows carried over.
CREATE TABLE outputs_new (
	set_id                INTEGER NOT NULL,
	idx                   INTEGER NOT NULL,
	copy_id               INTEGER NOT NULL REFERENCES copies (id),
	worker                TEXT    NOT NULL,
	stdout                BLOB    NOT NULL,
	stderr                BLOB    NOT NULL,
	stdout_truncated      INTEGER NOT NULL DEFAULT 0,
	stderr_truncated      INTEGER NOT NULL DEFAULT 0,
	exit_code             INTEGER NOT NULL,
	timed_out             INTEGER NOT NULL DEFAULT 0,
	cpu_seconds           REAL    NOT NULL DEFAULT 0,
	slot_seconds          REAL    NOT NULL DEFAULT 0,
	reported_slot_seconds REAL,
	PRIMARY KEY (set_id, idx),
	FOREIGN KEY (set_id, idx) REFERENCES tasks (set_id, idx)
) WITHOUT ROWID;
INSERT INTO outputs_new (set_id, idx, copy_id, worker, stdout, stderr, stdout_truncated, stderr_truncated, exit_code, timed_out,
	cpu_seconds, slot_seconds, reported_slot_seconds)
	SELECT set_id, idx, copy_id, worker, stdout, stderr, stdout_truncated, stderr_truncated, exit_code, timed_out,
	cpu_seconds, slot_seconds, reported_slot_seconds FROM outputs;
DROP TABLE outputs;
ALTER TABLE outputs_new RENAME TO outputs;
