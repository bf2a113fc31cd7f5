-- fragment: job_events_then_ids
-- The end of a statement that changes single jobs: one event per row of the
-- CTE {rows} (its id, queue, type and payload), the NOTIFY hint, and the rows'
-- ids as the result.  :namespace.
events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, r.queue, r.id, r.type, r.payload FROM {rows} r
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=:namespace)
)
SELECT r.id FROM {rows} r, (SELECT count(*) FROM notified) AS hint

-- fragment: removed_events
-- The CTEs `events` and `notified` of a statement that removes jobs: a
-- 'removed' event for each row `r` of the CTE {rows} (its id and queue), with
-- the payload {"prev": {prev}, "reason": {reason}}, and the NOTIFY hint.  :namespace.
events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, r.queue, r.id, 'removed', jsonb_build_object('prev', {prev}, 'reason', {reason})
    FROM {rows} r
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=:namespace)
)

-- name: job_control_probe
-- Parameters, in order: :namespace, :job_id, :token, :broker_id, :session_id.
-- Why a job control statement missed: the job's reported state (waiting,
-- prioritized, delayed, active, waiting-children, completed, failed; no row
-- when unknown), whether token :token holds its current lease, its unresolved
-- dependency count and whether the broker session (:broker_id, :session_id) is live.  :namespace, :job_id.
SELECT s.state, s.queue, s.fence, s.pending_deps, s.lease_valid,
       EXISTS (SELECT 1 FROM pgqueue_brokers b
               WHERE b.namespace = :namespace AND b.broker_id = :broker_id AND b.session_id = :session_id::uuid)
           AS session_live
FROM (
    SELECT CASE WHEN j.state = 'pending' AND j.run_at > statement_timestamp() THEN 'delayed'
                WHEN j.state = 'pending' AND j.priority > 0 THEN 'prioritized'
                WHEN j.state = 'pending' THEN 'waiting'
                ELSE j.state END AS state,
           j.queue, j.fence, j.pending_deps,
           coalesce(j.state = 'active' AND j.lease_token = :token::text
                    AND j.lease_until > statement_timestamp(), false) AS lease_valid
    FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.id = :job_id
    UNION ALL
    SELECT f.state, f.queue, f.fence, 0, false
    FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND f.id = :job_id AND NOT f.removed
    LIMIT 1
) AS s

-- name: job_lock_one
-- Parameters, in order: :namespace, :job_id, :token.
-- Lock one live job for a control operation that decides in Python.  Returns
-- its stored state, reported state, fence, and whether token :token holds its
-- current lease.  :namespace, :job_id.
SELECT j.id, j.queue, j.state AS stored_state, j.fence,
       CASE WHEN j.state = 'pending' AND j.run_at > statement_timestamp() THEN 'delayed'
            WHEN j.state = 'pending' AND j.priority > 0 THEN 'prioritized'
            WHEN j.state = 'pending' THEN 'waiting'
            ELSE j.state END AS state,
       coalesce(j.state = 'active' AND j.lease_token = :token::text
                AND j.lease_until > statement_timestamp(), false) AS lease_valid
FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.id = :job_id
FOR UPDATE

-- name: job_delete_many
-- Parameters, in order: :namespace, :ids, :fences, :expected_states, :reason.
-- Delete live jobs that the caller locked (remove, drain, clean), each a
-- compare-and-set on (id, state, fence).  A job that live jobs still depend
-- on is kept (deleting it would strand them) and reported as blocked; run
-- this in the transaction that locked the rows, as its own statement, so its
-- snapshot sees every dependency edge committed before the lock.  Drops the
-- deleted jobs' own edges and logs, writes a 'removed' event each
-- ({"prev": reported state, "reason": :reason}) and one NOTIFY hint.
-- :namespace, :ids, :fences, :expected_states expected stored states (aligned).
-- Returns outcome ('removed' | 'blocked'), id, prev state, blockers.
WITH input AS (
    SELECT * FROM unnest(:ids::text[], :fences::bigint[], :expected_states::text[]) AS t(id, fence, expected_state)
), blocked AS (
    SELECT d.depends_on AS id, count(*)::int AS blockers
    FROM pgqueue_dependencies d
    JOIN pgqueue_jobs dj ON dj.namespace = d.namespace AND dj.id = d.job_id
    WHERE d.namespace = :namespace AND d.depends_on = ANY(:ids::text[])
    GROUP BY d.depends_on
), removed AS (
    DELETE FROM pgqueue_jobs j
    USING input i
    -- include: job_compare_and_set
      AND NOT EXISTS (SELECT 1 FROM blocked b WHERE b.id = j.id)
    RETURNING j.id, j.queue,
              CASE WHEN j.state = 'pending' AND j.run_at > statement_timestamp() THEN 'delayed'
                   WHEN j.state = 'pending' AND j.priority > 0 THEN 'prioritized'
                   WHEN j.state = 'pending' THEN 'waiting'
                   ELSE j.state END AS prev
), own_edges AS (
    DELETE FROM pgqueue_dependencies d
    USING removed r
    WHERE d.namespace = :namespace AND d.job_id = r.id
), stale_edges AS (
    DELETE FROM pgqueue_dependencies d
    USING removed r
    WHERE d.namespace = :namespace AND d.depends_on = r.id
), logs AS (
    DELETE FROM pgqueue_job_logs l
    USING removed r
    WHERE l.namespace = :namespace AND l.job_id = r.id
),
-- include: removed_events(rows=removed, prev=r.prev, reason=:reason::text)
SELECT 'removed' AS outcome, r.id, r.prev, 0 AS blockers
FROM removed r, (SELECT count(*) FROM notified) AS hint
UNION ALL
SELECT 'blocked', b.id, NULL, b.blockers
FROM blocked b

-- name: job_cancel_active
-- Cancel an active job that the caller locked (a compare-and-set on (id,
-- active, fence), whoever holds its lease): it leaves the hot table for a
-- hidden row of pgqueue_finished (state failed, failed_reason 'cancelled',
-- removed, fence and token salt kept), so that its worker's next heartbeat
-- learns it was cancelled and a late ACK or FAIL is answered
-- already-finalized.  Kept (blocked) while live jobs depend on it, like any
-- cancel.  Its edges and logs go; one 'removed' event (prev active, reason
-- cancel) and the NOTIFY hint.  Run it as its own statement after the lock
-- (its snapshot then sees every edge committed before).  :namespace, :id,
-- :fence.  Returns outcome ('removed' | 'blocked') and blockers.
WITH blocked AS (
    SELECT count(*)::int AS n
    FROM pgqueue_dependencies d
    JOIN pgqueue_jobs dj ON dj.namespace = d.namespace AND dj.id = d.job_id
    WHERE d.namespace = :namespace AND d.depends_on = :id
), done AS (
    DELETE FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.id = :id AND j.state = 'active'
      AND j.fence = :fence::bigint AND (SELECT n FROM blocked) = 0
    RETURNING j.*, 'failed'::text AS outcome, NULL::json AS result,
              'cancelled'::text AS failed_reason, 'Job cancelled'::text AS error_text,
              NULL::json AS new_stacktrace, j.attempt_log AS new_attempt_log,
              j.attempts AS new_attempts, true AS removed
), archived AS (
    -- include: job_archive(rows=done, namespace=:namespace, opts=d.opts)
), edges AS (
    DELETE FROM pgqueue_dependencies d
    USING done r
    WHERE d.namespace = :namespace AND (d.job_id = r.id OR d.depends_on = r.id)
), logs AS (
    DELETE FROM pgqueue_job_logs l
    USING done r
    WHERE l.namespace = :namespace AND l.job_id = r.id
),
-- include: removed_events(rows=done, prev='active', reason='cancel')
SELECT 'removed' AS outcome, 0 AS blockers
FROM done r, (SELECT count(*) FROM notified) AS hint
UNION ALL
SELECT 'blocked', b.n FROM blocked b WHERE b.n > 0

-- name: job_finished_remove
-- Remove a finished job: a completed one is hidden (its completion proof
-- stays for later dependsOn), a failed one is deleted with its DLQ entry,
-- unless live jobs still wait on it.  Its logs go too.  One 'removed' event.
-- The caller then drops the edges dead dependents kept towards a deleted
-- failed job (dependency_edges_drop_dangling), in the same transaction.
-- :namespace, :job_id.  Returns state, blockers, removed (no row: unknown).
WITH target AS (
    SELECT f.id, f.queue, f.state
    FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND f.id = :job_id AND NOT f.removed
    FOR UPDATE
), blocked AS (
    SELECT count(*)::int AS n
    FROM pgqueue_dependencies d
    JOIN pgqueue_jobs dj ON dj.namespace = d.namespace AND dj.id = d.job_id
    WHERE d.namespace = :namespace AND d.depends_on = :job_id
), hidden AS (
    UPDATE pgqueue_finished f SET removed = true
    FROM target t
    WHERE f.namespace = :namespace AND f.id = t.id AND t.state = 'completed'
    RETURNING f.id, f.queue, f.state
), deleted AS (
    DELETE FROM pgqueue_finished f
    USING target t
    WHERE f.namespace = :namespace AND f.id = t.id AND t.state = 'failed'
      AND (SELECT n FROM blocked) = 0
    RETURNING f.id, f.queue, f.state
), gone AS (
    SELECT * FROM hidden UNION ALL SELECT * FROM deleted
), dlq AS (
    DELETE FROM pgqueue_dlq d USING gone g WHERE d.namespace = :namespace AND d.job_id = g.id
), logs AS (
    DELETE FROM pgqueue_job_logs l USING gone g WHERE l.namespace = :namespace AND l.job_id = g.id
),
-- include: removed_events(rows=gone, prev=r.state, reason='cancel')
SELECT t.state, (SELECT n FROM blocked) AS blockers, EXISTS (SELECT 1 FROM gone) AS removed
FROM target t, (SELECT count(*) FROM notified) AS hint

-- name: job_update_data
-- Replace a live job's data, with an 'updated' event.  :namespace, :job_id,
-- :text data (JSON text).  Returns the job's id (no row: no live job).
WITH updated AS (
    UPDATE pgqueue_jobs j SET data = :text::json
    WHERE j.namespace = :namespace AND j.id = :job_id
    RETURNING j.id, j.queue, 'updated'::text AS type, '{"fields": ["data"]}'::jsonb AS payload
),
-- include: job_events_then_ids(rows=updated)

-- name: job_change_priority
-- Parameters, in order: :namespace, :job_id, :priority, :lifo.
-- Change the priority (and LIFO flag, when :lifo is not NULL) of a pending job;
-- it keeps its place in time.  :namespace, :job_id, :priority, :lifo.
-- Returns the job's id (no row: no pending job).
WITH changed AS (
    UPDATE pgqueue_jobs j
    SET priority = :priority::int,
        lifo = coalesce(:lifo::bool, j.lifo),
        lifo_seq = CASE WHEN coalesce(:lifo::bool, j.lifo) AND j.lifo_seq IS NULL
                        THEN nextval('pgqueue_lifo_seq') ELSE j.lifo_seq END
    WHERE j.namespace = :namespace AND j.id = :job_id AND j.state = 'pending'
    RETURNING j.id, j.queue, 'priority'::text AS type,
              jsonb_build_object('priority', j.priority, 'lifo', j.lifo) AS payload
),
-- include: job_events_then_ids(rows=changed)

-- name: job_promote
-- A delayed job becomes due now ('waiting' event, prev delayed).  :namespace, :job_id.  Returns the job's id (no row: not a delayed job).
WITH promoted AS (
    UPDATE pgqueue_jobs j SET run_at = statement_timestamp()
    WHERE j.namespace = :namespace AND j.id = :job_id AND j.state = 'pending'
      AND j.run_at > statement_timestamp()
    RETURNING j.id, j.queue, 'waiting'::text AS type, '{"prev": "delayed"}'::jsonb AS payload
),
-- include: job_events_then_ids(rows=promoted)

-- name: job_promote_queue
-- Parameters, in order: :namespace, :queue, :limit.
-- Up to :limit delayed jobs of queue :queue, soonest first, become due now.
-- :namespace.  Returns how many were promoted.
WITH picked AS (
    SELECT j.id
    FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.queue = :queue AND j.state = 'pending'
      AND j.run_at > statement_timestamp()
    ORDER BY j.run_at, j.id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
), promoted AS (
    UPDATE pgqueue_jobs j SET run_at = statement_timestamp()
    FROM picked p
    WHERE j.namespace = :namespace AND j.id = p.id
    RETURNING j.id, j.queue
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, p.queue, p.id, 'waiting', '{"prev": "delayed"}'::jsonb FROM promoted p
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=:namespace)
)
SELECT (SELECT count(*) FROM promoted)::int AS promoted, h.count AS hint
FROM (SELECT count(*) FROM notified) AS h

-- name: job_change_delay
-- Parameters, in order: :namespace, :job_id, :delay.
-- A pending job runs :delay ms from now on the database clock ('delayed' event,
-- or 'waiting' for a zero delay).  :namespace, :job_id.  Returns the id
-- (no row: no pending job).
WITH changed AS (
    UPDATE pgqueue_jobs j
    SET run_at = statement_timestamp() + :delay::bigint * interval '1 millisecond'
    WHERE j.namespace = :namespace AND j.id = :job_id AND j.state = 'pending'
    RETURNING j.id, j.queue, CASE WHEN :delay::bigint > 0 THEN 'delayed' ELSE 'waiting' END AS type,
              jsonb_build_object('delay', :delay::bigint) AS payload
),
-- include: job_events_then_ids(rows=changed)

-- name: job_leased_move
-- Parameters, in order: :namespace, :job_id, :token, :fence, :delay_ms, :to_children, :event_type, :event_payload, :broker_id, :session_id.
-- The worker holding an active job's lease gives it back: to pending with
-- run_at = db now + :delay_ms ('delayed' / 'waiting'), or to waiting-children
-- when :to_children is true and it still has unresolved dependencies.  A compare-and-set
-- on (id, active, fence, token, unexpired lease) through a live broker
-- session; the attempt is not consumed.  :namespace, :job_id, :token,
-- :fence, :event_type, :event_payload, :broker_id, :session_id.
-- Returns the id (no row: nothing changed).
WITH moved AS (
    UPDATE pgqueue_jobs j
    SET state = CASE WHEN :to_children::bool THEN 'waiting-children' ELSE 'pending' END,
        run_at = CASE WHEN :to_children::bool THEN j.run_at
                      ELSE statement_timestamp() + :delay_ms::bigint * interval '1 millisecond' END,
        lease_token = NULL,
        lease_owner = NULL,
        lease_broker = NULL,
        lease_session = NULL,
        lease_until = NULL
    WHERE j.namespace = :namespace
      AND j.id = :job_id
      AND j.state = 'active'
      AND j.fence = :fence::bigint
      AND j.lease_token = :token::text
      AND j.lease_until > statement_timestamp()
      AND (NOT :to_children::bool OR j.pending_deps > 0)
      AND EXISTS (SELECT 1 FROM pgqueue_brokers b
                  WHERE b.namespace = :namespace AND b.broker_id = :broker_id AND b.session_id = :session_id::uuid)
    RETURNING j.id, j.queue, :event_type::text AS type, :event_payload::jsonb AS payload
),
-- include: job_events_then_ids(rows=moved)
