-- fragment: job_events_then_ids
-- The end of a statement that changes single jobs: one event per row of the
-- CTE {rows} (its id, queue, type and payload), the NOTIFY hint, and the rows'
-- ids as the result.  $1 namespace.
events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT $1, r.queue, r.id, r.type, r.payload FROM {rows} r
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=$1)
)
SELECT r.id FROM {rows} r, (SELECT count(*) FROM notified) AS hint

-- name: job_control_probe
-- Why a job control statement missed: the job's reported state (waiting,
-- prioritized, delayed, active, waiting-children, completed, failed; no row
-- when unknown), whether token $3 holds its current lease, its unresolved
-- dependency count and whether the broker session ($4 broker_id, $5
-- session_id) is live.  $1 namespace, $2 id.
SELECT s.state, s.queue, s.fence, s.pending_deps, s.lease_valid,
       EXISTS (SELECT 1 FROM pgqueue_brokers b
               WHERE b.namespace = $1 AND b.broker_id = $4 AND b.session_id = $5::uuid)
           AS session_live
FROM (
    SELECT CASE WHEN j.state = 'pending' AND j.run_at > statement_timestamp() THEN 'delayed'
                WHEN j.state = 'pending' AND j.priority > 0 THEN 'prioritized'
                WHEN j.state = 'pending' THEN 'waiting'
                ELSE j.state END AS state,
           j.queue, j.fence, j.pending_deps,
           coalesce(j.state = 'active' AND j.lease_token = $3::text
                    AND j.lease_until > statement_timestamp(), false) AS lease_valid
    FROM pgqueue_jobs j
    WHERE j.namespace = $1 AND j.id = $2
    UNION ALL
    SELECT f.state, f.queue, f.fence, 0, false
    FROM pgqueue_finished f
    WHERE f.namespace = $1 AND f.id = $2 AND NOT f.removed
    LIMIT 1
) AS s

-- name: job_lock_one
-- Lock one live job for a control operation that decides in Python.  Returns
-- its stored state, reported state, fence, and whether token $3 holds its
-- current lease.  $1 namespace, $2 id.
SELECT j.id, j.queue, j.state AS stored_state, j.fence,
       CASE WHEN j.state = 'pending' AND j.run_at > statement_timestamp() THEN 'delayed'
            WHEN j.state = 'pending' AND j.priority > 0 THEN 'prioritized'
            WHEN j.state = 'pending' THEN 'waiting'
            ELSE j.state END AS state,
       coalesce(j.state = 'active' AND j.lease_token = $3::text
                AND j.lease_until > statement_timestamp(), false) AS lease_valid
FROM pgqueue_jobs j
WHERE j.namespace = $1 AND j.id = $2
FOR UPDATE

-- name: job_delete_many
-- Delete live jobs that the caller locked (remove, drain, clean), each a
-- compare-and-set on (id, state, fence).  A job that live jobs still depend
-- on is kept (deleting it would strand them) and reported as blocked; run
-- this in the transaction that locked the rows, as its own statement, so its
-- snapshot sees every dependency edge committed before the lock.  Drops the
-- deleted jobs' own edges and logs, writes a 'removed' event each
-- ({"prev": reported state, "reason": $5}) and one NOTIFY hint.
-- $1 namespace, $2 ids, $3 fences, $4 expected stored states (aligned).
-- Returns outcome ('removed' | 'blocked'), id, prev state, blockers.
WITH input AS (
    SELECT * FROM unnest($2::text[], $3::bigint[], $4::text[]) AS t(id, fence, expected_state)
), blocked AS (
    SELECT d.depends_on AS id, count(*)::int AS blockers
    FROM pgqueue_dependencies d
    JOIN pgqueue_jobs dj ON dj.namespace = d.namespace AND dj.id = d.job_id
    WHERE d.namespace = $1 AND d.depends_on = ANY($2::text[])
    GROUP BY d.depends_on
), removed AS (
    DELETE FROM pgqueue_jobs j
    USING input i
    WHERE j.namespace = $1
      AND j.id = i.id
      AND j.state = i.expected_state
      AND j.fence = i.fence
      AND NOT EXISTS (SELECT 1 FROM blocked b WHERE b.id = j.id)
    RETURNING j.id, j.queue,
              CASE WHEN j.state = 'pending' AND j.run_at > statement_timestamp() THEN 'delayed'
                   WHEN j.state = 'pending' AND j.priority > 0 THEN 'prioritized'
                   WHEN j.state = 'pending' THEN 'waiting'
                   ELSE j.state END AS prev
), own_edges AS (
    DELETE FROM pgqueue_dependencies d
    USING removed r
    WHERE d.namespace = $1 AND d.job_id = r.id
), stale_edges AS (
    DELETE FROM pgqueue_dependencies d
    USING removed r
    WHERE d.namespace = $1 AND d.depends_on = r.id
), logs AS (
    DELETE FROM pgqueue_job_logs l
    USING removed r
    WHERE l.namespace = $1 AND l.job_id = r.id
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT $1, r.queue, r.id, 'removed', jsonb_build_object('prev', r.prev, 'reason', $5::text)
    FROM removed r
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=$1)
)
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
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, r.queue, r.id, 'removed',
           jsonb_build_object('prev', 'active', 'reason', 'cancel')
    FROM done r
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=:namespace)
)
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
-- $1 namespace, $2 id.  Returns state, blockers, removed (no row: unknown).
WITH target AS (
    SELECT f.id, f.queue, f.state
    FROM pgqueue_finished f
    WHERE f.namespace = $1 AND f.id = $2 AND NOT f.removed
    FOR UPDATE
), blocked AS (
    SELECT count(*)::int AS n
    FROM pgqueue_dependencies d
    JOIN pgqueue_jobs dj ON dj.namespace = d.namespace AND dj.id = d.job_id
    WHERE d.namespace = $1 AND d.depends_on = $2
), hidden AS (
    UPDATE pgqueue_finished f SET removed = true
    FROM target t
    WHERE f.namespace = $1 AND f.id = t.id AND t.state = 'completed'
    RETURNING f.id, f.queue, f.state
), deleted AS (
    DELETE FROM pgqueue_finished f
    USING target t
    WHERE f.namespace = $1 AND f.id = t.id AND t.state = 'failed'
      AND (SELECT n FROM blocked) = 0
    RETURNING f.id, f.queue, f.state
), gone AS (
    SELECT * FROM hidden UNION ALL SELECT * FROM deleted
), dlq AS (
    DELETE FROM pgqueue_dlq d USING gone g WHERE d.namespace = $1 AND d.job_id = g.id
), logs AS (
    DELETE FROM pgqueue_job_logs l USING gone g WHERE l.namespace = $1 AND l.job_id = g.id
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT $1, g.queue, g.id, 'removed', jsonb_build_object('prev', g.state, 'reason', 'cancel')
    FROM gone g
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=$1)
)
SELECT t.state, (SELECT n FROM blocked) AS blockers, EXISTS (SELECT 1 FROM gone) AS removed
FROM target t, (SELECT count(*) FROM notified) AS hint

-- name: job_update_data
-- Replace a live job's data, with an 'updated' event.  $1 namespace, $2 id,
-- $3 data (JSON text).  Returns the job's id (no row: no live job).
WITH updated AS (
    UPDATE pgqueue_jobs j SET data = $3::json
    WHERE j.namespace = $1 AND j.id = $2
    RETURNING j.id, j.queue, 'updated'::text AS type, '{"fields": ["data"]}'::jsonb AS payload
),
-- include: job_events_then_ids(rows=updated)

-- name: job_change_priority
-- Change the priority (and LIFO flag, when $4 is not NULL) of a pending job;
-- it keeps its place in time.  $1 namespace, $2 id, $3 priority, $4 lifo.
-- Returns the job's id (no row: no pending job).
WITH changed AS (
    UPDATE pgqueue_jobs j
    SET priority = $3::int,
        lifo = coalesce($4::bool, j.lifo),
        lifo_seq = CASE WHEN coalesce($4::bool, j.lifo) AND j.lifo_seq IS NULL
                        THEN nextval('pgqueue_lifo_seq') ELSE j.lifo_seq END
    WHERE j.namespace = $1 AND j.id = $2 AND j.state = 'pending'
    RETURNING j.id, j.queue, 'priority'::text AS type,
              jsonb_build_object('priority', j.priority, 'lifo', j.lifo) AS payload
),
-- include: job_events_then_ids(rows=changed)

-- name: job_promote
-- A delayed job becomes due now ('waiting' event, prev delayed).  $1
-- namespace, $2 id.  Returns the job's id (no row: not a delayed job).
WITH promoted AS (
    UPDATE pgqueue_jobs j SET run_at = statement_timestamp()
    WHERE j.namespace = $1 AND j.id = $2 AND j.state = 'pending'
      AND j.run_at > statement_timestamp()
    RETURNING j.id, j.queue, 'waiting'::text AS type, '{"prev": "delayed"}'::jsonb AS payload
),
-- include: job_events_then_ids(rows=promoted)

-- name: job_promote_queue
-- Up to $3 delayed jobs of queue $2, soonest first, become due now.
-- $1 namespace.  Returns how many were promoted.
WITH picked AS (
    SELECT j.id
    FROM pgqueue_jobs j
    WHERE j.namespace = $1 AND j.queue = $2 AND j.state = 'pending'
      AND j.run_at > statement_timestamp()
    ORDER BY j.run_at, j.id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), promoted AS (
    UPDATE pgqueue_jobs j SET run_at = statement_timestamp()
    FROM picked p
    WHERE j.namespace = $1 AND j.id = p.id
    RETURNING j.id, j.queue
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT $1, p.queue, p.id, 'waiting', '{"prev": "delayed"}'::jsonb FROM promoted p
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=$1)
)
SELECT (SELECT count(*) FROM promoted)::int AS promoted, h.count AS hint
FROM (SELECT count(*) FROM notified) AS h

-- name: job_change_delay
-- A pending job runs $3 ms from now on the database clock ('delayed' event,
-- or 'waiting' for a zero delay).  $1 namespace, $2 id.  Returns the id
-- (no row: no pending job).
WITH changed AS (
    UPDATE pgqueue_jobs j
    SET run_at = statement_timestamp() + $3::bigint * interval '1 millisecond'
    WHERE j.namespace = $1 AND j.id = $2 AND j.state = 'pending'
    RETURNING j.id, j.queue, CASE WHEN $3::bigint > 0 THEN 'delayed' ELSE 'waiting' END AS type,
              jsonb_build_object('delay', $3::bigint) AS payload
),
-- include: job_events_then_ids(rows=changed)

-- name: job_leased_move
-- The worker holding an active job's lease gives it back: to pending with
-- run_at = db now + $5 ms ('delayed' / 'waiting'), or to waiting-children
-- when $6 is true and it still has unresolved dependencies.  A compare-and-set
-- on (id, active, fence, token, unexpired lease) through a live broker
-- session; the attempt is not consumed.  $1 namespace, $2 id, $3 token,
-- $4 fence, $7 event type, $8 event payload, $9 broker_id, $10 session_id.
-- Returns the id (no row: nothing changed).
WITH moved AS (
    UPDATE pgqueue_jobs j
    SET state = CASE WHEN $6::bool THEN 'waiting-children' ELSE 'pending' END,
        run_at = CASE WHEN $6::bool THEN j.run_at
                      ELSE statement_timestamp() + $5::bigint * interval '1 millisecond' END,
        lease_token = NULL,
        lease_owner = NULL,
        lease_broker = NULL,
        lease_session = NULL,
        lease_until = NULL
    WHERE j.namespace = $1
      AND j.id = $2
      AND j.state = 'active'
      AND j.fence = $4::bigint
      AND j.lease_token = $3::text
      AND j.lease_until > statement_timestamp()
      AND (NOT $6::bool OR j.pending_deps > 0)
      AND EXISTS (SELECT 1 FROM pgqueue_brokers b
                  WHERE b.namespace = $1 AND b.broker_id = $9 AND b.session_id = $10::uuid)
    RETURNING j.id, j.queue, $7::text AS type, $8::jsonb AS payload
),
-- include: job_events_then_ids(rows=moved)
