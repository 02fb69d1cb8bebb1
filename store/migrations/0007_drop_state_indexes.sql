-- 0007: drop the two indexes on task state. Every task of a set in one
-- state shares an index key, and with thousands of them SQLite spent
-- 0.2-0.45 ms keeping each index up to date per state change: a requested
-- task's finish cost 0.59 ms of CPU with them and 0.13 ms without (a
-- store test, 3,000 requested tasks). What they served is now served by
-- the per-set counts of 0006 (the counts by state, a user's open sets and
-- queued tasks, whether a set is all canceled) or by the primary key
-- (set_id, idx): a set's tasks in some state, and the open tasks loaded at
-- start, read set by set from the sets that have any (n_disclosed +
-- n_executed + n_requested > 0).
DROP INDEX IF EXISTS tasks_open;
DROP INDEX IF EXISTS tasks_set_state;
