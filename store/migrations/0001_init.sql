-- 0001: task sets, tasks, copies, outputs, workers, idempotency keys and the
-- billing ledger. Times are Unix nanoseconds (0 = not yet).

CREATE TABLE task_sets (
	id         INTEGER PRIMARY KEY,
	owner      TEXT    NOT NULL,
	name       TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	ntasks     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX task_sets_owner ON task_sets (owner, id);

CREATE TABLE tasks (
	set_id           INTEGER NOT NULL REFERENCES task_sets (id),
	idx              INTEGER NOT NULL,
	spec             TEXT    NOT NULL, -- JSON of sched.TaskSpec
	estimate         REAL    NOT NULL DEFAULT 0,
	no_speculation   INTEGER NOT NULL DEFAULT 0,
	deadline         REAL    NOT NULL DEFAULT 0,
	state            TEXT    NOT NULL CHECK (state IN ('disclosed', 'executed', 'requested', 'finished', 'canceled')),
	disclosed_at     INTEGER NOT NULL,
	requested_at     INTEGER NOT NULL DEFAULT 0,
	executed_at      INTEGER NOT NULL DEFAULT 0,
	finished_at      INTEGER NOT NULL DEFAULT 0,
	canceled_at      INTEGER NOT NULL DEFAULT 0,
	win_copy         INTEGER NOT NULL DEFAULT 0,
	exit_code        INTEGER NOT NULL DEFAULT 0,
	timed_out        INTEGER NOT NULL DEFAULT 0,
	service_seconds  REAL    NOT NULL DEFAULT 0,
	visible_response REAL    NOT NULL DEFAULT 0,
	PRIMARY KEY (set_id, idx)
) WITHOUT ROWID;
-- Non-final tasks are reloaded into the scheduler at start.
CREATE INDEX tasks_open ON tasks (state) WHERE state IN ('disclosed', 'executed', 'requested');
-- Covers the per-set counts by state without reading the wide rows.
CREATE INDEX tasks_set_state ON tasks (set_id, state);

CREATE TABLE copies (
	id          INTEGER PRIMARY KEY,
	set_id      INTEGER NOT NULL,
	idx         INTEGER NOT NULL,
	worker      TEXT    NOT NULL,
	slot        INTEGER NOT NULL,
	speculative INTEGER NOT NULL DEFAULT 0,
	state       TEXT    NOT NULL CHECK (state IN ('running', 'suspended', 'won', 'killed', 'lost')),
	started_at  INTEGER NOT NULL,
	ended_at    INTEGER NOT NULL DEFAULT 0,
	progress    REAL    NOT NULL DEFAULT -1,
	cpu_seconds REAL    NOT NULL DEFAULT 0,
	run_seconds REAL    NOT NULL DEFAULT 0,
	-- outcome is the answer given to the worker's ReportFinished ('' until
	-- then), so that a replay gets the same answer.
	outcome     TEXT    NOT NULL DEFAULT '',
	FOREIGN KEY (set_id, idx) REFERENCES tasks (set_id, idx)
);
CREATE INDEX copies_task ON copies (set_id, idx);
CREATE INDEX copies_live ON copies (worker) WHERE state IN ('running', 'suspended');
-- Counts a set's running tasks without reading its ended copies.
CREATE INDEX copies_live_task ON copies (set_id, idx) WHERE state IN ('running', 'suspended');

CREATE TABLE outputs (
	set_id           INTEGER NOT NULL,
	idx              INTEGER NOT NULL,
	copy_id          INTEGER NOT NULL REFERENCES copies (id),
	worker           TEXT    NOT NULL,
	stdout           BLOB    NOT NULL,
	stderr           BLOB    NOT NULL,
	stdout_truncated INTEGER NOT NULL DEFAULT 0,
	stderr_truncated INTEGER NOT NULL DEFAULT 0,
	exit_code        INTEGER NOT NULL,
	timed_out        INTEGER NOT NULL DEFAULT 0,
	cpu_seconds      REAL    NOT NULL DEFAULT 0,
	slot_seconds     REAL    NOT NULL DEFAULT 0,
	PRIMARY KEY (set_id, idx),
	FOREIGN KEY (set_id, idx) REFERENCES tasks (set_id, idx)
);

CREATE TABLE workers (
	id             TEXT PRIMARY KEY,
	hostname       TEXT    NOT NULL DEFAULT '',
	slots          INTEGER NOT NULL,
	can_suspend    INTEGER NOT NULL DEFAULT 0,
	state          TEXT    NOT NULL,
	last_heartbeat INTEGER NOT NULL,
	registered_at  INTEGER NOT NULL,
	version        TEXT    NOT NULL DEFAULT ''
);

CREATE TABLE idempotency_keys (
	owner       TEXT    NOT NULL,
	key         TEXT    NOT NULL,
	set_id      INTEGER NOT NULL REFERENCES task_sets (id),
	first_index INTEGER NOT NULL,
	count       INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (owner, key)
) WITHOUT ROWID;

-- bill_lines is the append-only ledger: one line per requested task, ever.
CREATE TABLE bill_lines (
	id           INTEGER PRIMARY KEY,
	owner        TEXT    NOT NULL,
	set_id       INTEGER NOT NULL REFERENCES task_sets (id),
	idx          INTEGER NOT NULL,
	set_name     TEXT    NOT NULL DEFAULT '',
	copy_id      INTEGER NOT NULL DEFAULT 0,
	slot_seconds REAL    NOT NULL,
	cpu_seconds  REAL    NOT NULL,
	billed_at    INTEGER NOT NULL,
	reason       TEXT    NOT NULL CHECK (reason IN ('finished', 'executed-then-requested', 'canceled-after-request')),
	UNIQUE (set_id, idx)
);
CREATE INDEX bill_lines_owner ON bill_lines (owner, billed_at);
CREATE TRIGGER bill_lines_no_update BEFORE UPDATE ON bill_lines
BEGIN
	SELECT RAISE(ABORT, 'bill_lines is an append-only ledger');
END;
CREATE TRIGGER bill_lines_no_delete BEFORE DELETE ON bill_lines
BEGIN
	SELECT RAISE(ABORT, 'bill_lines is an append-only ledger');
END;
