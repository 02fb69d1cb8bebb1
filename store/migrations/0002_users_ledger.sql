-- 0002: users and their tokens, which user runs each worker, and a ledger
-- with prices, amounts and correction lines. Times are Unix nanoseconds.

CREATE TABLE users (
	name       TEXT    PRIMARY KEY,
	role       TEXT    NOT NULL CHECK (role IN ('user', 'admin', 'worker')),
	created_at INTEGER NOT NULL,
	revoked_at INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- tokens holds only SHA-256 hashes: a token is shown once, when minted.
CREATE TABLE tokens (
	hash       TEXT    PRIMARY KEY, -- hex SHA-256 of the whole token
	user       TEXT    NOT NULL REFERENCES users (name),
	prefix     TEXT    NOT NULL,    -- first characters, to tell tokens apart
	created_at INTEGER NOT NULL,
	revoked_at INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX tokens_user ON tokens (user);

-- worker_owners binds a worker name to the worker user that first
-- registered it, so that one worker token cannot speak for another's worker.
CREATE TABLE worker_owners (
	worker TEXT PRIMARY KEY,
	owner  TEXT NOT NULL
) WITHOUT ROWID;

-- The ledger gains prices, an amount per line and correction lines. A table
-- constraint cannot be dropped in SQLite, so the table is rebuilt: the
-- append-only triggers go with the old table (DROP TABLE fires no DELETE
-- trigger) and are created again on the new one.
CREATE TABLE bill_lines_new (
	id                   INTEGER PRIMARY KEY,
	owner                TEXT    NOT NULL,
	set_id               INTEGER NOT NULL REFERENCES task_sets (id),
	idx                  INTEGER NOT NULL,
	set_name             TEXT    NOT NULL DEFAULT '',
	copy_id              INTEGER NOT NULL DEFAULT 0,
	slot_seconds         REAL    NOT NULL,
	cpu_seconds          REAL    NOT NULL,
	billed_at            INTEGER NOT NULL,
	reason               TEXT    NOT NULL CHECK (reason IN ('finished', 'executed-then-requested', 'canceled-after-request', 'correction')),
	kind                 TEXT    NOT NULL DEFAULT 'charge' CHECK (kind IN ('charge', 'correction')),
	price_slot_second    REAL    NOT NULL DEFAULT 0,
	price_cpu_second     REAL    NOT NULL DEFAULT 0,
	amount               REAL    NOT NULL DEFAULT 0,
	corrects             INTEGER NOT NULL DEFAULT 0, -- the line a correction amends
	note                 TEXT    NOT NULL DEFAULT ''
);
INSERT INTO bill_lines_new (id, owner, set_id, idx, set_name, copy_id, slot_seconds, cpu_seconds, billed_at, reason)
	SELECT id, owner, set_id, idx, set_name, copy_id, slot_seconds, cpu_seconds, billed_at, reason FROM bill_lines;
DROP TABLE bill_lines;
ALTER TABLE bill_lines_new RENAME TO bill_lines;
-- One charge per task, ever, whatever the logic above it; corrections are
-- further lines.
CREATE UNIQUE INDEX bill_lines_one_charge ON bill_lines (set_id, idx) WHERE kind = 'charge';
CREATE INDEX bill_lines_owner ON bill_lines (owner, billed_at);
CREATE INDEX bill_lines_time ON bill_lines (billed_at);
CREATE TRIGGER bill_lines_no_update BEFORE UPDATE ON bill_lines
BEGIN
	SELECT RAISE(ABORT, 'bill_lines is an append-only ledger');
END;
CREATE TRIGGER bill_lines_no_delete BEFORE DELETE ON bill_lines
BEGIN
	SELECT RAISE(ABORT, 'bill_lines is an append-only ledger');
END;
