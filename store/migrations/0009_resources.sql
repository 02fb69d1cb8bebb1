-- 0009: resource requests. A task's cpus (slots of one worker a copy
-- takes; 0 = one) and memory (MiB; 0 = none asked) are kept beside its
-- spec so that the open tasks reloaded at start need no JSON decoding; a
-- worker's offered memory is kept for the cluster's view and restarts.
ALTER TABLE tasks ADD COLUMN cpus INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN memory_mb INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN memory_mb INTEGER NOT NULL DEFAULT 0;
