-- fragment: scheduler_columns
-- The columns of a scheduler row as the flows read it (manager/cron/models.py).
s.name, s.queue, s.job_name, s.data, s.pattern, s.every_ms, s.timezone, s.immediately,
s.max_limit, s.start_at, s.end_at, s.prevent_overlap, s.skip_missed_on_restart,
s.skip_if_no_worker, s.priority, s.unique_key, s.dedup, s.job_options, s.source,
s.executions, s.next_run_at, s.last_run_at, s.created_at, s.updated_at

-- name: scheduler_lock
-- The scheduler $2 of namespace $1, locked for an upsert, and the database clock
-- (no row: a new scheduler; the caller reads the clock with scheduler_clock).
SELECT s.executions, s.next_run_at, statement_timestamp() AS now
FROM pgqueue_schedulers s
WHERE s.namespace = $1 AND s.name = $2
FOR UPDATE

-- name: scheduler_clock
-- The database clock, which every schedule is computed on.
SELECT statement_timestamp() AS now

-- name: scheduler_upsert
-- Parameters: :namespace, :name, :queue, :job_name, :data, :pattern, :every_ms,
-- :timezone, :immediately, :max_limit, :start_at, :end_at, :prevent_overlap,
-- :skip_missed_on_restart, :skip_if_no_worker, :priority, :unique_key, :dedup,
-- :job_options, :source, :executions, :next_run_at.
-- Create scheduler :name of :namespace, or replace what it does; :executions
-- is the count a new row starts from (an update keeps its own).  :data is the
-- JSON text as sent (json); :dedup and :job_options are engine documents
-- (jsonb).  :next_run_at: its next tick on the database clock (NULL: spent).
-- Returns the row.
INSERT INTO pgqueue_schedulers AS s (
    namespace, name, queue, job_name, data, pattern, every_ms, timezone, immediately,
    max_limit, start_at, end_at, prevent_overlap, skip_missed_on_restart, skip_if_no_worker,
    priority, unique_key, dedup, job_options, source, executions, next_run_at)
VALUES (:namespace, :name, :queue, :job_name, :data::json, :pattern, :every_ms::bigint,
        :timezone, :immediately, :max_limit::int, :start_at::timestamptz, :end_at::timestamptz,
        :prevent_overlap, :skip_missed_on_restart, :skip_if_no_worker, :priority::int,
        :unique_key, :dedup::jsonb, :job_options::jsonb, :source, :executions::int,
        :next_run_at::timestamptz)
ON CONFLICT (namespace, name) DO UPDATE SET
    queue = EXCLUDED.queue,
    job_name = EXCLUDED.job_name,
    data = EXCLUDED.data,
    pattern = EXCLUDED.pattern,
    every_ms = EXCLUDED.every_ms,
    timezone = EXCLUDED.timezone,
    immediately = EXCLUDED.immediately,
    max_limit = EXCLUDED.max_limit,
    start_at = EXCLUDED.start_at,
    end_at = EXCLUDED.end_at,
    prevent_overlap = EXCLUDED.prevent_overlap,
    skip_missed_on_restart = EXCLUDED.skip_missed_on_restart,
    skip_if_no_worker = EXCLUDED.skip_if_no_worker,
    priority = EXCLUDED.priority,
    unique_key = EXCLUDED.unique_key,
    dedup = EXCLUDED.dedup,
    job_options = EXCLUDED.job_options,
    source = EXCLUDED.source,
    next_run_at = EXCLUDED.next_run_at,
    updated_at = statement_timestamp()
RETURNING
-- include: scheduler_columns

-- name: scheduler_get
-- Scheduler $2 of namespace $1 (no row: none).
SELECT
-- include: scheduler_columns
FROM pgqueue_schedulers s
WHERE s.namespace = $1 AND s.name = $2

-- name: scheduler_list
-- The schedulers of namespace $1 (of queue $2; NULL: every queue), by name,
-- at most $3.
SELECT
-- include: scheduler_columns
FROM pgqueue_schedulers s
WHERE s.namespace = $1 AND ($2::text IS NULL OR s.queue = $2)
ORDER BY s.name
LIMIT $3

-- name: scheduler_delete
-- Remove scheduler $2 of namespace $1 with its tick records.  Returns its name
-- (no row: unknown).
WITH gone AS (
    DELETE FROM pgqueue_schedulers s WHERE s.namespace = $1 AND s.name = $2 RETURNING s.name
), ticks AS (
    DELETE FROM pgqueue_scheduler_ticks t
    WHERE t.namespace = $1 AND t.scheduler IN (SELECT name FROM gone)
)
SELECT name FROM gone

-- name: scheduler_lock_due
-- Due schedulers of namespace $1, at most $2, locked with SKIP LOCKED so that
-- brokers ticking at once share them out; $3 the clock they are judged against
-- (NULL: the database clock; a test passes a later instant to move time).
-- Returns each row with that instant (now) and whether its queue has a live
-- worker (seen within $4 ms).
WITH clock AS (SELECT coalesce($3::timestamptz, statement_timestamp()) AS now)
SELECT
-- include: scheduler_columns
       , clock.now,
       EXISTS (SELECT 1 FROM pgqueue_workers w
               WHERE w.namespace = s.namespace AND s.queue = ANY (w.queues)
                 AND w.last_seen > clock.now - $4::bigint * interval '1 millisecond')
           AS has_worker
FROM pgqueue_schedulers s, clock
WHERE s.namespace = $1 AND s.next_run_at <= clock.now
ORDER BY s.next_run_at, s.name
LIMIT $2
FOR UPDATE OF s SKIP LOCKED

-- name: scheduler_ticks_claim
-- Parameters: :namespace, :scheduler, :ticks, :job_ids, :outcome, :broker_id.
-- Record ticks :ticks of scheduler :scheduler (with the ids their jobs will
-- get, :job_ids, and :outcome admitted / no-worker).  The primary key
-- (namespace, scheduler, tick_at) makes each tick admissible once: a tick
-- some transaction already recorded is skipped.  Returns the ticks recorded.
INSERT INTO pgqueue_scheduler_ticks (namespace, scheduler, tick_at, job_id, outcome, broker_id)
SELECT :namespace, :scheduler, t.tick_at, t.job_id, :outcome, :broker_id
FROM unnest(:ticks::timestamptz[], :job_ids::text[]) AS t (tick_at, job_id)
ON CONFLICT (namespace, scheduler, tick_at) DO NOTHING
RETURNING tick_at, job_id

-- name: scheduler_ticks_overlapped
-- Ticks of scheduler $2 (namespace $1) at $3 whose job was not admitted
-- because a live one holds the scheduler's unique key: outcome 'overlap',
-- job_id the live job ($4).
UPDATE pgqueue_scheduler_ticks t
SET outcome = 'overlap', job_id = o.job_id
FROM unnest($3::timestamptz[], $4::text[]) AS o (tick_at, job_id)
WHERE t.namespace = $1 AND t.scheduler = $2 AND t.tick_at = o.tick_at

-- name: scheduler_advance
-- After a pass: scheduler $2 (namespace $1) ran $3 more executions, its last
-- tick was $4 (NULL: keep) and its next run is $5 (NULL: spent).  A
-- compare-and-set on the next run the pass read ($6): a row changed meanwhile
-- (an upsert) is left as it is.  Returns the row (no row: changed).
UPDATE pgqueue_schedulers s
SET executions = s.executions + $3::int,
    last_run_at = coalesce($4::timestamptz, s.last_run_at),
    next_run_at = $5::timestamptz,
    updated_at = statement_timestamp()
WHERE s.namespace = $1 AND s.name = $2 AND s.next_run_at = $6::timestamptz
RETURNING s.name

-- name: scheduler_ticks_prune
-- Forget tick records of namespace $1 admitted before $2 ms ago (the
-- schedulers' next runs are long past them), at most $3 per call.
DELETE FROM pgqueue_scheduler_ticks t
USING (SELECT namespace, scheduler, tick_at FROM pgqueue_scheduler_ticks
       WHERE namespace = $1
         AND admitted_at < statement_timestamp() - $2::bigint * interval '1 millisecond'
       LIMIT $3) old
WHERE t.namespace = old.namespace AND t.scheduler = old.scheduler AND t.tick_at = old.tick_at

-- name: scheduler_tick_job
-- The job admitted for tick $3 of scheduler $2 (namespace $1); no row: none.
SELECT t.job_id FROM pgqueue_scheduler_ticks t
WHERE t.namespace = $1 AND t.scheduler = $2 AND t.tick_at = $3
