-- fragment: job_row_live
-- The SELECT list of one job as the engine reads it (pgqueue.manager.rows), from a
-- live row `j` of pgqueue_jobs.  Its twin job_row_finished gives the same columns,
-- in the same order, from pgqueue_finished: the two are UNION-ed.
SELECT j.namespace, j.id, j.queue, j.name, j.data, j.state, j.priority, j.lifo, j.run_at,
       j.created_at, j.started_at, NULL::timestamptz AS finished_at, j.attempts,
       j.max_attempts, j.backoff_type, j.backoff_ms, j.backoff_max_ms, j.timeout_ms,
       j.ttl_ms, j.stall_timeout_ms, j.remove_on_complete, j.remove_on_fail, j.custom_id,
       j.unique_key, j.group_id, j.parent_id, j.parent_queue, j.pending_deps,
       j.stall_count, j.fence, j.lease_until, j.lease_owner, j.progress, j.progress_message,
       j.attempt_log, NULL::json AS result, NULL::text AS failed_reason, j.last_error AS error,
       j.stacktrace, j.opts, j.last_heartbeat_at, statement_timestamp() AS now

-- fragment: job_row_finished
-- The SELECT list of job_row_live from a finished row `f` of pgqueue_finished.
SELECT f.namespace, f.id, f.queue, f.name, f.data, f.state, f.priority, f.lifo,
       f.finished_at, f.created_at, f.started_at, f.finished_at, f.attempts, f.max_attempts,
       f.backoff_type, f.backoff_ms, f.backoff_max_ms, f.timeout_ms, f.ttl_ms,
       f.stall_timeout_ms, f.remove_on_complete, f.remove_on_fail, f.custom_id, f.unique_key,
       f.group_id, f.parent_id, f.parent_queue, 0, f.stall_count, f.fence, NULL, NULL,
       f.progress, f.progress_message, f.attempt_log, f.result, f.failed_reason, f.error,
       f.stacktrace, f.opts, NULL::timestamptz, statement_timestamp()

-- name: job_get
-- One job wherever it is: live or finished (not removed).  :namespace, :job_id.
-- include: job_row_live
FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.id = :job_id
UNION ALL
-- include: job_row_finished
FROM pgqueue_finished f
WHERE f.namespace = :namespace AND f.id = :job_id AND NOT f.removed
LIMIT 1

-- name: job_state_get
-- The reported state of one job: waiting, prioritized, delayed, active,
-- waiting-children, completed, failed; no row when unknown.  :namespace, :job_id.
SELECT CASE WHEN j.state = 'pending' AND j.run_at > statement_timestamp() THEN 'delayed'
            WHEN j.state = 'pending' AND j.priority > 0 THEN 'prioritized'
            WHEN j.state = 'pending' THEN 'waiting'
            ELSE j.state END AS state
FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.id = :job_id
UNION ALL
SELECT f.state FROM pgqueue_finished f
WHERE f.namespace = :namespace AND f.id = :job_id AND NOT f.removed
LIMIT 1

-- name: job_result_get
-- The stored result of a completed job (also after removeOnComplete, as its
-- completion proof).  :namespace, :job_id.
SELECT f.result, f.state
FROM pgqueue_finished f
WHERE f.namespace = :namespace AND f.id = :job_id

-- name: job_counts_by_state
-- Counts per reported state for one queue, and whether it is paused.
-- :namespace, :queue.  The live jobs are read in two parts, each through its
-- index: the listing index holds no active job (migration 0024), the active
-- index only those.
WITH live AS (
    SELECT CASE WHEN j.state = 'pending' AND j.run_at > statement_timestamp() THEN 'delayed'
                WHEN j.state = 'pending' AND j.priority > 0 THEN 'prioritized'
                WHEN j.state = 'pending' THEN 'waiting'
                ELSE j.state END AS state,
           count(*) AS n
    FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.queue = :queue AND j.state <> 'active'
    GROUP BY 1
    UNION ALL
    SELECT 'active', count(*)
    FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.queue = :queue AND j.state = 'active'
    HAVING count(*) > 0
), done AS (
    SELECT f.state, count(*) AS n
    FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND f.queue = :queue AND NOT f.removed
    GROUP BY 1
)
SELECT state, n::bigint AS n FROM live
UNION ALL
SELECT state, n::bigint FROM done
UNION ALL
SELECT 'paused', CASE WHEN coalesce((SELECT paused FROM pgqueue_queues
                                     WHERE namespace = :namespace AND queue = :queue), false)
                      THEN 1 ELSE 0 END

-- name: job_children_values
-- Results of a parent's completed children.  :namespace, :parent_id.
SELECT f.id, f.queue, f.result
FROM pgqueue_finished f
WHERE f.namespace = :namespace AND f.parent_id = :parent_id AND f.state = 'completed'
ORDER BY f.finished_at, f.id

-- name: job_children_failures
-- Failed children of a parent, their errors and the policy they applied
-- (flow_failure_mode), also those removed on fail: their hidden row is kept
-- while the parent is live, which is when it reads them.  :namespace,
-- :parent_id.
SELECT f.id, f.queue, coalesce(f.error, f.failed_reason, '') AS reason,
-- include: flow_failure_mode(opts=f.opts, parent=f.parent_id)
       AS mode
FROM pgqueue_finished f
WHERE f.namespace = :namespace AND f.parent_id = :parent_id AND f.state = 'failed'
ORDER BY f.finished_at, f.id

-- name: job_get_by_ids
-- Several jobs (live or finished, not removed) by id, in no particular order.
-- :namespace, :job_ids.
-- include: job_row_live
FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.id = ANY(:job_ids::text[])
UNION ALL
-- include: job_row_finished
FROM pgqueue_finished f
WHERE f.namespace = :namespace AND f.id = ANY(:job_ids::text[]) AND NOT f.removed

-- name: queue_counts_all
-- Counts per queue and reported state for a whole namespace (the projection's
-- cached counts), plus a 'paused' row of 1 for each paused queue.  :namespace.
SELECT s.queue, s.state, count(*)::bigint AS n
FROM (
    SELECT j.queue,
           CASE WHEN j.state = 'pending' AND j.run_at > statement_timestamp() THEN 'delayed'
                WHEN j.state = 'pending' AND j.priority > 0 THEN 'prioritized'
                WHEN j.state = 'pending' THEN 'waiting'
                ELSE j.state END AS state
    FROM pgqueue_jobs j
    WHERE j.namespace = :namespace
    UNION ALL
    SELECT f.queue, f.state
    FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND NOT f.removed
) AS s
GROUP BY s.queue, s.state
UNION ALL
SELECT q.queue, 'paused', 1::bigint FROM pgqueue_queues q WHERE q.namespace = :namespace AND q.paused
