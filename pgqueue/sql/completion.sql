-- fragment: job_archive
-- A job leaves the hot table for pgqueue_finished: the rows of the CTE {rows}
-- (deleted pgqueue_jobs rows, `j.*`, with outcome, result, failed_reason,
-- error_text, new_stacktrace, new_attempt_log, new_attempts, removed), in the
-- namespace {namespace}, with the opts {opts} (the row's, or the outcome's new
-- ones).  A newer generation of the same id replaces an older finished row.
INSERT INTO pgqueue_finished AS f (
    namespace, id, queue, name, data, state, priority, lifo, created_at, started_at,
    finished_at, attempts, max_attempts, backoff_type, backoff_ms, backoff_max_ms,
    timeout_ms, ttl_ms, stall_timeout_ms, remove_on_complete, remove_on_fail,
    custom_id, unique_key, group_id, parent_id, parent_queue, stall_count, fence,
    progress, progress_message, attempt_log, result, failed_reason, error, stacktrace,
    removed, opts, token_salt, unique_expires_at)
SELECT {namespace}, d.id, d.queue, d.name, d.data, d.outcome, d.priority, d.lifo, d.created_at,
       d.started_at, statement_timestamp(), d.new_attempts, d.max_attempts,
       d.backoff_type, d.backoff_ms, d.backoff_max_ms, d.timeout_ms, d.ttl_ms,
       d.stall_timeout_ms, d.remove_on_complete, d.remove_on_fail, d.custom_id,
       d.unique_key, d.group_id, d.parent_id, d.parent_queue, d.stall_count, d.fence,
       d.progress, d.progress_message, d.new_attempt_log, d.result, d.failed_reason,
       d.error_text, coalesce(d.new_stacktrace, d.stacktrace), d.removed, {opts},
       d.token_salt, d.unique_expires_at
FROM {rows} d
ON CONFLICT (namespace, id) DO UPDATE SET
    queue = EXCLUDED.queue, name = EXCLUDED.name, data = EXCLUDED.data,
    state = EXCLUDED.state, priority = EXCLUDED.priority, lifo = EXCLUDED.lifo,
    created_at = EXCLUDED.created_at, started_at = EXCLUDED.started_at,
    finished_at = EXCLUDED.finished_at, attempts = EXCLUDED.attempts,
    max_attempts = EXCLUDED.max_attempts, backoff_type = EXCLUDED.backoff_type,
    backoff_ms = EXCLUDED.backoff_ms, backoff_max_ms = EXCLUDED.backoff_max_ms,
    timeout_ms = EXCLUDED.timeout_ms, ttl_ms = EXCLUDED.ttl_ms,
    stall_timeout_ms = EXCLUDED.stall_timeout_ms,
    remove_on_complete = EXCLUDED.remove_on_complete,
    remove_on_fail = EXCLUDED.remove_on_fail, custom_id = EXCLUDED.custom_id,
    unique_key = EXCLUDED.unique_key, group_id = EXCLUDED.group_id,
    parent_id = EXCLUDED.parent_id, parent_queue = EXCLUDED.parent_queue,
    stall_count = EXCLUDED.stall_count, fence = EXCLUDED.fence,
    progress = EXCLUDED.progress, progress_message = EXCLUDED.progress_message,
    attempt_log = EXCLUDED.attempt_log, result = EXCLUDED.result,
    failed_reason = EXCLUDED.failed_reason, error = EXCLUDED.error,
    stacktrace = EXCLUDED.stacktrace, removed = EXCLUDED.removed, opts = EXCLUDED.opts,
    token_salt = EXCLUDED.token_salt, unique_expires_at = EXCLUDED.unique_expires_at

-- fragment: job_compare_and_set
-- The WHERE of a batch write: the job `j` of :namespace that an element of
-- `input i` names, still in the state and at the fence the caller read.
WHERE j.namespace = :namespace
  AND j.id = i.id
  -- include: job_same_generation

-- fragment: job_same_generation
-- The job `j` is still in the state and at the fence the element `i` read.
AND j.state = i.expected_state
AND j.fence = i.fence

-- fragment: job_lease_held
-- When the element carries a token (`i.token`), the job's current lease is that
-- token's and has not expired.
AND (i.token IS NULL
     OR (j.lease_token = i.token AND j.lease_until > statement_timestamp()))

-- fragment: job_compare_and_set_leased
-- job_compare_and_set and job_lease_held.
-- include: job_compare_and_set
  -- include: job_lease_held

-- name: job_finish_many
-- Terminal transitions in one statement: each job leaves the hot table for
-- pgqueue_finished (completed or failed), failed ones get a DLQ entry, and
-- the outbox gets their events (their id range for the hint: event_range).  Every row is a
-- compare-and-set on (id, state, fence) and, when a token is given, on the
-- token and an unexpired lease (database clock).  A newer generation of the
-- same id replaces an older finished row.  A unique key with a TTL stays
-- held by the finished row until its deadline (unique_expires_at, BullMQ's
-- throttle mode).  :namespace; aligned arrays, one
-- element per job (the fields of write_rows.FinishRow): :id, :token (NULL:
-- validated under lock by the caller), :fence, :expected_state, :outcome
-- ('completed' | 'failed'), :result, :failed_reason, :error, :stacktrace,
-- :attempt_entry (NULL: none), :attempts_inc; then :broker_id, :session_id,
-- :remove (an array: NULL is the job's own option), :keep (an ACK's count /
-- {age, count}, kept in opts as keep_completed), :skip_with_dependents skip
-- jobs that have dependents (the fast path: their completion must also release
-- dependents, in a second statement with a fresh snapshot; see completion.py).
WITH input AS (
    SELECT *
    FROM unnest(:id::text[], :token::text[], :fence::bigint[], :expected_state::text[],
                :outcome::text[], :result::json[], :failed_reason::text[], :error::text[],
                :stacktrace::json[], :attempt_entry::jsonb[], :attempts_inc::int[],
                :remove::bool[], :keep::jsonb[])
         WITH ORDINALITY AS t(id, token, fence, expected_state, outcome, result,
                              failed_reason, error, stacktrace, attempt_entry,
                              attempts_inc, remove, keep, ord)
), target AS (
    -- Each element's row by primary-key probes of its own (subplans: no join order
    -- to choose), and the delete below led by their tids: with a join on
    -- `j.namespace = :namespace` and no statistics (autovacuum off, a table never
    -- analyzed) the planner believed the namespace holds a handful of rows and
    -- hash-joined a scan of all of them into every ACK.  A tid names one row
    -- version: `seen` is the one this statement's snapshot sees; `newest`, locked
    -- only when it passes the compare-and-set (a lost ACK leaves the row to the
    -- reaper's SKIP LOCKED), waits out a concurrent writer (a renewal) and is the
    -- version the delete then meets when it follows `seen`'s update chain (no one
    -- can write it before this statement ends), so such a row is deleted after its
    -- conditions are checked again on its newest version, as a join by the key does.
    SELECT (SELECT j.ctid FROM pgqueue_jobs j WHERE j.namespace = :namespace AND j.id = i.id)
               AS seen,
           (SELECT j.ctid FROM pgqueue_jobs j
            WHERE j.namespace = :namespace
              AND j.id = i.id
              -- include: job_same_generation
              -- include: job_lease_held
              AND NOT (:skip_with_dependents::bool AND j.has_dependents)
            FOR UPDATE) AS newest
    FROM input i
), done AS (
    DELETE FROM pgqueue_jobs j
    USING input i
    -- job_compare_and_set_leased, the rows named by their tids (of this namespace)
    WHERE j.ctid = ANY (ARRAY(SELECT t.seen FROM target t UNION ALL
                              SELECT t.newest FROM target t))
      AND j.id = i.id
      -- include: job_same_generation
      -- include: job_lease_held
      AND NOT (:skip_with_dependents::bool AND j.has_dependents)
      AND EXISTS (SELECT 1 FROM pgqueue_brokers b
                  WHERE b.namespace = :namespace AND b.broker_id = :broker_id AND b.session_id = :session_id::uuid)
    RETURNING j.*, i.ord AS ord, i.outcome AS outcome, i.result AS result,
              i.failed_reason AS failed_reason, i.error AS error_text,
              i.stacktrace AS new_stacktrace,
              CASE WHEN i.attempt_entry IS NULL THEN j.attempt_log
                   ELSE j.attempt_log || jsonb_build_array(i.attempt_entry) END AS new_attempt_log,
              j.attempts + i.attempts_inc AS new_attempts,
              CASE WHEN i.keep IS NULL THEN j.opts
                   ELSE j.opts || jsonb_build_object('keep_completed', i.keep) END AS new_opts,
              CASE WHEN i.outcome = 'completed' THEN coalesce(i.remove, j.remove_on_complete)
                   ELSE coalesce(i.remove, j.remove_on_fail)
                        -- removeOnFail never deletes a job a live dependent still waits
                        -- for (no policy lets it go on): it keeps its DLQ entry
                        AND NOT (j.has_dependents AND EXISTS (
                            SELECT 1
                            FROM pgqueue_dependencies e
                            JOIN pgqueue_jobs w ON w.namespace = e.namespace AND w.id = e.job_id
                            CROSS JOIN LATERAL (SELECT
                                -- include: flow_failure_mode(opts=j.opts, parent=j.parent_id)
                                AS mode) m
                            WHERE e.namespace = :namespace AND e.depends_on = j.id
                              AND (m.mode IS NULL
                                   OR (m.mode = 'fail' AND w.id IS DISTINCT FROM j.parent_id))))
              END AS removed
), archived AS (
    -- include: job_archive(rows=done, namespace=:namespace, opts=d.new_opts)
), dead_lettered AS (
    INSERT INTO pgqueue_dlq AS q (namespace, job_id, queue, reason, error, entered_at, attempts,
                                  retry_count, last_retry_at)
    SELECT :namespace, d.id, d.queue, d.failed_reason, d.error_text,
           coalesce(d.dlq_entered_at, statement_timestamp()), d.new_attempt_log,
           d.dlq_retry_count, d.dlq_last_retry_at
    FROM done d
    WHERE d.outcome = 'failed' AND NOT d.removed
    ON CONFLICT (namespace, job_id) DO UPDATE SET
        queue = EXCLUDED.queue, reason = EXCLUDED.reason, error = EXCLUDED.error,
        entered_at = EXCLUDED.entered_at, attempts = EXCLUDED.attempts,
        retry_count = EXCLUDED.retry_count, last_retry_at = EXCLUDED.last_retry_at,
        next_retry_at = NULL
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, d.queue, d.id, d.outcome,
           CASE WHEN d.outcome = 'completed' THEN
                    CASE WHEN pg_column_size(d.result) <= 16384
                         THEN json_build_object('returnvalue', d.result, 'duration', (extract(
                           epoch FROM statement_timestamp() - d.started_at) * 1000)::bigint)
                         ELSE json_build_object('returnvalueTruncated', true, 'duration', (extract(
                           epoch FROM statement_timestamp() - d.started_at) * 1000)::bigint) END
                ELSE json_build_object('failedReason', d.error_text, 'reason', d.failed_reason,
                                       'attemptsMade', d.new_attempts, 'terminal', true)
           END
    FROM done d
    UNION ALL
    SELECT :namespace, d.queue, d.id, 'dlq', json_build_object('reason', d.failed_reason)
    FROM done d
    WHERE d.outcome = 'failed' AND NOT d.removed
    RETURNING id, queue
), hint AS MATERIALIZED (  -- read once, not once per row of the join below
    -- include: event_range
)
SELECT d.ord, d.id, d.queue, d.outcome, d.has_dependents, d.parent_id, d.parent_queue,
       d.opts, d.failed_reason, d.error_text AS error, h.hint_first, h.hint_last
FROM done d, hint h

-- name: job_lock_for_failure
-- Lock the active jobs named by (id, token) whose lease is still valid, for
-- the failure policy to decide retry or dead-letter.  A lease that ran to the
-- job's processing deadline (it cannot be renewed past it) still lets its
-- holder report the failure after it, as a timeout (`timed_out`): the reaper
-- would record the same, and the claim is still the current one (same token,
-- still active).  :namespace, :ids, :tokens, :broker_id, :session_id.
SELECT j.*, i.ord, statement_timestamp() AS now,
       (j.timeout_ms IS NOT NULL
        AND j.started_at + j.timeout_ms * interval '1 millisecond' <= statement_timestamp())
           AS timed_out
FROM unnest(:ids::text[], :tokens::text[]) WITH ORDINALITY AS i(id, token, ord)
JOIN pgqueue_jobs j ON j.namespace = :namespace AND j.id = i.id
WHERE j.state = 'active'
  AND j.lease_token = i.token
  AND (j.lease_until > statement_timestamp()
       OR (j.timeout_ms IS NOT NULL
           AND j.lease_until >= j.started_at + j.timeout_ms * interval '1 millisecond'))
  AND EXISTS (SELECT 1 FROM pgqueue_brokers b
              WHERE b.namespace = :namespace AND b.broker_id = :broker_id AND b.session_id = :session_id::uuid)
ORDER BY j.id
FOR UPDATE OF j

-- name: job_requeue_many
-- Send jobs back to pending (retry with backoff, stall, release, delay), each a
-- compare-and-set on (id, state, fence) and, when a token is given, on the
-- token and an unexpired lease.  One outbox event each and one NOTIFY hint.
-- :namespace; aligned arrays, one element per job (the fields of
-- write_rows.RequeueRow): :id, :fence, :expected_state, :delay_ms,
-- :attempts_inc, :stall_inc, :error, :stacktrace, :attempt_entry, :event_type,
-- :event_payload, :token (NULL: no token check).
WITH input AS (
    SELECT *
    FROM unnest(:id::text[], :fence::bigint[], :expected_state::text[], :delay_ms::bigint[],
                :attempts_inc::int[], :stall_inc::int[], :error::text[], :stacktrace::json[],
                :attempt_entry::jsonb[], :event_type::text[], :event_payload::json[],
                :token::text[])
         WITH ORDINALITY AS t(id, fence, expected_state, delay_ms, attempts_inc, stall_inc,
                              error, stacktrace, attempt_entry, event_type, event_payload,
                              token, ord)
), target AS (
    -- Each element's row by primary-key probes and the update led by their tids,
    -- as in job_finish_many (which says why): without statistics a join on
    -- `j.namespace = :namespace` hash-joined a scan of the whole namespace.
    -- `seen` is the version this statement's snapshot sees; `newest`, locked only
    -- when it passes the compare-and-set, is the version the update meets when it
    -- follows `seen`'s update chain, and rechecks the conditions on.
    SELECT (SELECT j.ctid FROM pgqueue_jobs j WHERE j.namespace = :namespace AND j.id = i.id)
               AS seen,
           (SELECT j.ctid FROM pgqueue_jobs j
            WHERE j.namespace = :namespace
              AND j.id = i.id
              -- include: job_same_generation
              -- include: job_lease_held
            FOR UPDATE) AS newest
    FROM input i
), requeued AS (
    UPDATE pgqueue_jobs j
    SET state = 'pending',
        run_at = statement_timestamp() + i.delay_ms * interval '1 millisecond',
        attempts = j.attempts + i.attempts_inc,
        stall_count = j.stall_count + i.stall_inc,
        last_error = coalesce(i.error, j.last_error),
        stacktrace = coalesce(i.stacktrace, j.stacktrace),
        attempt_log = CASE WHEN i.attempt_entry IS NULL THEN j.attempt_log
                           ELSE j.attempt_log || jsonb_build_array(i.attempt_entry) END,
        lease_token = NULL,
        lease_owner = NULL,
        lease_broker = NULL,
        lease_session = NULL,
        lease_until = NULL
    FROM input i
    -- job_compare_and_set_leased, the rows named by their tids (of this namespace)
    WHERE j.ctid = ANY (ARRAY(SELECT t.seen FROM target t UNION ALL
                              SELECT t.newest FROM target t))
      AND j.id = i.id
      -- include: job_same_generation
      -- include: job_lease_held
    RETURNING j.id, j.queue, j.run_at, i.ord, i.event_type, i.event_payload
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, r.queue, r.id, r.event_type, r.event_payload FROM requeued r
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=:namespace)
)
SELECT r.ord, r.id, r.queue, (extract(epoch FROM r.run_at) * 1000)::float8 AS run_at
FROM requeued r, (SELECT count(*) FROM notified) AS hint

-- name: job_outcome_probe
-- Why a compare-and-set missed: the job's current place and state, and for a
-- finished job whether the token is one that was issued for it (its fence at
-- most the final one and its uuid derived from the job's token_salt; rows
-- archived without a salt accept any well-formed token up to their fence),
-- and whether it was cancelled while active (job_cancel_active).
-- :namespace, :ids, :tokens, :broker_id, :session_id.
SELECT i.ord, i.id,
       j.state AS live_state,
       f.state AS finished_state,
       coalesce(t.fence BETWEEN 1 AND f.fence
                AND (f.token_salt IS NULL
                     OR i.token = pgqueue_lease_token(t.fence, f.token_salt)),
                false) AS token_issued,
       (j.state = 'active' AND j.lease_token = i.token
        AND j.lease_until > statement_timestamp()) AS lease_valid,
       coalesce(f.state = 'failed' AND f.removed AND f.failed_reason = 'cancelled',
                false) AS cancelled,
       coalesce(j.has_dependents, false) AS has_dependents,
       EXISTS (SELECT 1 FROM pgqueue_brokers b
               WHERE b.namespace = :namespace AND b.broker_id = :broker_id AND b.session_id = :session_id::uuid)
           AS session_live
FROM unnest(:ids::text[], :tokens::text[]) WITH ORDINALITY AS i(id, token, ord)
CROSS JOIN LATERAL (
    SELECT CASE WHEN i.token ~ '^[0-9]{1,18}:' THEN split_part(i.token, ':', 1)::bigint END
) AS t(fence)
-- Each element's rows by primary-key probes of its own (a LIMIT keeps the planner
-- from flattening them into joins: without statistics it hash-joined a scan of
-- the whole namespace).
LEFT JOIN LATERAL (
    SELECT j.state, j.lease_token, j.lease_until, j.has_dependents FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.id = i.id LIMIT 1
) AS j ON true
LEFT JOIN LATERAL (
    SELECT f.state, f.fence, f.token_salt, f.removed, f.failed_reason FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND f.id = i.id LIMIT 1
) AS f ON true

-- name: dependency_resolve
-- Parameters, in order: :namespace, :job_ids.
-- Jobs :job_ids completed (or count as resolved): drop their edges and release the
-- dependents whose last dependency this was.  :namespace.
WITH edges AS (
    DELETE FROM pgqueue_dependencies d
    WHERE d.namespace = :namespace AND d.depends_on = ANY(:job_ids::text[])
    RETURNING d.job_id
),
-- include: dependency_release(namespace=:namespace)
SELECT r.id, r.queue, r.state FROM released r, (SELECT count(*) FROM notified) AS hint

-- fragment: flow_failure_mode
-- The failure policy a job applies when it fails for good ('fail', 'continue',
-- 'ignore', 'remove' or NULL), from its opts {opts} and parent id {parent}: the
-- SQL twin of manager/flow_policy.flow_failure_mode (the first option set wins;
-- 'fail' needs a parent).
CASE WHEN coalesce(({opts} ->> 'fail_parent_on_failure')::boolean, false)
          AND {parent} IS NOT NULL THEN 'fail'
     WHEN coalesce(({opts} ->> 'continue_parent_on_failure')::boolean, false) THEN 'continue'
     WHEN coalesce(({opts} ->> 'ignore_dependency_on_failure')::boolean, false) THEN 'ignore'
     WHEN coalesce(({opts} ->> 'remove_dependency_on_failure')::boolean, false) THEN 'remove'
END

-- name: flow_parents_continue
-- Parameters, in order: :namespace, :continued.
-- continue_parent_on_failure: the parents :continued that still wait for children run
-- at once: every edge they wait on goes (also those of children still
-- running or waiting), and they are released with a 'waiting' event.
-- :namespace.  Returns the released parents.
WITH parents AS (
    SELECT j.id FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.id = ANY(:continued::text[]) AND j.state = 'waiting-children'
    ORDER BY j.id
    FOR UPDATE
), edges AS (
    DELETE FROM pgqueue_dependencies d
    USING parents p
    WHERE d.namespace = :namespace AND d.job_id = p.id
    RETURNING d.job_id
),
-- include: dependency_release(namespace=:namespace)
SELECT r.id, r.queue, r.state FROM released r, (SELECT count(*) FROM notified) AS hint

-- name: job_lock_waiting_parents
-- Lock parents that have not started yet (their child failed with
-- fail_parent_on_failure).  :namespace, :failing ids.
SELECT j.id, j.queue, j.fence, j.state
FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.id = ANY(:failing::text[]) AND j.state IN ('waiting-children', 'pending')
ORDER BY j.id
FOR UPDATE
