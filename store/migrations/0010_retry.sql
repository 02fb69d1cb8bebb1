-- 0010: retries in place. A task keeps its set and index and runs again as
-- a new attempt (1, 2, ...). The tasks row always describes the current
-- attempt; when a task is retried, the row of the attempt that ended is
-- copied into task_attempts and its output into attempt_outputs, so that
-- earlier attempts stay listable and readable. Copies and bill lines name
-- the attempt they belong to: the ledger's one charge is now one charge per
-- attempt (a retried requested task is billed once per requested attempt).
-- A set keeps its retry policy (--retries, --retry-on); auto_retries counts
-- the retries the policy has spent on a task.

ALTER TABLE tasks ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
ALTER TABLE tasks ADD COLUMN auto_retries INTEGER NOT NULL DEFAULT 0;

-- What each copy ended with (the winner's is also the task's): exit code,
-- the signal that ended it (0: none), whether it timed out.
ALTER TABLE copies ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
ALTER TABLE copies ADD COLUMN exit_code INTEGER NOT NULL DEFAULT 0;
ALTER TABLE copies ADD COLUMN signal INTEGER NOT NULL DEFAULT 0;
ALTER TABLE copies ADD COLUMN timed_out INTEGER NOT NULL DEFAULT 0;

ALTER TABLE task_sets ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN retry_on TEXT NOT NULL DEFAULT '';

-- ALTER TABLE ... ADD COLUMN rewrites no row, so the append-only triggers
-- do not fire; dropping and creating an index touches no row either.
ALTER TABLE bill_lines ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
DROP INDEX bill_lines_one_charge;
CREATE UNIQUE INDEX bill_lines_one_charge ON bill_lines (set_id, idx, attempt) WHERE kind = 'charge';

CREATE TABLE task_attempts (
	set_id           INTEGER NOT NULL,
	idx              INTEGER NOT NULL,
	attempt          INTEGER NOT NULL,
	-- how the attempt ended: executed, finished or canceled, or lost (its
	-- copy was lost with a worker and the policy retries on lost)
	state            TEXT    NOT NULL CHECK (state IN ('executed', 'finished', 'canceled', 'lost')),
	requested_at     INTEGER NOT NULL DEFAULT 0,
	executed_at      INTEGER NOT NULL DEFAULT 0,
	finished_at      INTEGER NOT NULL DEFAULT 0,
	canceled_at      INTEGER NOT NULL DEFAULT 0,
	win_copy         INTEGER NOT NULL DEFAULT 0,
	exit_code        INTEGER NOT NULL DEFAULT 0,
	timed_out        INTEGER NOT NULL DEFAULT 0,
	service_seconds  REAL    NOT NULL DEFAULT 0,
	visible_response REAL    NOT NULL DEFAULT 0,
	retried_at       INTEGER NOT NULL,
	retried_by       TEXT    NOT NULL CHECK (retried_by IN ('user', 'policy')),
	PRIMARY KEY (set_id, idx, attempt),
	FOREIGN KEY (set_id, idx) REFERENCES tasks (set_id, idx)
) WITHOUT ROWID;

CREATE TABLE attempt_outputs (
	set_id                INTEGER NOT NULL,
	idx                   INTEGER NOT NULL,
	attempt               INTEGER NOT NULL,
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
	PRIMARY KEY (set_id, idx, attempt),
	FOREIGN KEY (set_id, idx) REFERENCES tasks (set_id, idx)
);
