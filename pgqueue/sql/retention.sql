-- fragment: finished_parent_gone
-- A condition on the finished job `f` (after a WHERE): it is no flow child, or
-- its parent has finished for good, neither live nor dead-lettered (a parent
-- reads its children's results or errors when it runs, also after a redrive).
-- :namespace.
AND (f.parent_id IS NULL
     OR (NOT EXISTS (SELECT 1 FROM pgqueue_jobs p
                     WHERE p.namespace = :namespace AND p.id = f.parent_id)
         AND NOT EXISTS (SELECT 1 FROM pgqueue_dlq p
                         WHERE p.namespace = :namespace AND p.job_id = f.parent_id)))

-- name: queue_register_held
-- Register every queue of :namespace that holds jobs, live or finished (skip scans
-- along the listing indexes), before finished_prune and the per-queue event trim walk
-- the registry: a push to a queue its manager knows skips the row
-- (pgqueue.manager.registry), and one that raced an obliterate keeps its job, not its row.
WITH RECURSIVE live(queue) AS (
    -- include: queue_skip_scan(table=pgqueue_jobs, cte=live)
), done(queue) AS (
    -- include: queue_skip_scan(table=pgqueue_finished, cte=done)
)
INSERT INTO pgqueue_queues (namespace, queue)
SELECT :namespace, h.queue
FROM (SELECT queue FROM live UNION SELECT queue FROM done) h
WHERE h.queue IS NOT NULL
ON CONFLICT DO NOTHING

-- name: finished_prune
-- Parameters, in order: :namespace, :completed_ms, :failed_ms, :limit, :now.
-- Forget finished jobs older than their retention: completed ones (and the
-- completion proofs of removed ones) after :completed_ms; failed ones only when they
-- have no DLQ entry (the DLQ's own maxAge decides those) after :failed_ms.  Each
-- queue's oldest first, along the listing index (namespace, queue, state,
-- finished_at): a batch never reads the jobs still retained (nor, by leaving ties in
-- index order, the rest of a finish statement's jobs past its :limit).  A
-- flow child is kept while its parent is live or dead-lettered (its result,
-- or its error, is what the parent reads when it runs, also after a
-- redrive); it becomes prunable once the parent has finished for good.
-- :namespace, :limit batch size, :now the clock the ages are measured against
-- (NULL: the database clock; a test passes a later instant to move time).
-- Returns how many rows went and the ids of the failed ones, whose edges from
-- dead dependents the caller then drops (dependency_edges_drop_dangling) in
-- the same transaction.
WITH clock AS (
    SELECT coalesce(:now::timestamptz, statement_timestamp()) AS now
), aged AS (  -- per queue and state, the oldest first, along the listing index
    SELECT f.id
    FROM pgqueue_queues q
    CROSS JOIN clock
    CROSS JOIN LATERAL (VALUES ('completed', :completed_ms::bigint), ('failed', :failed_ms::bigint)) AS s(state, ms)
    CROSS JOIN LATERAL (
        SELECT f.id
        FROM pgqueue_finished f
        WHERE f.namespace = :namespace AND f.queue = q.queue AND f.state = s.state
          AND f.finished_at < clock.now - s.ms * interval '1 millisecond'
          AND (s.state = 'completed'
               OR NOT EXISTS (SELECT 1 FROM pgqueue_dlq d
                              WHERE d.namespace = :namespace AND d.job_id = f.id))
          -- include: finished_parent_gone
        ORDER BY f.finished_at  -- the jobs of one finish statement share it: any of them
        LIMIT :limit
    ) f
    WHERE q.namespace = :namespace
), doomed AS (
    SELECT a.id FROM aged a LIMIT :limit
), gone AS (
    DELETE FROM pgqueue_finished f  -- by primary key: never a scan of the table
    WHERE f.namespace = :namespace AND f.id = ANY (ARRAY(SELECT d.id FROM doomed d))
    RETURNING f.id, f.state
), logs AS (
    DELETE FROM pgqueue_job_logs l
    USING gone g
    WHERE l.namespace = :namespace AND l.job_id = g.id
)
SELECT count(*)::int AS pruned,
       coalesce(array_agg(g.id) FILTER (WHERE g.state = 'failed'), '{}') AS failed_ids
FROM gone g

-- name: finished_keep_trim
-- removeOnComplete / removeOnFail as a count or {age, count} (BullMQ's keep
-- jobs): a finished job whose policy (opts keep_completed / keep_failed) no
-- longer keeps it is hidden (removed = true, as a job removed at once: a
-- completion proof its dependents still resolve with) and a failed one
-- leaves the DLQ, unless a live job still waits for it.  Kept are the newest
-- `count` visible finished jobs of its queue in its state (all jobs of the
-- queue count, whatever their own option) and those finished less than `age`
-- seconds before the clock.  Only queues and states that have such jobs are
-- read (pgqueue_finished_keep_idx).  :namespace, :limit batch size, :now the
-- clock (NULL: the database clock).  Returns how many rows were hidden.
WITH scope AS (
    SELECT DISTINCT f.queue, f.state
    FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND NOT f.removed
      AND (f.opts ? 'keep_completed' OR f.opts ? 'keep_failed')
), ranked AS (
    SELECT f.id, f.state, f.finished_at,
           f.opts -> (CASE WHEN f.state = 'completed' THEN 'keep_completed'
                           ELSE 'keep_failed' END) AS keep,
           row_number() OVER (PARTITION BY f.queue, f.state
                              ORDER BY f.finished_at DESC, f.id DESC) AS newer
    FROM scope s
    JOIN pgqueue_finished f ON f.namespace = :namespace AND f.queue = s.queue AND f.state = s.state
    WHERE NOT f.removed
), doomed AS (
    SELECT r.id, r.state
    FROM ranked r, (SELECT coalesce(:now::timestamptz, statement_timestamp()) AS now) clock
    WHERE r.keep IS NOT NULL
      AND ((r.keep ? 'count' AND r.newer > (r.keep ->> 'count')::bigint)
        OR (r.keep ? 'age'
            AND r.finished_at < clock.now - (r.keep ->> 'age')::float8 * interval '1 second'))
      AND NOT (r.state = 'failed'
               AND EXISTS (SELECT 1 FROM pgqueue_dependencies e
                           JOIN pgqueue_jobs w ON w.namespace = e.namespace AND w.id = e.job_id
                           WHERE e.namespace = :namespace AND e.depends_on = r.id))
    LIMIT :limit
), hidden AS (
    UPDATE pgqueue_finished f SET removed = true
    FROM doomed d
    WHERE f.namespace = :namespace AND f.id = d.id
    RETURNING f.id, f.state
), dlq AS (
    DELETE FROM pgqueue_dlq q
    USING hidden h
    WHERE q.namespace = :namespace AND q.job_id = h.id AND h.state = 'failed'
)
SELECT count(*)::int FROM hidden

-- fragment: event_prune_bound
-- The CTE `bound`: the xid below which events may go: this snapshot's xmin,
-- {horizon} when given (the previous pass's horizon), and the webhook
-- fan-out's position while an enabled webhook has not read past it.  :namespace.
bound AS (
    SELECT least(
        pg_snapshot_xmin(pg_current_snapshot())::text::bigint,
        coalesce({horizon}::bigint, 9223372036854775807),
        coalesce((SELECT c.xid FROM pgqueue_webhook_cursor c
                  WHERE c.namespace = :namespace
                    AND EXISTS (SELECT 1 FROM pgqueue_webhooks w
                                WHERE w.namespace = :namespace AND w.enabled)),
                 9223372036854775807)) AS xid
)

-- name: event_prune_old_returning
-- Parameters, in order: :namespace, :max_age_ms, :window, :horizon, :now.
-- Delete outbox events older than :max_age_ms, each queue's as a prefix in (xid, id)
-- order (those before the queue's first newer event), looking only at the
-- window of the :window oldest events (the head of the cursor index: a batch never
-- reads the recent events, however many there are): only of transactions
-- below the commit-safe horizon (this snapshot's xmin, and :horizon when given: the
-- horizon of the previous pass, which every reader has passed since), and
-- never one that enabled webhooks have not fanned out yet.  Raises each
-- queue's prune mark in the same statement.  :namespace, :now the clock the
-- ages are measured against (NULL: the database clock).  Returns the window's
-- size and how many of it went: the caller goes on while whole windows go.
WITH
-- include: event_prune_bound(horizon=:horizon)
, window_ AS MATERIALIZED (
    SELECT e.id, e.xid, e.queue,
           e.created_at >= coalesce(:now::timestamptz, statement_timestamp())
                           - :max_age_ms::bigint * interval '1 millisecond' AS recent
    FROM pgqueue_events e CROSS JOIN bound b
    WHERE e.namespace = :namespace AND e.xid < b.xid
    ORDER BY e.xid, e.id
    LIMIT :window
), first_recent AS (  -- each queue's first event of the window still to keep
    SELECT DISTINCT ON (w.queue) w.queue, w.xid, w.id
    FROM window_ w WHERE w.recent
    ORDER BY w.queue, w.xid, w.id
), doomed AS (
    SELECT w.xid, w.id FROM window_ w
    LEFT JOIN first_recent f ON f.queue = w.queue
    WHERE NOT w.recent AND (f.queue IS NULL OR (w.xid, w.id) < (f.xid, f.id))
), gone AS (  -- found through the cursor index (the id has no index of its own)
    DELETE FROM pgqueue_events e USING doomed d
    WHERE e.namespace = :namespace AND e.xid = d.xid AND e.id = d.id
    RETURNING e.id, e.xid, e.queue
), marked AS (
    INSERT INTO pgqueue_event_prune_marks AS m (namespace, queue, xid)
    SELECT :namespace, g.queue, max(g.xid) FROM gone g GROUP BY g.queue
    ON CONFLICT (namespace, queue) DO UPDATE
        SET xid = greatest(m.xid, excluded.xid), pruned_at = statement_timestamp()
)
SELECT (SELECT count(*) FROM window_)::int AS scanned, (SELECT count(*) FROM gone)::int AS pruned

-- name: event_trim_queue_returning
-- Parameters, in order: :namespace, :queue, :keep, :limit, :horizon.
-- Keep the newest :keep events of queue :queue and delete up to :limit older ones, as a
-- prefix in (xid, id) order, under the same bounds as
-- event_prune_old_returning (:horizon: the previous pass's horizon, or NULL).
-- Raises the queue's prune mark in the same statement.  :namespace.
WITH
-- include: event_prune_bound(horizon=:horizon)
, kept AS MATERIALIZED (  -- the oldest event kept; none when the queue has at most $3;
    -- MATERIALIZED: looked up once, never once per candidate row
    SELECT e.xid, e.id FROM pgqueue_events e
    WHERE e.namespace = :namespace AND e.queue = :queue AND :keep::int > 0
    ORDER BY e.xid DESC, e.id DESC
    OFFSET greatest(:keep::int - 1, 0)
    LIMIT 1
), doomed AS (
    SELECT e.xid, e.id FROM pgqueue_events e CROSS JOIN bound b
    WHERE e.namespace = :namespace AND e.queue = :queue AND e.xid < b.xid
      AND (:keep::int = 0 OR EXISTS (SELECT 1 FROM kept k WHERE (e.xid, e.id) < (k.xid, k.id)))
    ORDER BY e.xid, e.id
    LIMIT :limit
), gone AS (  -- found through the cursor index (the id has no index of its own)
    DELETE FROM pgqueue_events e USING doomed d
    WHERE e.namespace = :namespace AND e.xid = d.xid AND e.id = d.id
    RETURNING e.id, e.xid
), marked AS (
    INSERT INTO pgqueue_event_prune_marks AS m (namespace, queue, xid)
    SELECT :namespace, :queue, max(g.xid) FROM gone g HAVING count(*) > 0
    ON CONFLICT (namespace, queue) DO UPDATE
        SET xid = greatest(m.xid, excluded.xid), pruned_at = statement_timestamp()
)
SELECT g.id FROM gone g

-- name: event_retention_horizon
-- The commit-safe horizon now: every transaction below it has ended.  The
-- next retention pass deletes no event at or above it.
SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xid

-- name: event_queues
-- Queues that have events.  :namespace.
SELECT DISTINCT queue FROM pgqueue_queues WHERE namespace = :namespace

-- name: worker_prune_stale
-- Parameters, in order: :namespace, :worker_stale_ms, :now.
-- Forget workers not seen for :worker_stale_ms.  :namespace, :now the clock it is
-- measured against (NULL: the database clock).
DELETE FROM pgqueue_workers
WHERE namespace = :namespace
  AND last_seen < coalesce(:now::timestamptz, statement_timestamp())
                  - :worker_stale_ms::bigint * interval '1 millisecond'
RETURNING worker_id
