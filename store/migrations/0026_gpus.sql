-- 0026: GPUs. A task's GPUs (of one worker a copy takes; 0 = none) are
-- kept beside its spec, as its cpus and memory are (0009), so that the
-- open tasks reloaded at start need no JSON decoding; a worker's offered
-- GPUs are kept for the cluster's view and restarts.
ALTER TABLE tasks ADD COLUMN gpus INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN gpus INTEGER NOT NULL DEFAULT 0;
