-- 0016: how each worker keeps tasks apart (RegisterRequest.isolation:
-- uid, owner-uid, namespaces or none), the one user a worker without
-- isolation serves, and what it enforces per copy. The scheduler matches
-- tasks to workers by the first two, also after a restart (Load).
ALTER TABLE workers ADD COLUMN isolation TEXT NOT NULL DEFAULT 'none';
ALTER TABLE workers ADD COLUMN bound_user TEXT NOT NULL DEFAULT '';
ALTER TABLE workers ADD COLUMN limits TEXT NOT NULL DEFAULT '';
-- The replay trace (0014) keeps each worker's bound user with its ups, so
-- that `batchd sim replay` matches tasks to workers as the server did.
ALTER TABLE worker_events ADD COLUMN bound_user TEXT NOT NULL DEFAULT '';
