-- 0007: drop the two indexes on task state. Every task of a set in one
-- state shares an index key, and with thousands of them keeping the
-- indexes up to date was most of a state change: a requested task's finish
-- took 328-497 us with them and 117-123 us without (BenchmarkFinishRequested,
-- 3,000 requested tasks). What they served is now served by
-- the per-set counts of 0006 (the counts by state, a user's open sets and
-- queued tasks, whether a set is all canceled) or by the primary key
-- (set_id, idx): a set's tasks in some state, and the open tasks loaded at
-- start, read set by set from the sets that have any (n_disclosed +
-- n_executed + n_requested > 0).
DROP INDEX IF EXISTS tasks_open;
DROP INDEX IF EXISTS tasks_set_state;
