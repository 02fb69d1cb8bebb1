-- 0015: the per-user caps (GetUserLoad) count a user's open sets and their
-- queued tasks before every disclose. With only task_sets_owner, SQLite
-- walked every set the user ever had (a user with 10,000 finished sets
-- paid about 0.3 ms per disclose); this partial index holds the open ones
-- only, so the count costs what the user holds open.
CREATE INDEX task_sets_open_owner ON task_sets (owner) WHERE n_disclosed + n_requested > 0;
