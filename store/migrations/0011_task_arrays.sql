-- 0011: task arrays (disclose --array). An array is kept once, with the
-- spec every task of it shares; each of its tasks keeps '@' and the
-- array's id as its spec, so that a 100,000-task array costs a few bytes a
-- task. A task's value is first_value + (idx - first_index) * step.
CREATE TABLE task_arrays (
	id          INTEGER PRIMARY KEY,
	set_id      INTEGER NOT NULL REFERENCES task_sets (id),
	first_index INTEGER NOT NULL,
	count       INTEGER NOT NULL,
	first_value INTEGER NOT NULL,
	step        INTEGER NOT NULL,
	spec        TEXT    NOT NULL -- JSON of sched.TaskSpec, shared by every task
);
CREATE INDEX task_arrays_set ON task_arrays (set_id, first_index);
