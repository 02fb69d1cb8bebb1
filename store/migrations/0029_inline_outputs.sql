-- 0029: a small output in its winning copy's row. A finished task wrote an
-- outputs row of its own (a B-tree insert and two foreign-key probes) that
-- repeated its copy's worker, exit code and times. Now an output of at
-- most 4 KiB (stdout and stderr together, store.inlineOutputMax) is kept
-- in the copy's row, by the UPDATE that ends the copy; a bigger one keeps
-- a row of its own in outputs_big, the old table renamed, which also
-- keeps every row written before. outputs is a view of both, so that
-- every reader reads as it did; a delete from it (a retry, a request of an
-- executed task) deletes the row or clears the copy's columns.
ALTER TABLE copies ADD COLUMN out_stdout BLOB; -- NULL: no output here
ALTER TABLE copies ADD COLUMN out_stderr BLOB;
ALTER TABLE copies ADD COLUMN out_flags INTEGER NOT NULL DEFAULT 0; -- 1: stdout cut, 2: stderr cut
ALTER TABLE copies ADD COLUMN out_reported REAL; -- outputs.reported_slot_seconds
ALTER TABLE outputs RENAME TO outputs_big;
CREATE VIEW outputs (set_id, idx, copy_id, worker, stdout, stderr, stdout_truncated, stderr_truncated,
	exit_code, timed_out, cpu_seconds, slot_seconds, reported_slot_seconds) AS
	SELECT set_id, idx, copy_id, worker, stdout, stderr, stdout_truncated, stderr_truncated,
		exit_code, timed_out, cpu_seconds, slot_seconds, reported_slot_seconds FROM outputs_big
	UNION ALL
	SELECT set_id, idx, id, worker, out_stdout, out_stderr, out_flags & 1, (out_flags >> 1) & 1,
		exit_code, timed_out, cpu_seconds, run_seconds, out_reported FROM copies WHERE out_stdout IS NOT NULL;
CREATE TRIGGER outputs_delete INSTEAD OF DELETE ON outputs
BEGIN
	DELETE FROM outputs_big WHERE set_id = OLD.set_id AND idx = OLD.idx;
	UPDATE copies SET out_stdout = NULL, out_stderr = NULL, out_flags = 0, out_reported = NULL
		WHERE id = OLD.copy_id AND out_stdout IS NOT NULL;
END;
