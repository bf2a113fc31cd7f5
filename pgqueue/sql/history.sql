-- name: history_live_jobs
-- The checker's read of the live jobs of a run's queues (:namespace, :names queues).
SELECT id, queue, custom_id, state, fence, attempts, stall_count
FROM pgqueue_jobs
WHERE namespace = :namespace AND queue = ANY(:names::text[])

-- name: history_finished_jobs
-- The checker's read of the finished jobs of a run's queues (:namespace,
-- :names queues), with each result as the text stored.
SELECT id, queue, custom_id, state, fence, attempts, stall_count, result::text AS result,
       failed_reason, removed
FROM pgqueue_finished
WHERE namespace = :namespace AND queue = ANY(:names::text[])

-- name: history_dlq_entries
-- The checker's read of the DLQ of a run's queues (:namespace, :names queues):
-- each entry with its reason and its attempt log (number, reason, start and
-- end in ms; a stall is an entry too), in order.
SELECT d.job_id, d.queue, d.reason,
       coalesce(array_agg((a ->> 'attempt')::int ORDER BY ord) FILTER (WHERE a IS NOT NULL),
                '{}') AS attempt,
       coalesce(array_agg(a ->> 'reason' ORDER BY ord) FILTER (WHERE a IS NOT NULL),
                '{}') AS reasons,
       coalesce(array_agg((a ->> 'startedAt')::float8 ORDER BY ord) FILTER (WHERE a IS NOT NULL),
                '{}') AS started,
       coalesce(array_agg((a ->> 'failedAt')::float8 ORDER BY ord) FILTER (WHERE a IS NOT NULL),
                '{}') AS failed
FROM pgqueue_dlq d
LEFT JOIN LATERAL jsonb_array_elements(d.attempts) WITH ORDINALITY AS x(a, ord) ON true
WHERE d.namespace = :namespace AND d.queue = ANY(:names::text[])
GROUP BY d.job_id, d.queue, d.reason

-- name: history_events
-- The checker's read of the outbox of a run's queues (:namespace, :names
-- queues), in id order, with each event's database time in ms.
SELECT id, queue, job_id, type, (extract(epoch FROM created_at) * 1000)::float8 AS ts,
       payload::text AS payload
FROM pgqueue_events
WHERE namespace = :namespace AND queue = ANY(:names::text[])
ORDER BY id
