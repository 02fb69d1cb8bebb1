-- 0024: staged sets (a disclose in chunks) and the bill sum that a group commit pauses.
-- A set disclosed in chunks (store/stage.go) is staged until its
-- last chunk is in: task_sets.staged = 1 hides it from every lookup, its
-- counts stay 0 (so neither the scheduler's reload nor the user's load
-- sees its tasks), and one UPDATE makes it visible. Open removes staged
-- sets that a crash left behind when a server starts.
ALTER TABLE task_sets ADD COLUMN staged INTEGER NOT NULL DEFAULT 0;
CREATE INDEX task_sets_staged ON task_sets (id) WHERE staged = 1;

-- A group commit of winners (store/finishbatch.go) adds its bill lines'
-- slot seconds to their sets once per set, as it does their counts: the
-- per-line sum stands aside while count_pause.paused is 1, like the
-- per-row counts.
DROP TRIGGER bill_lines_set_sum;
CREATE TRIGGER bill_lines_set_sum AFTER INSERT ON bill_lines
WHEN (SELECT paused FROM count_pause) = 0
BEGIN
	UPDATE task_sets SET billed_slot_seconds = billed_slot_seconds + NEW.slot_seconds WHERE id = NEW.set_id;
END;
