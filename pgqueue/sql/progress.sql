-- name: job_update_progress
-- Parameters, in order: :namespace, :job_id, :text, :message, :set_message, :token, :broker_id, :session_id.
-- Record an active job's progress (:text JSON text) and, when :set_message is true, its
-- message :message (otherwise the previous message stays), with a 'progress' event
-- {"progress": p, "data": {"progress": p, "message": m}}.  With a token :token,
-- a compare-and-set on the token and an unexpired lease through a live
-- broker session (:broker_id, :session_id).  :namespace, :job_id.
-- Returns the id (no row: nothing changed).
WITH updated AS (
    UPDATE pgqueue_jobs j
    SET progress = :text::json,
        progress_message = CASE WHEN :set_message::bool THEN :message::text ELSE j.progress_message END
    WHERE j.namespace = :namespace
      AND j.id = :job_id
      AND j.state = 'active'
      AND (:token::text IS NULL
           OR (j.lease_token = :token::text
               AND j.lease_until > statement_timestamp()
               AND EXISTS (SELECT 1 FROM pgqueue_brokers b
                           WHERE b.namespace = :namespace AND b.broker_id = :broker_id
                             AND b.session_id = :session_id::uuid)))
    RETURNING j.id, j.queue, j.progress, j.progress_message
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, u.queue, u.id, 'progress',
           json_build_object('progress', u.progress,
                             'data', json_build_object('progress', u.progress,
                                                       'message', u.progress_message))
    FROM updated u
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=:namespace)
)
SELECT u.id FROM updated u, (SELECT count(*) FROM notified) AS hint

-- name: job_progress_get
-- A job's progress and message, live or finished.  :namespace, :job_id.
SELECT j.progress, j.progress_message FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.id = :job_id
UNION ALL
SELECT f.progress, f.progress_message FROM pgqueue_finished f
WHERE f.namespace = :namespace AND f.id = :job_id AND NOT f.removed
LIMIT 1

-- name: job_log_add
-- Parameters, in order: :namespace, :job_id, :level, :message.
-- Append a log line (:level, :message) to a known job (live or
-- finished) and keep at most the job's keep_logs newest lines (keep_logs 0:
-- none is stored).  :namespace, :job_id.  Returns added (no row: unknown job).
WITH job AS (
    SELECT (j.opts ->> 'keep_logs')::int AS keep FROM pgqueue_jobs j
    WHERE j.namespace = :namespace AND j.id = :job_id
    UNION ALL
    SELECT (f.opts ->> 'keep_logs')::int FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND f.id = :job_id AND NOT f.removed
    LIMIT 1
), added AS (
    INSERT INTO pgqueue_job_logs (namespace, job_id, level, message)
    SELECT :namespace, :job_id, :level, :message FROM job WHERE job.keep IS NULL OR job.keep > 0
    RETURNING id
), trimmed AS (
    DELETE FROM pgqueue_job_logs l
    WHERE l.namespace = :namespace AND l.job_id = :job_id
      AND l.id IN (SELECT r.id
                   FROM (SELECT l2.id, row_number() OVER (ORDER BY l2.id DESC) AS rn
                         FROM pgqueue_job_logs l2
                         WHERE l2.namespace = :namespace AND l2.job_id = :job_id) AS r, job
                   WHERE job.keep IS NOT NULL AND r.rn >= job.keep)
)
SELECT EXISTS (SELECT 1 FROM added) AS added FROM job

-- name: job_log_page
-- Parameters, in order: :namespace, :job_id, :lo, :hi.
-- Log lines of a job, oldest first, between positions :lo and :hi inclusive
-- (negative positions count from the end, as Redis LRANGE).  :namespace,
-- :job_id.  Always one row per line plus the total, or one row with
-- only the total when the range is empty.
WITH total AS (
    SELECT count(*)::bigint AS n FROM pgqueue_job_logs l
    WHERE l.namespace = :namespace AND l.job_id = :job_id
), bounds AS (
    SELECT t.n,
           CASE WHEN :lo::bigint < 0 THEN greatest(t.n + :lo::bigint, 0) ELSE :lo::bigint END AS lo,
           CASE WHEN :hi::bigint < 0 THEN t.n + :hi::bigint ELSE least(:hi::bigint, t.n - 1) END AS hi
    FROM total t
)
SELECT b.n AS total, p.ts, p.level, p.message
FROM bounds b
LEFT JOIN LATERAL (
    SELECT (extract(epoch FROM l.logged_at) * 1000)::float8 AS ts, l.level, l.message, l.id
    FROM pgqueue_job_logs l
    WHERE l.namespace = :namespace AND l.job_id = :job_id
    ORDER BY l.id
    OFFSET b.lo
    LIMIT greatest(b.hi - b.lo + 1, 0)
) AS p ON true
ORDER BY p.id

-- name: job_log_clear
-- Parameters, in order: :namespace, :job_id, :keep.
-- Delete a job's log lines except the newest :keep.  :namespace, :job_id.
-- Returns how many were deleted.
WITH deleted AS (
    DELETE FROM pgqueue_job_logs l
    WHERE l.namespace = :namespace AND l.job_id = :job_id
      AND l.id IN (SELECT r.id
                   FROM (SELECT l2.id, row_number() OVER (ORDER BY l2.id DESC) AS rn
                         FROM pgqueue_job_logs l2
                         WHERE l2.namespace = :namespace AND l2.job_id = :job_id) AS r
                   WHERE r.rn > :keep::bigint)
    RETURNING 1
)
SELECT count(*)::int AS deleted FROM deleted
