-- 0003: when a task set was canceled as a whole ("cancel the rest"); such
-- a set takes no more tasks. 0 = never.

ALTER TABLE task_sets ADD COLUMN canceled_at INTEGER NOT NULL DEFAULT 0;
