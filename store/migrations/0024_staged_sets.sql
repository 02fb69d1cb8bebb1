-- 0024: a set disclosed in chunks (store/stage.go) is staged until its
-- last chunk is in: task_sets.staged = 1 hides it from every lookup, its
-- counts stay 0 (so neither the scheduler's reload nor the user's load
-- sees its tasks), and one UPDATE makes it visible. Open removes staged
-- sets that a crash left behind.
ALTER TABLE task_sets ADD COLUMN staged INTEGER NOT NULL DEFAULT 0;
CREATE INDEX task_sets_staged ON task_sets (id) WHERE staged = 1;
