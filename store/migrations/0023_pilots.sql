-- 0023: pilots, workers that a batch system ends.
-- workers.ends_at: when the worker stops taking copies (a pilot's time
-- limit less its margin; 0: never). workers.hand_back: the worker is a
-- pilot that hands its copies back when it ends, so what it loses is lost
-- to a pilot end. workers.left_at: when the worker left (state 'gone': its
-- goodbye, or a lapse older than the retention); 0 while it is known.
ALTER TABLE workers ADD COLUMN ends_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN hand_back INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN left_at INTEGER NOT NULL DEFAULT 0;
-- The live workers (up or lease-lapsed), read by every pool round and the
-- cluster view, whatever the number of workers that left.
CREATE INDEX workers_live ON workers (id) WHERE state != 'gone';
-- tasks.pilot_losses: copies of the task's current attempt lost to pilot
-- ends; at the server's limit the task fails with fail_reason.
ALTER TABLE tasks ADD COLUMN pilot_losses INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN fail_reason TEXT NOT NULL DEFAULT '';
