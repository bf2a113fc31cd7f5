-- name: finished_prune
-- Forget finished jobs older than their retention: completed ones (and the
-- completion proofs of removed ones) after $2 ms; failed ones only when they
-- have no DLQ entry (the DLQ's own maxAge decides those) after $3 ms.  A
-- flow child is kept while its parent is live or dead-lettered (its result,
-- or its error, is what the parent reads when it runs, also after a
-- redrive); it becomes prunable once the parent has finished for good.
-- $1 namespace, $4 batch size.  Returns how many rows went and the ids of
-- the failed ones, whose edges from dead dependents the caller then drops
-- (dependency_edges_drop_dangling) in the same transaction.
WITH doomed AS (
    SELECT f.id
    FROM pgqueue_finished f
    WHERE f.namespace = $1
      AND ((f.state = 'completed'
            AND f.finished_at < statement_timestamp() - $2::bigint * interval '1 millisecond')
        OR (f.state = 'failed'
            AND f.finished_at < statement_timestamp() - $3::bigint * interval '1 millisecond'
            AND NOT EXISTS (SELECT 1 FROM pgqueue_dlq d
                            WHERE d.namespace = $1 AND d.job_id = f.id)))
      AND (f.parent_id IS NULL
           OR (NOT EXISTS (SELECT 1 FROM pgqueue_jobs p
                           WHERE p.namespace = $1 AND p.id = f.parent_id)
               AND NOT EXISTS (SELECT 1 FROM pgqueue_dlq p
                               WHERE p.namespace = $1 AND p.job_id = f.parent_id)))
    LIMIT $4
), gone AS (
    DELETE FROM pgqueue_finished f
    USING doomed d
    WHERE f.namespace = $1 AND f.id = d.id
    RETURNING f.id, f.state
), logs AS (
    DELETE FROM pgqueue_job_logs l
    USING gone g
    WHERE l.namespace = $1 AND l.job_id = g.id
)
SELECT count(*)::int AS pruned,
       coalesce(array_agg(g.id) FILTER (WHERE g.state = 'failed'), '{}') AS failed_ids
FROM gone g

-- name: event_prune_old_returning
-- Delete outbox events older than $2 ms, oldest first, at most $3, but never
-- one that enabled webhooks have not fanned out yet.  $1 namespace.
WITH doomed AS (
    SELECT e.id FROM pgqueue_events e
    WHERE e.namespace = $1
      AND e.created_at < statement_timestamp() - $2::bigint * interval '1 millisecond'
      AND NOT EXISTS (SELECT 1 FROM pgqueue_webhook_cursor c
                      WHERE c.namespace = $1 AND (e.xid, e.id) > (c.xid, c.event_id)
                        AND EXISTS (SELECT 1 FROM pgqueue_webhooks w
                                    WHERE w.namespace = $1 AND w.enabled))
    ORDER BY e.id
    LIMIT $3
)
DELETE FROM pgqueue_events e USING doomed d WHERE e.id = d.id
RETURNING e.id

-- name: event_queue_threshold
-- The id below which a queue keeps more than $3 newer events.  $1 namespace,
-- $2 queue.  No row when the queue has at most $3 events.
SELECT e.id FROM pgqueue_events e
WHERE e.namespace = $1 AND e.queue = $2
ORDER BY e.id DESC
OFFSET $3::int
LIMIT 1

-- name: event_trim_queue_returning
-- Delete up to $4 events of queue $2 with an id of at most $3.  $1 namespace.
WITH doomed AS (
    SELECT e.id FROM pgqueue_events e
    WHERE e.namespace = $1 AND e.queue = $2 AND e.id <= $3::bigint
      AND NOT EXISTS (SELECT 1 FROM pgqueue_webhook_cursor c
                      WHERE c.namespace = $1 AND (e.xid, e.id) > (c.xid, c.event_id)
                        AND EXISTS (SELECT 1 FROM pgqueue_webhooks w
                                    WHERE w.namespace = $1 AND w.enabled))
    ORDER BY e.id
    LIMIT $4
)
DELETE FROM pgqueue_events e USING doomed d WHERE e.id = d.id
RETURNING e.id

-- name: event_queues
-- Queues that have events.  $1 namespace.
SELECT DISTINCT queue FROM pgqueue_queues WHERE namespace = $1

-- name: worker_prune_stale
-- Forget workers not seen for $2 ms.  $1 namespace.
DELETE FROM pgqueue_workers
WHERE namespace = $1
  AND last_seen < statement_timestamp() - $2::bigint * interval '1 millisecond'
RETURNING worker_id
