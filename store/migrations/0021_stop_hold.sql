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

-- A stop rule cancels the rest of a set, up to every task of it, in the
-- transaction of the result that fires it. tasks_count_update (0006) kept
-- the set's counts one row at a time: two thirds of the time of a
-- 10,000-task cancel. While count_pause.paused is 1 the trigger stands
-- aside, and the statement that changed the rows adjusts the counts
-- once; only such a bulk statement sets it, and resets it in the same
-- transaction (a rollback resets it too).
CREATE TABLE count_pause (paused INTEGER NOT NULL);
INSERT INTO count_pause VALUES (0);
DROP TRIGGER tasks_count_update;
CREATE TRIGGER tasks_count_update AFTER UPDATE OF state, visible_response ON tasks
WHEN (SELECT paused FROM count_pause) = 0
BEGIN
	UPDATE task_sets SET
		n_disclosed = n_disclosed - (OLD.state = 'disclosed') + (NEW.state = 'disclosed'),
		n_executed = n_executed - (OLD.state = 'executed') + (NEW.state = 'executed'),
		n_requested = n_requested - (OLD.state = 'requested') + (NEW.state = 'requested'),
		n_finished = n_finished - (OLD.state = 'finished') + (NEW.state = 'finished'),
		n_canceled = n_canceled - (OLD.state = 'canceled') + (NEW.state = 'canceled'),
		sum_visible_response = sum_visible_response - (OLD.state = 'finished') * OLD.visible_response
			+ (NEW.state = 'finished') * NEW.visible_response
	WHERE id = NEW.set_id;
END;
