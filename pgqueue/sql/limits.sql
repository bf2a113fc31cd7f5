-- name: queue_set_rate_limit
-- Parameters, in order: :namespace, :queue, :limit, :duration_ms, :ttl_ms.
-- A queue's rate limit for every broker: :limit claims per :duration_ms window (a fixed
-- window opened by the first claim after the previous one closed), expiring
-- after :ttl_ms (NULL: never).  The window starts afresh.  :namespace, :queue.
INSERT INTO pgqueue_queues AS q (namespace, queue, rate_limit, rate_duration_ms, rate_expires_at)
VALUES (:namespace, :queue, :limit::integer, :duration_ms::integer,
        statement_timestamp() + :ttl_ms::bigint * interval '1 millisecond')
ON CONFLICT (namespace, queue) DO UPDATE
SET rate_limit = EXCLUDED.rate_limit,
    rate_duration_ms = EXCLUDED.rate_duration_ms,
    rate_expires_at = EXCLUDED.rate_expires_at,
    rate_window_started_at = NULL,
    rate_count = 0

-- name: queue_clear_rate_limit
-- Remove a queue's rate limit.  :namespace, :queue.
UPDATE pgqueue_queues
SET rate_limit = NULL, rate_duration_ms = NULL, rate_expires_at = NULL,
    rate_window_started_at = NULL, rate_count = 0
WHERE namespace = :namespace AND queue = :queue AND rate_limit IS NOT NULL

-- name: queue_set_concurrency
-- Parameters, in order: :namespace, :queue, :limit.
-- A queue's concurrency limit: at most :limit active jobs across every broker.
-- :namespace, :queue.
INSERT INTO pgqueue_queues AS q (namespace, queue, concurrency_limit)
VALUES (:namespace, :queue, :limit::integer)
ON CONFLICT (namespace, queue) DO UPDATE SET concurrency_limit = EXCLUDED.concurrency_limit

-- name: queue_clear_concurrency
-- Remove a queue's concurrency limit.  :namespace, :queue.
UPDATE pgqueue_queues SET concurrency_limit = NULL
WHERE namespace = :namespace AND queue = :queue AND concurrency_limit IS NOT NULL

-- name: queue_limits_get
-- Parameters, in order: :namespace, :queue, :max_jobs.
-- A queue's limits as GetQueueLimits reports them, on the database clock:
-- the rate limit (NULL when none or expired), the ms left in its current
-- window (0 when no window is open; with :max_jobs maxJobs, 0 also while fewer than
-- :max_jobs claims were counted in it), the concurrency limit and the active jobs.
-- :namespace, :queue.
SELECT CASE WHEN live.on THEN q.rate_limit END AS rate_limit,
       CASE WHEN live.on THEN q.rate_duration_ms END AS rate_duration_ms,
       CASE WHEN live.on AND q.rate_window_started_at
                 + q.rate_duration_ms * interval '1 millisecond' > statement_timestamp()
                 AND (:max_jobs::integer IS NULL OR q.rate_count >= :max_jobs::integer)
            THEN ceil(extract(epoch FROM q.rate_window_started_at
                      + q.rate_duration_ms * interval '1 millisecond' - statement_timestamp())
                      * 1000)::bigint
            ELSE 0 END AS rate_ttl_ms,
       q.concurrency_limit,
       CASE WHEN q.concurrency_limit IS NULL THEN 0
            ELSE (SELECT count(*) FROM pgqueue_jobs a
                  WHERE a.namespace = :namespace AND a.queue = :queue AND a.state = 'active') END AS active
FROM (SELECT 1) AS one
LEFT JOIN pgqueue_queues q ON q.namespace = :namespace AND q.queue = :queue
CROSS JOIN LATERAL (
    SELECT q.rate_limit IS NOT NULL
           AND (q.rate_expires_at IS NULL OR q.rate_expires_at > statement_timestamp()) AS on
) live
