-- 0022: set dependencies (disclose --after), labels, and what `ls` needs to
-- find sets among many: their outcome and indexes by state.
--
-- waiting is 1 while a set waits for its dependencies (set_deps): its tasks
-- are in neither class; the dependency pass (store/depend.go) clears it
-- when they ended as asked, or cancels the set, saying why in
-- canceled_reason.
ALTER TABLE task_sets ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_sets ADD COLUMN canceled_reason TEXT NOT NULL DEFAULT '';
-- n_failed counts the set's tasks whose current attempt finished (was
-- requested and ran) with a non-zero exit or a timeout: a set's outcome
-- (sched.SetOutcome) is then a function of its row.
ALTER TABLE task_sets ADD COLUMN n_failed INTEGER NOT NULL DEFAULT 0;

UPDATE task_sets SET n_failed = (SELECT COUNT(*) FROM tasks t WHERE t.set_id = task_sets.id AND t.state = 'finished'
	AND (t.exit_code != 0 OR t.timed_out != 0));

-- The count trigger of 0006 (with 0021's pause for bulk statements,
-- which only cancel tasks and so never change n_failed), which now keeps
-- n_failed too: one trigger per task update, not two.
DROP TRIGGER tasks_count_update;
CREATE TRIGGER tasks_count_update AFTER UPDATE OF state, visible_response, exit_code, timed_out ON tasks
WHEN (SELECT paused FROM count_pause) = 0
BEGIN
	UPDATE task_sets SET
		n_disclosed = n_disclosed - (OLD.state = 'disclosed') + (NEW.state = 'disclosed'),
		n_executed = n_executed - (OLD.state = 'executed') + (NEW.state = 'executed'),
		n_requested = n_requested - (OLD.state = 'requested') + (NEW.state = 'requested'),
		n_finished = n_finished - (OLD.state = 'finished') + (NEW.state = 'finished'),
		n_canceled = n_canceled - (OLD.state = 'canceled') + (NEW.state = 'canceled'),
		n_failed = n_failed - (OLD.state = 'finished' AND (OLD.exit_code != 0 OR OLD.timed_out != 0))
			+ (NEW.state = 'finished' AND (NEW.exit_code != 0 OR NEW.timed_out != 0)),
		sum_visible_response = sum_visible_response - (OLD.state = 'finished') * OLD.visible_response
			+ (NEW.state = 'finished') * NEW.visible_response
	WHERE id = NEW.set_id;
END;

-- What a waiting set waits for: a whole set (on_idx -1) or one task; with
-- any_outcome, however it ends. Only sets that existed and were the
-- owner's when the set was disclosed: no cycle can form.
CREATE TABLE set_deps (
	set_id      INTEGER NOT NULL REFERENCES task_sets (id),
	on_set      INTEGER NOT NULL REFERENCES task_sets (id),
	on_idx      INTEGER NOT NULL,
	any_outcome INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (set_id, on_set, on_idx)
) WITHOUT ROWID;
-- The sets that wait on a set, for the pass after its tasks change.
CREATE INDEX set_deps_on ON set_deps (on_set, set_id);
CREATE INDEX task_sets_waiting ON task_sets (id) WHERE waiting = 1;

-- Labels given at disclose (--label key=value), for `ls --label`.
CREATE TABLE set_labels (
	set_id INTEGER NOT NULL REFERENCES task_sets (id),
	key    TEXT    NOT NULL,
	value  TEXT    NOT NULL,
	PRIMARY KEY (set_id, key)
) WITHOUT ROWID;
CREATE INDEX set_labels_kv ON set_labels (key, value, set_id);

-- `ls --state`: an ended set (nothing disclosed or requested left) by its
-- outcome, newest first; the expression is store.endedOutcomeSQL, word for
-- word, so that the planner matches it. Only ended sets are in it, so a
-- finish that leaves its set open changes no entry.
CREATE INDEX task_sets_owner_outcome ON task_sets (owner,
	(CASE WHEN n_failed > 0 THEN 'failed' WHEN n_finished + n_executed = 0 THEN 'canceled' ELSE 'done' END), id)
	WHERE n_disclosed + n_requested = 0;
CREATE INDEX task_sets_outcome ON task_sets (
	(CASE WHEN n_failed > 0 THEN 'failed' WHEN n_finished + n_executed = 0 THEN 'canceled' ELSE 'done' END), id)
	WHERE n_disclosed + n_requested = 0;
-- Every owner's open sets, newest first (task_sets_open_owner has one
-- owner's).
CREATE INDEX task_sets_open ON task_sets (waiting, id) WHERE n_disclosed + n_requested > 0;
-- `ls --since/--until`: the first set created at or after a time (a
-- creation time range is a range of ids, store.createdRange).
CREATE INDEX task_sets_created ON task_sets (created_at);
-- `ls --name GLOB`: one owner's sets newest first with their names in the
-- index, so that the pattern is matched without reading the table and the
-- walk stops at the page's end.
CREATE INDEX task_sets_owner_id_name ON task_sets (owner, id, name);
-- `ls --name GLOB` with three characters in a row that are no wildcard:
-- every three-character piece of every name (as SQLite's substr counts
-- characters), so that the sets whose name holds one of the pattern's are
-- walked newest first, instead of every name of the owner. Disclose adds
-- a new set's.
CREATE TABLE set_name_grams (
	gram   TEXT    NOT NULL,
	set_id INTEGER NOT NULL REFERENCES task_sets (id),
	PRIMARY KEY (gram, set_id)
) WITHOUT ROWID;
INSERT OR IGNORE INTO set_name_grams (gram, set_id)
	WITH RECURSIVE g(id, name, i) AS (
		SELECT id, name, 1 FROM task_sets WHERE length(name) >= 3
		UNION ALL SELECT id, name, i + 1 FROM g WHERE i + 3 <= length(name))
	SELECT substr(name, i, 3), id FROM g;
