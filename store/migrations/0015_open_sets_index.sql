-- 0015: the per-user caps (GetUserLoad) count a user's open sets and their
-- queued tasks before every disclose. With only task_sets_owner, SQLite
-- walked every set the user ever had (a user with 10,000 finished sets
-- paid about 0.3 ms per disclose); this partial index holds the open ones
-- only, so the count costs what the user holds open.
CREATE INDEX task_sets_open_owner ON task_sets (owner) WHERE n_disclosed + n_requested > 0;

-- The per-row insert trigger of 0006 updated the set's counts, and so
-- this index, once per task: a 100,000-task disclose took 1.5 s instead
-- of 0.9 s. Only Disclose inserts tasks, all of one state, and it now
-- adds them to the set's counts in its one UPDATE of the set.
DROP TRIGGER tasks_count_insert;
