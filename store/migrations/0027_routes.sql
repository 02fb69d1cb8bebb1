-- 0027: routes. A set may name the pool and the partition whose workers
-- alone run its copies ('' = any); a worker records the pool and the
-- partition it registered under, for the cluster's view, restarts and the
-- check that a route names a pool some worker has used.
ALTER TABLE task_sets ADD COLUMN pool TEXT NOT NULL DEFAULT '';
ALTER TABLE task_sets ADD COLUMN partition TEXT NOT NULL DEFAULT '';
ALTER TABLE workers ADD COLUMN pool TEXT NOT NULL DEFAULT '';
ALTER TABLE workers ADD COLUMN partition TEXT NOT NULL DEFAULT '';
CREATE INDEX workers_pool ON workers (pool, partition) WHERE pool != '' OR partition != '';
