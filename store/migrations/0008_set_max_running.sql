-- 0008: a set's concurrency cap (--max-running): at most this many of its
-- copies run at once, speculative copies included; 0 = no cap. The
-- scheduler enforces it; the store keeps it for restarts and for display.
ALTER TABLE task_sets ADD COLUMN max_running INTEGER NOT NULL DEFAULT 0;
