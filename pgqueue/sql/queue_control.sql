-- name: queue_set_paused
-- Parameters, in order: :namespace, :queue, :paused.
-- Pause (:paused true) or resume a queue for every broker (claims read this row in
-- SQL), with a 'paused' / 'resumed' event (job_id NULL) and a NOTIFY hint
-- that wakes long-polling claims on a resume.  :namespace, :queue.
WITH upserted AS (
    INSERT INTO pgqueue_queues AS q (namespace, queue, paused)
    VALUES (:namespace, :queue, :paused::bool)
    ON CONFLICT (namespace, queue) DO UPDATE SET paused = EXCLUDED.paused
    RETURNING q.queue, q.paused
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, u.queue, NULL, CASE WHEN u.paused THEN 'paused' ELSE 'resumed' END, '{}'::jsonb
    FROM upserted u
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=:namespace)
)
SELECT u.paused FROM upserted u, (SELECT count(*) FROM notified) AS hint

-- name: queue_is_paused
-- Whether a queue is paused.  :namespace, :queue.
SELECT coalesce((SELECT q.paused FROM pgqueue_queues q
                 WHERE q.namespace = :namespace AND q.queue = :queue), false) AS paused

-- name: job_lock_pending_page
-- Parameters, in order: :namespace, :queue, :states, :grace_ms, :after_created_at, :after_id, :limit.
-- Lock the next page of a queue's pending jobs in the reported states :states
-- (waiting, prioritized, delayed), created at least :grace_ms ago (NULL: any
-- age), after the cursor (:after_created_at, :after_id; NULL: from the start), in
-- listing order, skipping rows other transactions hold.  :namespace,
-- :queue, :limit.  Returns id, fence, state, created_at.
SELECT j.id, j.fence, j.state, j.created_at
FROM pgqueue_jobs j
WHERE j.namespace = :namespace
  AND j.queue = :queue
  AND j.state = 'pending'
  AND (CASE WHEN j.run_at > statement_timestamp() THEN 'delayed'
            WHEN j.priority > 0 THEN 'prioritized'
            ELSE 'waiting' END) = ANY(:states::text[])
  AND (:grace_ms::bigint IS NULL
       OR j.created_at <= statement_timestamp() - :grace_ms::bigint * interval '1 millisecond')
  AND (:after_created_at::timestamptz IS NULL OR (j.created_at, j.id) > (:after_created_at::timestamptz, :after_id::text))
ORDER BY j.created_at, j.id
LIMIT :limit
FOR UPDATE SKIP LOCKED

-- name: job_finished_delete_page
-- Parameters, in order: :namespace, :queue, :state, :grace_ms, :limit, :reason.
-- Delete up to :limit finished jobs of queue :queue in state :state that finished at
-- least :grace_ms ago, oldest first, with their DLQ entries and logs; a failed
-- job that live jobs still wait on is kept, and so is a flow child whose
-- parent is live or dead-lettered (the parent reads its result or error
-- when it runs, also after a redrive).  The caller then drops the edges
-- dead dependents kept towards them (dependency_edges_drop_dangling).
-- One 'removed' event each ({"prev": state, "reason": :reason}) and one NOTIFY
-- hint.  :namespace.  Returns the deleted ids.
WITH picked AS (
    SELECT f.id
    FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND f.queue = :queue AND f.state = :state AND NOT f.removed
      AND f.finished_at <= statement_timestamp() - :grace_ms::bigint * interval '1 millisecond'
      AND NOT EXISTS (SELECT 1 FROM pgqueue_dependencies d
                      JOIN pgqueue_jobs dj ON dj.namespace = d.namespace AND dj.id = d.job_id
                      WHERE d.namespace = :namespace AND d.depends_on = f.id)
      -- include: finished_parent_gone
    ORDER BY f.finished_at  -- a finish statement's jobs share it: any of them
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
), deleted AS (
    DELETE FROM pgqueue_finished f
    USING picked p
    WHERE f.namespace = :namespace AND f.id = p.id
    RETURNING f.id, f.queue, f.state, f.finished_at
), dlq AS (
    DELETE FROM pgqueue_dlq d USING deleted x WHERE d.namespace = :namespace AND d.job_id = x.id
), logs AS (
    DELETE FROM pgqueue_job_logs l USING deleted x WHERE l.namespace = :namespace AND l.job_id = x.id
),
-- include: removed_events(rows=deleted, prev=r.state, reason=:reason::text)
SELECT x.id FROM deleted x, (SELECT count(*) FROM notified) AS hint
ORDER BY x.finished_at, x.id

-- name: queue_event_insert
-- One queue-level event (job_id NULL) and its NOTIFY hint.  :namespace,
-- :queue, :summary type, :payload.
WITH events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    VALUES (:namespace, :queue, NULL, :summary, :payload::jsonb)
    RETURNING id, queue
)
-- include: notify_hint(namespace=:namespace)

-- name: queue_obliterate_begin
-- Start obliterating a queue: pause it (claims stop on every broker) and
-- count its active jobs.  :namespace, :queue.
WITH paused AS (
    INSERT INTO pgqueue_queues AS q (namespace, queue, paused)
    VALUES (:namespace, :queue, true)
    ON CONFLICT (namespace, queue) DO UPDATE SET paused = true
    RETURNING q.queue
)
SELECT (SELECT count(*) FROM pgqueue_jobs j
        WHERE j.namespace = :namespace AND j.queue = :queue AND j.state = 'active')::bigint AS active,
       (SELECT count(*) FROM paused)::int AS registered

-- fragment: obliterated_jobs_pick
-- The start of an obliterate page: up to :limit rows `j` of {table} in queue
-- :queue of :namespace that pass {when}, locked (`picked`) and deleted
-- (`deleted`: their id, state, parent_id, opts); the includer's CTEs follow.
WITH picked AS (
    SELECT j.id FROM {table} j
    WHERE j.namespace = :namespace AND j.queue = :queue AND {when}
    LIMIT :limit
    FOR UPDATE
), deleted AS (
    DELETE FROM {table} j USING picked p
    WHERE j.namespace = :namespace AND j.id = p.id
    RETURNING j.id, j.state, j.parent_id, j.opts
),

-- fragment: obliterated_jobs_rest
-- The end of an obliterate page: the own dependency edges and the logs of the
-- jobs in `deleted` go too; returns their id, state, parent_id, opts.  :namespace.
own_edges AS (
    DELETE FROM pgqueue_dependencies d USING deleted x
    WHERE d.namespace = :namespace AND d.job_id = x.id
), logs AS (
    DELETE FROM pgqueue_job_logs l USING deleted x WHERE l.namespace = :namespace AND l.job_id = x.id
)
SELECT x.id, x.state, x.parent_id, x.opts FROM deleted x

-- name: job_obliterate_live_page
-- Parameters, in order: :namespace, :queue, :with_active, :limit.
-- Delete up to :limit live jobs of queue :queue (active ones only when :with_active) with
-- their own dependency edges and logs.  The edges pointing to them stay for
-- the caller, who settles their dependents in a second statement of the same
-- transaction (lost_dependencies.py).  No per-job event: the 'obliterated'
-- event covers them.  :namespace.  Returns id, state, parent_id, opts of
-- each deleted job.
-- Picked in two parts, each through its index: the listing index holds no
-- active job (migration 0024), the active index only those.
WITH idle AS (
    SELECT j.id FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.queue = :queue AND j.state <> 'active'
    LIMIT :limit
    FOR UPDATE
), active AS (
    SELECT j.id FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.queue = :queue AND j.state = 'active'
      AND :with_active::bool
    LIMIT :limit - (SELECT count(*) FROM idle)
    FOR UPDATE
), picked AS (
    SELECT id FROM idle
    UNION ALL
    SELECT id FROM active
), deleted AS (
    DELETE FROM pgqueue_jobs j USING picked p
    WHERE j.namespace = :namespace AND j.id = p.id
    RETURNING j.id, j.state, j.parent_id, j.opts
),
-- include: obliterated_jobs_rest

-- name: job_obliterate_finished_page
-- Parameters, in order: :namespace, :queue, :limit.
-- Delete up to :limit finished jobs of queue :queue with their DLQ entries, their
-- own edges and logs; the edges pointing to them stay for the caller, as in
-- job_obliterate_live_page.  :namespace.  Returns id, state, parent_id,
-- opts of each deleted job.
-- include: obliterated_jobs_pick(table=pgqueue_finished, when=true)
dlq AS (
    DELETE FROM pgqueue_dlq d USING deleted x WHERE d.namespace = :namespace AND d.job_id = x.id
),
-- include: obliterated_jobs_rest

-- name: queue_obliterate_finish
-- Parameters, in order: :namespace, :queue, :payload.
-- End an obliterate: drop the queue's remaining DLQ entries and its registry
-- row (settings and pause go with it), with an 'obliterated' event (:payload) and a NOTIFY hint.  :namespace, :queue.
WITH dlq AS (
    DELETE FROM pgqueue_dlq d WHERE d.namespace = :namespace AND d.queue = :queue
), registry AS (
    DELETE FROM pgqueue_queues q WHERE q.namespace = :namespace AND q.queue = :queue
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    VALUES (:namespace, :queue, NULL, 'obliterated', :payload::jsonb)
    RETURNING id, queue
)
-- include: notify_hint(namespace=:namespace)

-- name: job_retry_completed
-- Parameters, in order: :namespace, :queue, :job_id, :before, :limit, :after_finished_at, :after_id.
-- Re-admit up to :limit completed jobs of queue :queue (only job :job_id when not NULL;
-- only those finished at or before :before ms since the epoch when not NULL),
-- oldest first after the cursor (:after_finished_at, :after_id; NULL: from the
-- start), as new pending generations: attempts, stalls and progress start
-- over, the fence keeps counting, the completion row goes.  A job whose
-- unique key a live job holds now stays completed.  One 'retried' event each
-- ({"prev": "completed"}) and a NOTIFY hint.  :namespace.  Returns how
-- many were retried, how many looked at, and the cursor after them.
WITH picked AS (
    SELECT f.*
    FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND f.queue = :queue AND f.state = 'completed' AND NOT f.removed
      AND (:job_id::text IS NULL OR f.id = :job_id::text)
      AND (:before::float8 IS NULL OR f.finished_at <= to_timestamp(:before::float8 / 1000.0))
      AND (:after_finished_at::timestamptz IS NULL OR (f.finished_at, f.id) > (:after_finished_at::timestamptz, :after_id::text))
    ORDER BY f.finished_at, f.id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
), readmitted AS (
    INSERT INTO pgqueue_jobs (
        namespace, id, queue, name, data, state, priority, lifo, lifo_seq, run_at,
        created_at, expires_at, attempts, max_attempts, backoff_type, backoff_ms,
        backoff_max_ms, timeout_ms, ttl_ms, stall_timeout_ms, remove_on_complete,
        remove_on_fail, custom_id, unique_key, group_id, parent_id, parent_queue,
        pending_deps, has_dependents, stall_count, fence, opts, unique_expires_at)
    SELECT :namespace, p.id, p.queue, p.name, coalesce(p.data, 'null'::json), 'pending', p.priority,
           p.lifo, CASE WHEN p.lifo THEN nextval('pgqueue_lifo_seq') END,
           statement_timestamp(), p.created_at,
           statement_timestamp() + p.ttl_ms * interval '1 millisecond',
           0, p.max_attempts, p.backoff_type, p.backoff_ms, p.backoff_max_ms, p.timeout_ms,
           p.ttl_ms, p.stall_timeout_ms, p.remove_on_complete, p.remove_on_fail, p.custom_id,
           p.unique_key, p.group_id, p.parent_id, p.parent_queue, 0, false, 0, p.fence, p.opts,
           p.unique_expires_at
    FROM picked p
    ORDER BY p.finished_at, p.id
    ON CONFLICT DO NOTHING
    RETURNING id, queue
), retired AS (
    DELETE FROM pgqueue_finished f USING readmitted r
    WHERE f.namespace = :namespace AND f.id = r.id
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, r.queue, r.id, 'retried', '{"prev": "completed"}'::jsonb FROM readmitted r
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=:namespace)
), last AS (
    SELECT p.finished_at, p.id FROM picked p ORDER BY p.finished_at DESC, p.id DESC LIMIT 1
)
SELECT (SELECT count(*) FROM readmitted)::int AS retried,
       (SELECT count(*) FROM picked)::int AS picked,
       (SELECT finished_at FROM last) AS after_finished_at,
       (SELECT id FROM last) AS after_id,
       h.count AS hint
FROM (SELECT count(*) FROM notified) AS h
