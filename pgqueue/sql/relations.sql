-- fragment: dependency_release
-- After a CTE `edges` (the dependency rows just deleted, RETURNING d.job_id): count
-- them off their dependents; a dependent left waiting for nothing is released
-- (pending, due at the latest now) with a 'waiting' event, and one NOTIFY hint
-- covers them.  Defines the CTEs counts, released (id, queue, state), events and
-- notified.  {namespace}: the parameter that holds the namespace.
counts AS (
    SELECT job_id, count(*)::int AS n FROM edges GROUP BY job_id
), released AS (
    UPDATE pgqueue_jobs j
    SET pending_deps = greatest(j.pending_deps - c.n, 0),
        state = CASE WHEN j.state = 'waiting-children' AND j.pending_deps - c.n <= 0
                     THEN 'pending' ELSE j.state END,
        run_at = CASE WHEN j.state = 'waiting-children' AND j.pending_deps - c.n <= 0
                      THEN greatest(j.run_at, statement_timestamp()) ELSE j.run_at END
    FROM counts c
    WHERE j.namespace = {namespace} AND j.id = c.job_id
    RETURNING j.id, j.queue, j.state
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT {namespace}, r.queue, r.id, 'waiting', '{"prev": "waiting-children"}'::jsonb
    FROM released r WHERE r.state = 'pending'
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace={namespace})
)

-- name: flow_child_lock
-- Lock one live job to edit its place in a flow.  :namespace, :child_id.
-- Returns its parent (NULL when it has none).
SELECT j.id, j.parent_id
FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.id = :child_id
FOR UPDATE

-- name: flow_children_lock_unprocessed
-- Parameters, in order: :namespace, :frontier.
-- Lock the children of the parents :frontier that have not started: waiting,
-- delayed, prioritized or waiting for children of their own.  :namespace.
-- Returns id, parent_id, stored state, fence.
SELECT c.id, c.parent_id, c.state, c.fence
FROM pgqueue_jobs c
WHERE c.namespace = :namespace AND c.parent_id = ANY(:frontier::text[])
  AND c.state IN ('pending', 'waiting-children')
ORDER BY c.id
FOR UPDATE

-- name: dependency_detach
-- Parameters, in order: :namespace, :job_ids, :depends_on.
-- Drop the edges ":job_ids[i] waits for :depends_on[i]" and count them off their dependents;
-- a dependent left waiting for nothing is released (a 'waiting' event and one
-- NOTIFY hint).  :namespace.  Returns how many edges went and how many
-- dependents were released.
WITH edges AS (
    DELETE FROM pgqueue_dependencies d
    USING unnest(:job_ids::text[], :depends_on::text[]) AS i(job_id, depends_on)
    WHERE d.namespace = :namespace AND d.job_id = i.job_id AND d.depends_on = i.depends_on
    RETURNING d.job_id
),
-- include: dependency_release(namespace=:namespace)
SELECT (SELECT count(*) FROM edges)::int AS detached,
       (SELECT count(*) FROM events)::int AS released,
       (SELECT count(*) FROM notified)::int AS hinted

-- name: dependency_edges_drop_dangling
-- Parameters, in order: :namespace, :job_ids.
-- Drop the edges that dead dependents (dead-lettered or finished jobs, not
-- live) kept towards jobs :job_ids that exist no more, neither live nor finished:
-- a failed job deleted while nobody live waited on it (remove, clean,
-- retention, DLQ purge, remove or expiry).  A later redrive of such a
-- dependent then does not wait for a job that is gone.  An id that a newer
-- generation took keeps its edges.  Run in the transaction that deleted the
-- jobs, after the delete.  :namespace.  Returns how many edges went.
WITH dropped AS (
    DELETE FROM pgqueue_dependencies d
    WHERE d.namespace = :namespace AND d.depends_on = ANY(:job_ids::text[])
      AND NOT EXISTS (SELECT 1 FROM pgqueue_jobs w
                      WHERE w.namespace = :namespace AND w.id = d.job_id)
      AND NOT EXISTS (SELECT 1 FROM pgqueue_jobs j
                      WHERE j.namespace = :namespace AND j.id = d.depends_on)
      AND NOT EXISTS (SELECT 1 FROM pgqueue_finished f
                      WHERE f.namespace = :namespace AND f.id = d.depends_on)
    RETURNING d.job_id
)
SELECT count(*)::int FROM dropped

-- name: dependency_edges_into
-- Parameters, in order: :namespace, :release.
-- The edges that point to jobs :release (deleted without completing): dependent,
-- dependency, and the dependent's queue and stored state when it is live
-- (NULL: finished or gone).  Run in the transaction that deleted the jobs,
-- as its own statement, so its snapshot sees every edge committed before
-- their rows were locked.  :namespace.
SELECT d.job_id, d.depends_on, j.queue AS dependent_queue, j.state AS dependent_state
FROM pgqueue_dependencies d
LEFT JOIN pgqueue_jobs j ON j.namespace = d.namespace AND j.id = d.job_id
WHERE d.namespace = :namespace AND d.depends_on = ANY(:release::text[])
ORDER BY d.job_id, d.depends_on

-- name: flow_children_detach
-- Parameters, in order: :namespace, :ids.
-- Jobs :ids leave their parent: they keep their place in their queue, and
-- their results no longer count among the parent's children.  :namespace.
UPDATE pgqueue_jobs j
SET parent_id = NULL, parent_queue = NULL
WHERE j.namespace = :namespace AND j.id = ANY(:ids::text[]) AND j.parent_id IS NOT NULL
RETURNING j.id

-- name: flow_children_orphan
-- Parameters, in order: :namespace, :removed_all.
-- The live children of the removed jobs :removed_all (those already running) lose
-- their parent link.  :namespace.
UPDATE pgqueue_jobs j
SET parent_id = NULL, parent_queue = NULL
WHERE j.namespace = :namespace AND j.parent_id = ANY(:removed_all::text[])
RETURNING j.id

-- name: job_unique_key_owner
-- Parameters, in order: :namespace, :queue, :key, :now.
-- The job holding the deduplication key :key of queue :queue at :now (NULL:
-- the database clock; a test passes a later instant to move time): a live job
-- (a key whose TTL has passed is held by nobody) or a finished one whose key's
-- TTL outlives it.  :namespace.
WITH clock AS (
    SELECT coalesce(:now::timestamptz, statement_timestamp()) AS now
)
SELECT o.id FROM (
    SELECT j.id
    FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.queue = :queue AND j.unique_key = :key
      AND (j.unique_expires_at IS NULL OR j.unique_expires_at > (SELECT now FROM clock))
    UNION ALL
    SELECT f.id
    FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND f.queue = :queue AND f.unique_key = :key
      AND f.unique_expires_at > (SELECT now FROM clock)
) AS o
LIMIT 1

-- name: job_unique_key_clear
-- Parameters, in order: :namespace, :queue, :key.
-- Free the deduplication key :key of queue :queue: its owner keeps running or
-- waiting (or stays finished), and the next push with that key is admitted.
-- :namespace.
WITH live AS (
    UPDATE pgqueue_jobs j
    SET unique_key = NULL, unique_expires_at = NULL
    WHERE j.namespace = :namespace AND j.queue = :queue AND j.unique_key = :key
      AND (j.unique_expires_at IS NULL OR j.unique_expires_at > statement_timestamp())
    RETURNING j.id
), finished AS (
    UPDATE pgqueue_finished f
    SET unique_expires_at = NULL
    WHERE f.namespace = :namespace AND f.queue = :queue AND f.unique_key = :key
      AND f.unique_expires_at > statement_timestamp()
    RETURNING f.id
)
SELECT id FROM live UNION ALL SELECT id FROM finished

-- name: job_unique_key_clear_by_id
-- Parameters, in order: :namespace, :job_id.
-- Free the deduplication key that job :job_id holds, live or finished (no row
-- when it holds none).  :namespace.
WITH live AS (
    UPDATE pgqueue_jobs j
    SET unique_key = NULL, unique_expires_at = NULL
    WHERE j.namespace = :namespace AND j.id = :job_id AND j.unique_key IS NOT NULL
      AND (j.unique_expires_at IS NULL OR j.unique_expires_at > statement_timestamp())
    RETURNING j.id
), finished AS (
    UPDATE pgqueue_finished f
    SET unique_expires_at = NULL
    WHERE f.namespace = :namespace AND f.id = :job_id AND f.unique_expires_at > statement_timestamp()
    RETURNING f.id
)
SELECT id FROM live UNION ALL SELECT id FROM finished
