-- 0019: files a task left that matched its keep patterns, per winning copy
-- (an attempt's result names its copy: outputs.copy_id, and
-- attempt_outputs.copy_id once it is retried, so nothing moves on a
-- retry). Refused files are rows too, with the reason and no content, so
-- that a result says what was not kept. The content is a BLOB in this
-- database, not a file under the data directory: it commits with the
-- result in one transaction (no result without its files, no orphan files
-- after a crash), it is backed up with the database, and the server never
-- builds a path on its own disk from a name a task chose. The caps per
-- task and per user bound what it costs.
CREATE TABLE kept_files (
	copy_id  INTEGER NOT NULL REFERENCES copies (id),
	path     TEXT    NOT NULL,
	owner    TEXT    NOT NULL,
	size     INTEGER NOT NULL,
	mode     INTEGER NOT NULL,
	not_kept TEXT    NOT NULL DEFAULT '',
	content  BLOB,
	PRIMARY KEY (copy_id, path)
);
-- Sums what a user stores (the per-user cap) without reading contents.
CREATE INDEX kept_files_owner ON kept_files (owner, size) WHERE not_kept = '';
