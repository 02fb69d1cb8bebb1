-- 0021: stop rules and holds.
--
-- A set's stop rule (sched.StopRule): it fires on a task's result in the
-- transaction that records the result, cancels the set's work that still
-- needs a run, and records which task fired it (stopped_idx, -1: none
-- fired). successes counts the set's successful results, kept only while
-- the rule counts them (stop_after > 0 and not yet fired).
ALTER TABLE task_sets ADD COLUMN stop_on_success INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN stop_on_exit TEXT NOT NULL DEFAULT '';
ALTER TABLE task_sets ADD COLUMN stop_on_output TEXT NOT NULL DEFAULT '';
ALTER TABLE task_sets ADD COLUMN stop_after INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN successes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN stopped_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN stopped_idx INTEGER NOT NULL DEFAULT -1;
ALTER TABLE task_sets ADD COLUMN stopped_attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN stopped_why TEXT NOT NULL DEFAULT '';
ALTER TABLE task_sets ADD COLUMN stopped_canceled INTEGER NOT NULL DEFAULT 0;

-- A timeout that replaces the tasks' own for copies started from now on
-- (batchctl update --timeout; 0: each task's own).
ALTER TABLE task_sets ADD COLUMN timeout_seconds REAL NOT NULL DEFAULT 0;

-- A held task starts no copy until released; the partial index holds the
-- held ones only, so counting a set's held tasks costs what it holds.
ALTER TABLE tasks ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tasks_held ON tasks (set_id, idx) WHERE held = 1;
