-- fragment: dlq_selection
-- The WHERE clause of a DLQ operation: the dead-letter entries `d` of queue :queue
-- of :namespace that pass the filters (NULL: any) :job_ids, :reason, entered at
-- or before :older_than_ms / at or after :newer_than_ms (ms since the epoch), due
-- for an auto-retry per `c.config` (:retriable true) or not, expired (:expired
-- true) or not, both judged at :now (NULL: the database clock; a test passes a
-- later instant to move time).  `c.config` is the queue's DLQ config over the
-- default.
WHERE d.namespace = :namespace
  AND d.queue = :queue
  AND (:job_ids::text[] IS NULL OR d.job_id = ANY(:job_ids::text[]))
  AND (:reason::text IS NULL OR d.reason = :reason::text)
  AND (:older_than_ms::float8 IS NULL OR d.entered_at <= to_timestamp(:older_than_ms::float8 / 1000))
  AND (:newer_than_ms::float8 IS NULL OR d.entered_at >= to_timestamp(:newer_than_ms::float8 / 1000))
  AND (:retriable::boolean IS NULL OR :retriable::boolean = coalesce(
          pgqueue_dlq_next_retry_at(d.entered_at, d.retry_count, d.last_retry_at, c.config)
              <= coalesce(:now::timestamptz, statement_timestamp()), false))
  AND (:expired::boolean IS NULL OR :expired::boolean = coalesce(
          pgqueue_dlq_expires_at(d.entered_at, c.config)
              <= coalesce(:now::timestamptz, statement_timestamp()), false))

-- fragment: dlq_audit_insert
-- The CTE `audit`: ONE audit row of a DLQ operation over the jobs {id} of
-- {rows} (none when nothing was selected, unless :audit_when_empty), by
-- :actor, :action on :queue of :namespace, :recorded filter, :why.
audit AS (
    INSERT INTO pgqueue_dlq_audit (namespace, actor, action, queue, job_ids, filter, reason,
                                   count)
    SELECT :namespace, :actor, :action, :queue, coalesce(array_agg({id} ORDER BY {id}), '{}'),
           :recorded::jsonb, :why, count(*)
    FROM {rows}
    HAVING count(*) > 0 OR :audit_when_empty::boolean
    RETURNING id, at, actor, action, queue, job_ids, filter, reason, count
)

-- fragment: dlq_audit_event
-- The 'dlq_audit' event of the row in `audit` (the first 100 job ids), its
-- payload completed by {extra} (a jsonb object).
SELECT :namespace, a.queue, NULL, 'dlq_audit',
       jsonb_build_object('id', a.id, 'action', a.action, 'actor', a.actor,
                          'count', a.count, 'reason', a.reason, 'filter', a.filter,
                          'jobIds', to_jsonb(a.job_ids[1:100]),
                          'jobIdsTruncated', cardinality(a.job_ids) > 100) || {extra}
FROM audit a

-- name: dlq_list
-- Parameters: :namespace, :queue, the selection :job_ids, :reason, :older_than_ms,
-- :newer_than_ms, :retriable, :expired, :limit, and :default_config, :offset, :now.
-- Dead-letter entries of queue :queue of :namespace with their failed jobs, oldest
-- entry first, one page (:limit rows after :offset).  Selection as in
-- dlq_selection (NULL: any): :job_ids, :reason, entered at or before :older_than_ms
-- or at or after :newer_than_ms (ms since the epoch), due for an auto-retry
-- (:retriable true) or not, expired (:expired true) or not (judged at :now).  :default_config: the
-- default DLQ config (jsonb, wire names); schedules derive from the queue's
-- current config.
SELECT d.job_id, d.reason, d.error AS dlq_error, d.entered_at, d.attempts AS dlq_attempts,
       d.retry_count, d.last_retry_at,
       pgqueue_dlq_next_retry_at(d.entered_at, d.retry_count, d.last_retry_at, c.config)
           AS next_retry_at,
       pgqueue_dlq_expires_at(d.entered_at, c.config) AS expires_at,
       f.id, f.queue, f.name, f.data, f.state, f.priority, f.lifo,
       f.finished_at AS run_at, f.created_at, f.started_at, f.finished_at, f.attempts,
       f.max_attempts, f.backoff_type, f.backoff_ms, f.backoff_max_ms, f.timeout_ms, f.ttl_ms,
       f.stall_timeout_ms, f.remove_on_complete, f.remove_on_fail, f.custom_id, f.unique_key,
       f.group_id, f.parent_id, f.parent_queue, f.stall_count, f.fence, f.progress,
       f.progress_message, f.attempt_log, f.result, f.failed_reason, f.error, f.stacktrace,
       f.opts
FROM pgqueue_dlq d
LEFT JOIN pgqueue_queues q ON q.namespace = d.namespace AND q.queue = d.queue
CROSS JOIN LATERAL (SELECT :default_config::jsonb || coalesce(q.dlq_config, '{}'::jsonb) AS config) c
JOIN pgqueue_finished f ON f.namespace = d.namespace AND f.id = d.job_id
-- include: dlq_selection
ORDER BY d.entered_at, d.job_id
LIMIT :limit OFFSET :offset

-- name: dlq_count
-- Parameters: :namespace, :queue, the selection :job_ids, :reason, :older_than_ms,
-- :newer_than_ms, :retriable, :expired, and :default_config, :now (the clock the
-- selection is judged at; NULL: the database clock).
-- How many dead-letter entries of queue :queue of :namespace the selection holds
-- (as dlq_list would list them with no page): the ``total`` beside a page.
SELECT count(*)::bigint
FROM pgqueue_dlq d
LEFT JOIN pgqueue_queues q ON q.namespace = d.namespace AND q.queue = d.queue
CROSS JOIN LATERAL (SELECT :default_config::jsonb || coalesce(q.dlq_config, '{}'::jsonb) AS config) c
-- include: dlq_selection

-- name: dlq_stats
-- Parameters, in order: :namespace, :queue, :defaults.
-- Entry counts of one queue (:queue) or of the whole namespace (:queue NULL), per
-- queue and reason: how many, how many have an auto-retry scheduled, how
-- many are expired, the oldest and newest entry (ms).  :namespace,
-- :defaults the default DLQ config (jsonb, wire names).
SELECT d.queue, d.reason, count(*)::bigint AS total,
       count(*) FILTER (WHERE pgqueue_dlq_next_retry_at(d.entered_at, d.retry_count,
                                                        d.last_retry_at, c.config) IS NOT NULL)
           ::bigint AS pending_retry,
       count(*) FILTER (WHERE pgqueue_dlq_expires_at(d.entered_at, c.config)
                              <= statement_timestamp())::bigint AS expired,
       (extract(epoch FROM min(d.entered_at)) * 1000)::float8 AS oldest,
       (extract(epoch FROM max(d.entered_at)) * 1000)::float8 AS newest
FROM pgqueue_dlq d
LEFT JOIN pgqueue_queues q ON q.namespace = d.namespace AND q.queue = d.queue
CROSS JOIN LATERAL (SELECT :defaults::jsonb || coalesce(q.dlq_config, '{}'::jsonb) AS config) c
WHERE d.namespace = :namespace AND (:queue::text IS NULL OR d.queue = :queue::text)
GROUP BY d.queue, d.reason

-- name: dlq_entry_queue
-- The queue of one dead-letter entry.  :namespace, :job_id.
SELECT queue FROM pgqueue_dlq WHERE namespace = :namespace AND job_id = :job_id

-- name: dlq_redrive
-- Parameters: :namespace, :queue, the selection :job_ids, :reason, :older_than_ms,
-- :newer_than_ms, :retriable, :expired, :limit, and :default_config, :action,
-- :actor, :why, :recorded, :audit_when_empty, :now.
-- Move the selected dead-lettered jobs of queue :queue of :namespace back to the
-- live table as pending (due now; attempts and stall count reset, fence kept so
-- the next claim increments it, attempt log kept, unique key cleared, a fresh TTL
-- window), delete their entries and failed rows, and write one 'redriven'
-- event per job, ONE audit row and one 'dlq_audit' event, with one NOTIFY
-- hint: all in this statement.  Entries locked by a concurrent operation are
-- skipped, so concurrent redrives move each job once.  An entry whose id a
-- live job holds is skipped too and stays in the DLQ (it is listed in
-- 'skipped'; its neighbours move): the live job is picked last under the
-- limit, and a live job committed meanwhile makes its insert do nothing.
-- Selection as in dlq_selection (:job_ids, :reason, :older_than_ms, :newer_than_ms,
-- :retriable, :expired, :now), oldest first, at most :limit (NULL: all).
-- :default_config the default DLQ config, :action ('redrive' | 'auto_retry': an
-- auto-retry extends the job's retry chain, a redrive starts a new one), :actor,
-- :why, :recorded the filter as recorded (jsonb), :audit_when_empty audit even when
-- nothing moved.  Returns the moved ids, the skipped ids and the audit row.
WITH picked AS (
    SELECT d.job_id, d.retry_count, d.entered_at,
           EXISTS (SELECT 1 FROM pgqueue_jobs j
                   WHERE j.namespace = :namespace AND j.id = d.job_id) AS held
    FROM pgqueue_dlq d
    LEFT JOIN pgqueue_queues q ON q.namespace = d.namespace AND q.queue = d.queue
    CROSS JOIN LATERAL (SELECT :default_config::jsonb || coalesce(q.dlq_config, '{}'::jsonb) AS config) c
    -- include: dlq_selection
    ORDER BY held, d.entered_at, d.job_id
    LIMIT :limit
    FOR UPDATE OF d SKIP LOCKED
), source AS (
    SELECT f.*, p.retry_count AS entry_retry_count, p.entered_at AS entry_entered_at
    FROM picked p
    JOIN pgqueue_finished f ON f.namespace = :namespace AND f.id = p.job_id AND f.state = 'failed'
    WHERE NOT p.held
), moved AS (
    INSERT INTO pgqueue_jobs (
        namespace, id, queue, name, data, state, priority, lifo, lifo_seq, run_at,
        created_at, expires_at, attempts, max_attempts, backoff_type, backoff_ms,
        backoff_max_ms, timeout_ms, ttl_ms, stall_timeout_ms, remove_on_complete,
        remove_on_fail, custom_id, unique_key, unique_expires_at, group_id, parent_id,
        parent_queue, pending_deps, has_dependents, stall_count, fence, progress,
        progress_message, attempt_log, last_error, stacktrace, opts, dlq_retry_count,
        dlq_last_retry_at, dlq_entered_at)
    SELECT :namespace, f.id, f.queue, f.name, coalesce(f.data, 'null'::json),
           CASE WHEN deps.n > 0 THEN 'waiting-children' ELSE 'pending' END,
           f.priority, f.lifo, CASE WHEN f.lifo THEN nextval('pgqueue_lifo_seq') END,
           statement_timestamp(), f.created_at,
           statement_timestamp() + f.ttl_ms * interval '1 millisecond',
           0, f.max_attempts, f.backoff_type, f.backoff_ms, f.backoff_max_ms, f.timeout_ms,
           f.ttl_ms, f.stall_timeout_ms, f.remove_on_complete, f.remove_on_fail, f.custom_id,
           NULL, NULL, f.group_id, f.parent_id, f.parent_queue, deps.n,
           EXISTS (SELECT 1 FROM pgqueue_dependencies r
                   WHERE r.namespace = :namespace AND r.depends_on = f.id),
           0, f.fence, f.progress, f.progress_message, f.attempt_log, f.error, f.stacktrace,
           f.opts,
           CASE WHEN :action::text = 'auto_retry' THEN f.entry_retry_count + 1 ELSE 0 END,
           CASE WHEN :action::text = 'auto_retry' THEN statement_timestamp() END,
           CASE WHEN :action::text = 'auto_retry' THEN f.entry_entered_at END
    FROM source f
    CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM pgqueue_dependencies w
                        WHERE w.namespace = :namespace AND w.job_id = f.id) deps
    ORDER BY f.entry_entered_at, f.id
    ON CONFLICT DO NOTHING
    RETURNING id, queue, state
), skipped AS (
    -- Entries left in the DLQ: their id is held by a live job.  (An entry
    -- without its failed row is stale and simply goes.)
    SELECT p.job_id FROM picked p
    WHERE p.job_id NOT IN (SELECT m.id FROM moved m)
      AND (p.held OR p.job_id IN (SELECT s.id FROM source s))
), entries AS (
    DELETE FROM pgqueue_dlq d
    USING picked p
    WHERE d.namespace = :namespace AND d.job_id = p.job_id
      AND p.job_id NOT IN (SELECT s.job_id FROM skipped s)
), failed AS (
    DELETE FROM pgqueue_finished f
    USING moved m
    WHERE f.namespace = :namespace AND f.id = m.id AND f.state = 'failed'
), skipped_json AS (
    SELECT jsonb_build_object('skipped', (SELECT coalesce(jsonb_agg(s.job_id ORDER BY s.job_id),
                                                          '[]'::jsonb)
                                          FROM skipped s)) AS payload
),
-- include: dlq_audit_insert(rows=moved m, id=m.id)
, events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, m.queue, m.id, 'redriven',
           jsonb_build_object('prev', 'failed', 'state', m.state, 'action', :action::text,
                              'actor', :actor::text, 'auditId', a.id)
    FROM moved m
    LEFT JOIN audit a ON true
    UNION ALL
    -- include: dlq_audit_event(extra=(SELECT x.payload FROM skipped_json x))
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=:namespace)
)
SELECT coalesce((SELECT array_agg(m.id ORDER BY m.id) FROM moved m), '{}') AS ids,
       coalesce((SELECT array_agg(s.job_id ORDER BY s.job_id) FROM skipped s), '{}') AS skipped,
       a.id AS audit_id, a.at AS audit_at
FROM (SELECT count(*) FROM notified) AS hint
LEFT JOIN audit a ON true

-- name: dlq_delete
-- Parameters: :namespace, :queue, the selection :job_ids, :reason, :older_than_ms,
-- :newer_than_ms, :retriable, :expired, :limit, and :default_config, :action,
-- :actor, :why, :recorded, :audit_when_empty, :now.
-- Delete the selected dead-letter entries of queue :queue of :namespace and their
-- failed rows (purge, remove one, expiry), with one 'removed' event per job, ONE
-- audit row and one 'dlq_audit' event, and one NOTIFY hint, all in this statement.
-- Entries locked by a concurrent operation are skipped, and so are entries
-- whose job live jobs still wait on (a flow parent, a dependsOn job): they
-- stay until the job is redriven or its dependents are gone, as a removal
-- would keep them (no dependent can be added to a failed job, so this
-- statement's snapshot sees them all).  The caller then drops, in the same
-- transaction, the edges dead dependents kept towards the deleted jobs
-- (dependency_edges_drop_dangling).  Selection as in dlq_selection (:job_ids,
-- :reason, :older_than_ms, :newer_than_ms, :retriable, :expired, :now), oldest first, at
-- most :limit (NULL: all).  :default_config the default DLQ config, :action
-- ('purge' | 'remove' | 'expire'), :actor, :why, :recorded the filter as recorded
-- (jsonb), :audit_when_empty audit even when nothing was deleted.  Returns the
-- deleted ids and the audit row.
WITH picked AS (
    SELECT d.job_id
    FROM pgqueue_dlq d
    LEFT JOIN pgqueue_queues q ON q.namespace = d.namespace AND q.queue = d.queue
    CROSS JOIN LATERAL (SELECT :default_config::jsonb || coalesce(q.dlq_config, '{}'::jsonb) AS config) c
    -- include: dlq_selection
      AND NOT EXISTS (SELECT 1 FROM pgqueue_dependencies w
                      JOIN pgqueue_jobs wj ON wj.namespace = w.namespace AND wj.id = w.job_id
                      WHERE w.namespace = :namespace AND w.depends_on = d.job_id)
    ORDER BY d.entered_at, d.job_id
    LIMIT :limit
    FOR UPDATE OF d SKIP LOCKED
), entries AS (
    DELETE FROM pgqueue_dlq d
    USING picked p
    WHERE d.namespace = :namespace AND d.job_id = p.job_id
    RETURNING d.job_id, d.queue
), dropped AS (
    DELETE FROM pgqueue_finished f
    USING entries e
    WHERE f.namespace = :namespace AND f.id = e.job_id AND f.state = 'failed'
    RETURNING f.id
),
-- include: dlq_audit_insert(rows=entries e, id=e.job_id)
, events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, e.queue, e.job_id, 'removed',
           jsonb_build_object('prev', 'failed', 'action', :action::text, 'actor', :actor::text,
                              'auditId', a.id)
    FROM entries e
    LEFT JOIN audit a ON true
    UNION ALL
    -- include: dlq_audit_event(extra='{}'::jsonb)
    RETURNING id, queue
), notified AS (
    -- include: notify_hint(namespace=:namespace)
)
SELECT coalesce((SELECT array_agg(e.job_id ORDER BY e.job_id) FROM entries e), '{}') AS ids,
       (SELECT count(*) FROM dropped)::int AS rows_dropped,
       a.id AS audit_id, a.at AS audit_at
FROM (SELECT count(*) FROM notified) AS hint
LEFT JOIN audit a ON true

-- name: dlq_entry_blockers
-- Parameters, in order: :namespace, :queue, :job_id.
-- How many live jobs wait on dead-lettered job :job_id of queue :queue (no row: no
-- such entry).  :namespace.
SELECT (SELECT count(*)::int
        FROM pgqueue_dependencies w
        JOIN pgqueue_jobs wj ON wj.namespace = w.namespace AND wj.id = w.job_id
        WHERE w.namespace = :namespace AND w.depends_on = d.job_id) AS blockers
FROM pgqueue_dlq d
WHERE d.namespace = :namespace AND d.queue = :queue AND d.job_id = :job_id

-- name: dlq_audit_list
-- Parameters, in order: :namespace, :queue, :limit.
-- The newest audit rows of DLQ operations, of queue :queue or (NULL) every queue.
-- :namespace, :limit.
SELECT id, at, actor, action, queue, job_ids, filter, reason, count
FROM pgqueue_dlq_audit
WHERE namespace = :namespace AND (:queue::text IS NULL OR queue = :queue::text)
ORDER BY id DESC
LIMIT :limit

-- name: dlq_upkeep_queues
-- For the leader's DLQ upkeep: every queue with dead-letter entries, its DLQ
-- config (defaults merged), how many entries it has, how many are expired and
-- how many are due for an auto-retry.  :namespace, :defaults the default DLQ
-- config (jsonb, wire names), :now the clock expiry and due-ness are judged at
-- (NULL: the database clock; a test passes a later instant to move time).
SELECT d.queue, min(c.config::text) AS config, count(*)::bigint AS total,
       count(*) FILTER (WHERE pgqueue_dlq_expires_at(d.entered_at, c.config)
                              <= clock.now)::bigint AS expired,
       count(*) FILTER (WHERE pgqueue_dlq_next_retry_at(d.entered_at, d.retry_count,
                                                        d.last_retry_at, c.config)
                              <= clock.now)::bigint AS due
FROM pgqueue_dlq d
CROSS JOIN (SELECT coalesce(:now::timestamptz, statement_timestamp()) AS now) clock
LEFT JOIN pgqueue_queues q ON q.namespace = d.namespace AND q.queue = d.queue
CROSS JOIN LATERAL (SELECT :defaults::jsonb || coalesce(q.dlq_config, '{}'::jsonb) AS config) c
WHERE d.namespace = :namespace
GROUP BY d.queue
ORDER BY d.queue

-- fragment: queue_config_get
-- The stored {column} of a queue (NULL: defaults).  :namespace, :queue.
SELECT {column} FROM pgqueue_queues WHERE namespace = :namespace AND queue = :queue

-- fragment: queue_config_merge
-- Merge the validated patch :patch into queue :queue's {column} (over the defaults :defaults
-- when none is stored yet), atomically; registers the queue when new.
-- :namespace.  Returns the config now stored.
INSERT INTO pgqueue_queues AS q (namespace, queue, {column})
VALUES (:namespace, :queue, :defaults::jsonb || :patch::jsonb)
ON CONFLICT (namespace, queue) DO UPDATE
    SET {column} = :defaults::jsonb || coalesce(q.{column}, '{}'::jsonb) || :patch::jsonb
RETURNING {column}

-- name: queue_dlq_config_get
-- The stored DLQ config of a queue (NULL: defaults).  :namespace, :queue.
-- include: queue_config_get(column=dlq_config)

-- name: queue_dlq_config_merge
-- :namespace, :queue, :defaults, :patch: merge the validated patch into the
-- queue's DLQ config (over the defaults when none is stored yet), atomically;
-- registers the queue when new.  Returns the config now stored.
-- include: queue_config_merge(column=dlq_config)

-- name: queue_stall_config_get
-- The stored stall config of a queue (NULL: defaults).  :namespace, :queue.
-- include: queue_config_get(column=stall_config)

-- name: queue_stall_config_merge
-- :namespace, :queue, :defaults, :patch: merge the validated patch into the
-- queue's stall config (over the defaults when none is stored yet), atomically;
-- registers the queue when new.  Returns the config now stored.
-- include: queue_config_merge(column=stall_config)
