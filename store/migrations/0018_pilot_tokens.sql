-- 0017: worker tokens an elastic pool mints, one per pilot. A pilot token
-- speaks for its pool's worker user (owner) but only about one worker
-- name; it ends at expires_at, or when the pool reports its pilot ended
-- (revoked_at). Only SHA-256 hashes are kept, as for users' tokens, and in
-- a table of their own: a pilot token is never a user's API token.
CREATE TABLE pilot_tokens (
	hash       TEXT    PRIMARY KEY,
	owner      TEXT    NOT NULL,
	worker     TEXT    NOT NULL,
	prefix     TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	revoked_at INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX pilot_tokens_worker ON pilot_tokens (owner, worker);
