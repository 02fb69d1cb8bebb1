-- 0005: billed run time the server can vouch for. A copy keeps the time
-- its server-ordered suspension began (0 = not suspended) and the seconds
-- it spent suspended on the server's order; the report of a winning copy
-- is billed at most the time the server saw it run (see clampRun in
-- store/clamp.go). Outputs and bill lines keep what the worker reported
-- beside what was kept, and whether it was cut. NULL reported values (rows
-- written before this migration) mean "as kept": the ledger is append-only,
-- so old lines are not rewritten.

ALTER TABLE copies ADD COLUMN suspended_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE copies ADD COLUMN suspended_seconds REAL NOT NULL DEFAULT 0;

ALTER TABLE outputs ADD COLUMN reported_slot_seconds REAL;

ALTER TABLE bill_lines ADD COLUMN reported_slot_seconds REAL;
ALTER TABLE bill_lines ADD COLUMN reported_cpu_seconds REAL;
ALTER TABLE bill_lines ADD COLUMN clamped INTEGER NOT NULL DEFAULT 0;
