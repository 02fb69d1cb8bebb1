-- 0034: the bill's running totals, so that a bill's cost does not grow
-- with the ledger (store/billtotals.go, store/billfree.go).
--
-- bill_days sums the ledger's lines per owner, set and UTC day of
-- billed_at: lines, slot-seconds, CPU-seconds, requested-work slot-seconds
-- (charges; not canceled-after-request charges nor corrections), amount,
-- and the largest set name, as the bill's scan sums them. Set 0 sums all
-- the owner's sets, day -1 all days: each line counts in four rows, (set,
-- day), (0, day), (set, -1) and (0, -1), so that an all-time bill reads one
-- row per owner and its largest sets from an index. The writes of lines
-- add to it, four UPSERTs per (owner, set, day) a transaction touches.
CREATE TABLE bill_days (
	owner                  TEXT    NOT NULL,
	set_id                 INTEGER NOT NULL,
	day                    INTEGER NOT NULL, -- billed_at / 86400e9
	set_name               TEXT    NOT NULL DEFAULT '',
	lines                  INTEGER NOT NULL DEFAULT 0,
	slot_seconds           REAL    NOT NULL DEFAULT 0,
	cpu_seconds            REAL    NOT NULL DEFAULT 0,
	requested_slot_seconds REAL    NOT NULL DEFAULT 0,
	amount                 REAL    NOT NULL DEFAULT 0,
	PRIMARY KEY (owner, set_id, day)
) WITHOUT ROWID;
CREATE INDEX bill_days_day ON bill_days (day);
-- The largest sets of all time, for the bill's sums by set.
CREATE INDEX bill_days_rank ON bill_days (amount DESC, owner, set_id) WHERE day = -1 AND set_id != 0;
CREATE INDEX bill_days_owner_rank ON bill_days (owner, amount DESC, set_id) WHERE day = -1 AND set_id != 0;
INSERT INTO bill_days (owner, set_id, day, set_name, lines, slot_seconds, cpu_seconds, requested_slot_seconds, amount)
	SELECT owner, set_id, billed_at / 86400000000000, MAX(set_name), COUNT(*), SUM(slot_seconds), SUM(cpu_seconds),
	SUM(CASE WHEN reason NOT IN ('canceled-after-request', 'correction') THEN slot_seconds ELSE 0 END), SUM(amount)
	FROM bill_lines GROUP BY owner, set_id, billed_at / 86400000000000;
INSERT INTO bill_days (owner, set_id, day, set_name, lines, slot_seconds, cpu_seconds, requested_slot_seconds, amount)
	SELECT owner, 0, billed_at / 86400000000000, '', COUNT(*), SUM(slot_seconds), SUM(cpu_seconds),
	SUM(CASE WHEN reason NOT IN ('canceled-after-request', 'correction') THEN slot_seconds ELSE 0 END), SUM(amount)
	FROM bill_lines GROUP BY owner, billed_at / 86400000000000;
INSERT INTO bill_days (owner, set_id, day, set_name, lines, slot_seconds, cpu_seconds, requested_slot_seconds, amount)
	SELECT owner, set_id, -1, MAX(set_name), COUNT(*), SUM(slot_seconds), SUM(cpu_seconds),
	SUM(CASE WHEN reason NOT IN ('canceled-after-request', 'correction') THEN slot_seconds ELSE 0 END), SUM(amount)
	FROM bill_lines GROUP BY owner, set_id;
INSERT INTO bill_days (owner, set_id, day, set_name, lines, slot_seconds, cpu_seconds, requested_slot_seconds, amount)
	SELECT owner, 0, -1, '', COUNT(*), SUM(slot_seconds), SUM(cpu_seconds),
	SUM(CASE WHEN reason NOT IN ('canceled-after-request', 'correction') THEN slot_seconds ELSE 0 END), SUM(amount)
	FROM bill_lines GROUP BY owner;

-- free_copies holds every ended copy whose run is free work now, with its
-- part (freePartSQL): the rows change when a copy's part can change
-- (store/billfree.go says when). free_days sums them per owner, set, UTC
-- day of the copy's end and part, with set 0 and day -1 rows as bill_days
-- has them.
CREATE TABLE free_copies (
	copy_id  INTEGER PRIMARY KEY,
	owner    TEXT    NOT NULL,
	set_id   INTEGER NOT NULL,
	idx      INTEGER NOT NULL,
	ended_at INTEGER NOT NULL,
	part     TEXT    NOT NULL,
	run      REAL    NOT NULL
);
CREATE INDEX free_copies_task ON free_copies (set_id, idx);
CREATE INDEX free_copies_ended ON free_copies (ended_at);
CREATE TABLE free_days (
	owner   TEXT    NOT NULL,
	set_id  INTEGER NOT NULL,
	day     INTEGER NOT NULL, -- ended_at / 86400e9
	part    TEXT    NOT NULL,
	seconds REAL    NOT NULL DEFAULT 0,
	PRIMARY KEY (owner, set_id, day, part)
) WITHOUT ROWID;
CREATE INDEX free_days_day ON free_days (day);
-- freePartSQL (store/free.go) as it reads at this migration.
INSERT INTO free_copies (copy_id, owner, set_id, idx, ended_at, part, run)
	SELECT * FROM (SELECT c.id, s.owner, c.set_id, c.idx, c.ended_at, CASE
	WHEN c.state = 'won' AND COALESCE(a.state, t.state) IN ('executed', 'canceled') THEN 'executed_unrequested'
	WHEN c.state = 'lost' THEN 'lost_with_worker'
	WHEN c.state != 'killed' THEN ''
	WHEN EXISTS (SELECT 1 FROM bill_lines b WHERE b.set_id = c.set_id AND b.idx = c.idx AND b.kind = 'charge' AND b.copy_id = c.id) THEN ''
	WHEN COALESCE(a.win_copy, t.win_copy) NOT IN (0, c.id) THEN 'speculative_lost'
	WHEN COALESCE(a.state, t.state) = 'canceled' THEN 'canceled'
	ELSE 'speculative_lost' END AS part, c.run_seconds
	FROM copies c JOIN task_sets s ON s.id = c.set_id JOIN tasks t ON t.set_id = c.set_id AND t.idx = c.idx
	LEFT JOIN task_attempts a ON a.set_id = c.set_id AND a.idx = c.idx AND a.attempt = c.attempt
	WHERE c.ended_at > 0) WHERE part != '';
INSERT INTO free_days (owner, set_id, day, part, seconds)
	SELECT owner, set_id, ended_at / 86400000000000, part, SUM(run) FROM free_copies GROUP BY owner, set_id, ended_at / 86400000000000, part;
INSERT INTO free_days (owner, set_id, day, part, seconds)
	SELECT owner, 0, ended_at / 86400000000000, part, SUM(run) FROM free_copies GROUP BY owner, ended_at / 86400000000000, part;
INSERT INTO free_days (owner, set_id, day, part, seconds)
	SELECT owner, set_id, -1, part, SUM(run) FROM free_copies GROUP BY owner, set_id, part;
INSERT INTO free_days (owner, set_id, day, part, seconds)
	SELECT owner, 0, -1, part, SUM(run) FROM free_copies GROUP BY owner, part;
