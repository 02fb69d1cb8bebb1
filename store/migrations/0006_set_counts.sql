-- 0006: each task set keeps its counts by state, its billed slot-seconds
-- and the sum of its finished tasks' visible response times, so that a
-- set's summary (GetTaskSet, ListTaskSets, every watch message) costs one
-- row read instead of a scan of its tasks and of the whole ledger (the
-- ledger has no index by set for corrections, and the sum read every line
-- of it). Triggers keep them, whatever statement changes a task's state or
-- adds a bill line; the ledger's append-only triggers are untouched.

ALTER TABLE task_sets ADD COLUMN n_disclosed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN n_executed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN n_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN n_finished INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN n_canceled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN billed_slot_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN sum_visible_response REAL NOT NULL DEFAULT 0;

UPDATE task_sets SET
	n_disclosed = (SELECT COUNT(*) FROM tasks t WHERE t.set_id = task_sets.id AND t.state = 'disclosed'),
	n_executed = (SELECT COUNT(*) FROM tasks t WHERE t.set_id = task_sets.id AND t.state = 'executed'),
	n_requested = (SELECT COUNT(*) FROM tasks t WHERE t.set_id = task_sets.id AND t.state = 'requested'),
	n_finished = (SELECT COUNT(*) FROM tasks t WHERE t.set_id = task_sets.id AND t.state = 'finished'),
	n_canceled = (SELECT COUNT(*) FROM tasks t WHERE t.set_id = task_sets.id AND t.state = 'canceled'),
	billed_slot_seconds = (SELECT COALESCE(SUM(slot_seconds), 0) FROM bill_lines b WHERE b.set_id = task_sets.id),
	sum_visible_response = (SELECT COALESCE(SUM(visible_response), 0) FROM tasks t WHERE t.set_id = task_sets.id AND t.state = 'finished');

CREATE TRIGGER tasks_count_insert AFTER INSERT ON tasks
BEGIN
	UPDATE task_sets SET
		n_disclosed = n_disclosed + (NEW.state = 'disclosed'),
		n_executed = n_executed + (NEW.state = 'executed'),
		n_requested = n_requested + (NEW.state = 'requested'),
		n_finished = n_finished + (NEW.state = 'finished'),
		n_canceled = n_canceled + (NEW.state = 'canceled'),
		sum_visible_response = sum_visible_response + (NEW.state = 'finished') * NEW.visible_response
	WHERE id = NEW.set_id;
END;

CREATE TRIGGER tasks_count_update AFTER UPDATE OF state, visible_response ON tasks
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

CREATE TRIGGER bill_lines_set_sum AFTER INSERT ON bill_lines
BEGIN
	UPDATE task_sets SET billed_slot_seconds = billed_slot_seconds + NEW.slot_seconds WHERE id = NEW.set_id;
END;
