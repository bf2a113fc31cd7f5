-- name: job_update_progress
-- Record an active job's progress ($3 JSON text) and, when $5 is true, its
-- message $4 (otherwise the previous message stays), with a 'progress' event
-- {"progress": p, "data": {"progress": p, "message": m}}.  With a token $6,
-- a compare-and-set on the token and an unexpired lease through a live
-- broker session ($7 broker_id, $8 session_id).  $1 namespace, $2 id.
-- Returns the id (no row: nothing changed).
WITH updated AS (
    UPDATE pgqueue_jobs j
    SET progress = $3::json,
        progress_message = CASE WHEN $5::bool THEN $4::text ELSE j.progress_message END
    WHERE j.namespace = $1
      AND j.id = $2
      AND j.state = 'active'
      AND ($6::text IS NULL
           OR (j.lease_token = $6::text
               AND j.lease_until > statement_timestamp()
               AND EXISTS (SELECT 1 FROM pgqueue_brokers b
                           WHERE b.namespace = $1 AND b.broker_id = $7
                             AND b.session_id = $8::uuid)))
    RETURNING j.id, j.queue, j.progress, j.progress_message
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT $1, u.queue, u.id, 'progress',
           json_build_object('progress', u.progress,
                             'data', json_build_object('progress', u.progress,
                                                       'message', u.progress_message))
    FROM updated u
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=$1)
)
SELECT u.id FROM updated u, (SELECT count(*) FROM notified) AS hint

-- name: job_progress_get
-- A job's progress and message, live or finished.  $1 namespace, $2 id.
SELECT j.progress, j.progress_message FROM pgqueue_jobs j
WHERE j.namespace = $1 AND j.id = $2
UNION ALL
SELECT f.progress, f.progress_message FROM pgqueue_finished f
WHERE f.namespace = $1 AND f.id = $2 AND NOT f.removed
LIMIT 1

-- name: job_log_add
-- Append a log line ($3 level, $4 message) to a known job (live or
-- finished) and keep at most the job's keep_logs newest lines (keep_logs 0:
-- none is stored).  $1 namespace, $2 id.  Returns added (no row: unknown job).
WITH job AS (
    SELECT (j.opts ->> 'keep_logs')::int AS keep FROM pgqueue_jobs j
    WHERE j.namespace = $1 AND j.id = $2
    UNION ALL
    SELECT (f.opts ->> 'keep_logs')::int FROM pgqueue_finished f
    WHERE f.namespace = $1 AND f.id = $2 AND NOT f.removed
    LIMIT 1
), added AS (
    INSERT INTO pgqueue_job_logs (namespace, job_id, level, message)
    SELECT $1, $2, $3, $4 FROM job WHERE job.keep IS NULL OR job.keep > 0
    RETURNING id
), trimmed AS (
    DELETE FROM pgqueue_job_logs l
    WHERE l.namespace = $1 AND l.job_id = $2
      AND l.id IN (SELECT r.id
                   FROM (SELECT l2.id, row_number() OVER (ORDER BY l2.id DESC) AS rn
                         FROM pgqueue_job_logs l2
                         WHERE l2.namespace = $1 AND l2.job_id = $2) AS r, job
                   WHERE job.keep IS NOT NULL AND r.rn >= job.keep)
)
SELECT EXISTS (SELECT 1 FROM added) AS added FROM job

-- name: job_log_page
-- Log lines of a job, oldest first, between positions $3 and $4 inclusive
-- (negative positions count from the end, as Redis LRANGE).  $1 namespace,
-- $2 job id.  Always one row per line plus the total, or one row with
-- only the total when the range is empty.
WITH total AS (
    SELECT count(*)::bigint AS n FROM pgqueue_job_logs l
    WHERE l.namespace = $1 AND l.job_id = $2
), bounds AS (
    SELECT t.n,
           CASE WHEN $3::bigint < 0 THEN greatest(t.n + $3::bigint, 0) ELSE $3::bigint END AS lo,
           CASE WHEN $4::bigint < 0 THEN t.n + $4::bigint ELSE least($4::bigint, t.n - 1) END AS hi
    FROM total t
)
SELECT b.n AS total, p.ts, p.level, p.message
FROM bounds b
LEFT JOIN LATERAL (
    SELECT (extract(epoch FROM l.logged_at) * 1000)::float8 AS ts, l.level, l.message, l.id
    FROM pgqueue_job_logs l
    WHERE l.namespace = $1 AND l.job_id = $2
    ORDER BY l.id
    OFFSET b.lo
    LIMIT greatest(b.hi - b.lo + 1, 0)
) AS p ON true
ORDER BY p.id

-- name: job_log_clear
-- Delete a job's log lines except the newest $3.  $1 namespace, $2 job id.
-- Returns how many were deleted.
WITH deleted AS (
    DELETE FROM pgqueue_job_logs l
    WHERE l.namespace = $1 AND l.job_id = $2
      AND l.id IN (SELECT r.id
                   FROM (SELECT l2.id, row_number() OVER (ORDER BY l2.id DESC) AS rn
                         FROM pgqueue_job_logs l2
                         WHERE l2.namespace = $1 AND l2.job_id = $2) AS r
                   WHERE r.rn > $3::bigint)
    RETURNING 1
)
SELECT count(*)::int AS deleted FROM deleted
