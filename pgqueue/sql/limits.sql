-- name: queue_set_rate_limit
-- A queue's rate limit for every broker: $3 claims per $4 ms window (a fixed
-- window opened by the first claim after the previous one closed), expiring
-- after $5 ms (NULL: never).  The window starts afresh.  $1 namespace, $2 queue.
INSERT INTO pgqueue_queues AS q (namespace, queue, rate_limit, rate_duration_ms, rate_expires_at)
VALUES ($1, $2, $3::integer, $4::integer,
        statement_timestamp() + $5::bigint * interval '1 millisecond')
ON CONFLICT (namespace, queue) DO UPDATE
SET rate_limit = EXCLUDED.rate_limit,
    rate_duration_ms = EXCLUDED.rate_duration_ms,
    rate_expires_at = EXCLUDED.rate_expires_at,
    rate_window_started_at = NULL,
    rate_count = 0

-- name: queue_clear_rate_limit
-- Remove a queue's rate limit.  $1 namespace, $2 queue.
UPDATE pgqueue_queues
SET rate_limit = NULL, rate_duration_ms = NULL, rate_expires_at = NULL,
    rate_window_started_at = NULL, rate_count = 0
WHERE namespace = $1 AND queue = $2 AND rate_limit IS NOT NULL

-- name: queue_set_concurrency
-- A queue's concurrency limit: at most $3 active jobs across every broker.
-- $1 namespace, $2 queue.
INSERT INTO pgqueue_queues AS q (namespace, queue, concurrency_limit)
VALUES ($1, $2, $3::integer)
ON CONFLICT (namespace, queue) DO UPDATE SET concurrency_limit = EXCLUDED.concurrency_limit

-- name: queue_clear_concurrency
-- Remove a queue's concurrency limit.  $1 namespace, $2 queue.
UPDATE pgqueue_queues SET concurrency_limit = NULL
WHERE namespace = $1 AND queue = $2 AND concurrency_limit IS NOT NULL

-- name: queue_limits_get
-- A queue's limits as GetQueueLimits reports them, on the database clock:
-- the rate limit (NULL when none or expired), the ms left in its current
-- window (0 when no window is open; with $3 maxJobs, 0 also while fewer than
-- $3 claims were counted in it), the concurrency limit and the active jobs.
-- $1 namespace, $2 queue.
SELECT CASE WHEN live.on THEN q.rate_limit END AS rate_limit,
       CASE WHEN live.on THEN q.rate_duration_ms END AS rate_duration_ms,
       CASE WHEN live.on AND q.rate_window_started_at
                 + q.rate_duration_ms * interval '1 millisecond' > statement_timestamp()
                 AND ($3::integer IS NULL OR q.rate_count >= $3::integer)
            THEN ceil(extract(epoch FROM q.rate_window_started_at
                      + q.rate_duration_ms * interval '1 millisecond' - statement_timestamp())
                      * 1000)::bigint
            ELSE 0 END AS rate_ttl_ms,
       q.concurrency_limit,
       CASE WHEN q.concurrency_limit IS NULL THEN 0
            ELSE (SELECT count(*) FROM pgqueue_jobs a
                  WHERE a.namespace = $1 AND a.queue = $2 AND a.state = 'active') END AS active
FROM (SELECT 1) AS one
LEFT JOIN pgqueue_queues q ON q.namespace = $1 AND q.queue = $2
CROSS JOIN LATERAL (
    SELECT q.rate_limit IS NOT NULL
           AND (q.rate_expires_at IS NULL OR q.rate_expires_at > statement_timestamp()) AS on
) live
