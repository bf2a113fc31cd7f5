-- name: queue_alert_figures
-- The figures an operator alerts on in namespace :namespace, one row per queue
-- of :queues, each read through an index (tests/integration/test_figures_plan.py):
--   * the oldest waiting job: the first due pending job in admission order (the
--     listing index, (namespace, queue, state, created_at, id)), and how long it
--     has waited since it became due (greatest(created_at, run_at));
--   * the oldest job in retry: the first pending job with an attempt behind it, in
--     admission order (same index), and its age since its first attempt began;
--   * active jobs (the listing index, counted);
--   * the queue's concurrency and rate limits and the current rate window, when
--     the schema has them: read through to_jsonb(q) so that the statement runs on
--     a schema with or without those columns (NULL when absent).
-- Ages are in ms on the database clock.
SELECT n.queue,
       w.id AS oldest_waiting_id,
       (extract(epoch FROM clock_timestamp() - greatest(w.created_at, w.run_at)) * 1000)::float8
           AS oldest_waiting_ms,
       r.id AS oldest_retry_id,
       (extract(epoch FROM clock_timestamp()) * 1000
        - coalesce((r.attempt_log -> 0 ->> 'startedAt')::float8,
                   extract(epoch FROM r.created_at) * 1000))::float8 AS oldest_retry_ms,
       r.attempts AS oldest_retry_attempts,
       a.active,
       (to_jsonb(q) ->> 'concurrency_limit')::int AS concurrency_limit,
       (to_jsonb(q) ->> 'rate_limit')::int AS rate_limit,
       (to_jsonb(q) ->> 'rate_duration_ms')::bigint AS rate_duration_ms,
       (to_jsonb(q) ->> 'rate_count')::int AS rate_count,
       (extract(epoch FROM clock_timestamp()
                - (to_jsonb(q) ->> 'rate_window_started_at')::timestamptz) * 1000)::float8
           AS rate_window_age_ms,
       coalesce(q.paused, false) AS paused
FROM unnest(:queues::text[]) AS n(queue)
LEFT JOIN pgqueue_queues q ON q.namespace = :namespace AND q.queue = n.queue
LEFT JOIN LATERAL (
    SELECT j.id, j.created_at, j.run_at
    FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.queue = n.queue AND j.state = 'pending'
      AND j.run_at <= statement_timestamp()
    ORDER BY j.created_at, j.id
    LIMIT 1
) w ON true
LEFT JOIN LATERAL (
    SELECT j.id, j.created_at, j.attempts, j.attempt_log
    FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.queue = n.queue AND j.state = 'pending'
      AND j.attempts > 0
    ORDER BY j.created_at, j.id
    LIMIT 1
) r ON true
CROSS JOIN LATERAL (
    SELECT count(*)::bigint AS active
    FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.queue = n.queue AND j.state = 'active'
) a
ORDER BY n.queue

-- name: dlq_size_by_reason
-- Dead-lettered entries per queue and reason (the DLQ's reason index).  :namespace.
SELECT d.queue, d.reason, count(*)::bigint AS entries
FROM pgqueue_dlq d
WHERE d.namespace = :namespace
GROUP BY d.queue, d.reason
ORDER BY d.queue, d.reason

-- name: worker_slots
-- Parameters, in order: :namespace, :worker_stale_ms.
-- Worker slots per queue of the workers seen within :worker_stale_ms: registered
-- (concurrency) and busy (the active jobs of their last heartbeat).  :namespace.
SELECT s.queue, count(*)::bigint AS workers,
       sum(w.concurrency)::bigint AS slots, sum(w.active_jobs)::bigint AS busy
FROM pgqueue_workers w
CROSS JOIN LATERAL unnest(w.queues) AS s(queue)
WHERE w.namespace = :namespace
  AND w.last_seen > clock_timestamp() - :worker_stale_ms::bigint * interval '1 millisecond'
GROUP BY s.queue
ORDER BY s.queue

-- name: table_sizes
-- The on-disk size of pgqueue's tables (with their indexes and TOAST), in bytes.
SELECT c.relname AS table_name, pg_total_relation_size(c.oid)::bigint AS bytes
FROM pg_class c
WHERE c.relkind = 'r' AND c.relname LIKE 'pgqueue\_%'
  AND c.relnamespace = to_regnamespace(current_schema())
ORDER BY c.relname

-- name: job_lease_holder
-- Who holds a live job's lease: the broker, its session, the worker (owner)
-- and until when (ms), on the database clock.  :namespace, :job_id.  No row:
-- the job is not live.
SELECT j.state, j.lease_broker, j.lease_session::text AS lease_session, j.lease_owner,
       (extract(epoch FROM j.lease_until) * 1000)::float8 AS lease_until,
       (extract(epoch FROM j.lease_until - clock_timestamp()) * 1000)::float8 AS lease_left_ms
FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.id = :job_id

-- name: job_timeline
-- Parameters, in order: :namespace, :job_id, :limit.
-- A job's state changes still in the outbox (its index on job_id),
-- oldest first, at most :limit.  :namespace, :job_id.
-- A claim writes its `active` event only while someone wants it (migration
-- 0027): when the outbox kept none for the job, its claims come from the job's
-- row instead (live or finished): each attempt of its attempt log, then its
-- last claim (started_at), as `active` entries at the instant the event would
-- have had, with the attempt's number as payload.
WITH stored AS (
    SELECT e.id, e.type, e.created_at, e.payload::text AS payload
    FROM pgqueue_events e
    WHERE e.namespace = :namespace AND e.job_id = :job_id
    ORDER BY e.id
    LIMIT :limit::int
), job AS (
    SELECT j.started_at, j.attempt_log FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.id = :job_id
    UNION ALL
    SELECT f.started_at, f.attempt_log FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND f.id = :job_id
), claims AS (
    SELECT to_timestamp((a ->> 'startedAt')::float8 / 1000) AS at, (a ->> 'attempt')::int AS attempt
    FROM job CROSS JOIN LATERAL jsonb_array_elements(job.attempt_log) AS a
    WHERE a ->> 'startedAt' IS NOT NULL
    UNION
    SELECT job.started_at, jsonb_array_length(job.attempt_log) + 1 FROM job
    WHERE job.started_at IS NOT NULL
), entries AS (  -- in the outbox's order; a claim before the first event after it
    SELECT s.id AS place, 1 AS rank, s.type, s.created_at, s.payload FROM stored s
    UNION ALL
    SELECT coalesce((SELECT min(s.id) FROM stored s WHERE s.created_at > c.at), 9223372036854775807),
           0, 'active', c.at, json_build_object('attempt', c.attempt)::text
    FROM claims c
    WHERE NOT EXISTS (SELECT 1 FROM stored s WHERE s.type = 'active')
)
SELECT x.type, (extract(epoch FROM x.created_at) * 1000)::float8 AS at, x.payload
FROM entries x
ORDER BY x.place, x.rank, x.created_at
LIMIT :limit::int
