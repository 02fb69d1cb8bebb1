-- 0033: when the scheduler heard of a request. A request is stamped when
-- its write transaction begins (requested_at: its visible response counts
-- from there); the scheduler hears of it once the API batch that carries
-- it has committed, and decides then. One row per request call that was
-- followed by a decision, keyed as the call's tasks are (their set and
-- requested_at), for the trace a replay runs (store/trace.go).
CREATE TABLE request_heard (
	set_id INTEGER NOT NULL,
	requested_at INTEGER NOT NULL,
	heard_at INTEGER NOT NULL,
	PRIMARY KEY (set_id, requested_at)
) WITHOUT ROWID;
