-- 0004: a hash of the content of the Disclose that recorded an idempotency
-- key (see store.DiscloseHasher), so that the same key with other content is
-- refused instead of replayed. '' = recorded before this migration: such a
-- key replays whatever comes with it, as it did before.

ALTER TABLE idempotency_keys ADD COLUMN request_hash TEXT NOT NULL DEFAULT '';
