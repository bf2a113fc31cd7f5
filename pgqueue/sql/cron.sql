-- fragment: scheduler_columns
-- The columns of a scheduler row as the flows read it (manager/cron/models.py).
s.name, s.queue, s.job_name, s.data, s.pattern, s.every_ms, s.timezone, s.immediately,
s.max_limit, s.start_at, s.end_at, s.prevent_overlap, s.skip_missed_on_restart,
s.skip_if_no_worker, s.priority, s.unique_key, s.dedup, s.job_options, s.source,
s.executions, s.next_run_at, s.last_run_at, s.created_at, s.updated_at

-- name: scheduler_lock
-- Parameters, in order: :namespace, :name.
-- The scheduler :name of namespace :namespace, locked for an upsert, and the database clock
-- (no row: a new scheduler; the caller reads the clock with scheduler_clock).
SELECT s.executions, s.next_run_at, statement_timestamp() AS now
FROM pgqueue_schedulers s
WHERE s.namespace = :namespace AND s.name = :name
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
-- Parameters, in order: :namespace, :name.
-- Scheduler :name of namespace :namespace (no row: none).
SELECT
-- include: scheduler_columns
FROM pgqueue_schedulers s
WHERE s.namespace = :namespace AND s.name = :name

-- name: scheduler_list
-- The schedulers of namespace :namespace (of queue :queue; NULL: every queue), by name,
-- at most :limit.
SELECT
-- include: scheduler_columns
FROM pgqueue_schedulers s
WHERE s.namespace = :namespace AND (:queue::text IS NULL OR s.queue = :queue)
ORDER BY s.name
LIMIT :limit

-- name: scheduler_delete
-- Parameters, in order: :namespace, :name.
-- Remove scheduler :name of namespace :namespace with its tick records.  Returns its name
-- (no row: unknown).
WITH gone AS (
    DELETE FROM pgqueue_schedulers s WHERE s.namespace = :namespace AND s.name = :name RETURNING s.name
), ticks AS (
    DELETE FROM pgqueue_scheduler_ticks t
    WHERE t.namespace = :namespace AND t.scheduler IN (SELECT name FROM gone)
)
SELECT name FROM gone

-- name: scheduler_lock_due
-- Due schedulers of namespace :namespace, at most :limit, locked with SKIP LOCKED so that
-- brokers ticking at once share them out; :now the clock they are judged against
-- (NULL: the database clock; a test passes a later instant to move time).
-- Returns each row with that instant (now) and whether its queue has a live
-- worker (seen within :worker_stale_ms).
WITH clock AS (SELECT coalesce(:now::timestamptz, statement_timestamp()) AS now)
SELECT
-- include: scheduler_columns
       , clock.now,
       EXISTS (SELECT 1 FROM pgqueue_workers w
               WHERE w.namespace = s.namespace AND s.queue = ANY (w.queues)
                 AND w.last_seen > clock.now - :worker_stale_ms::bigint * interval '1 millisecond')
           AS has_worker
FROM pgqueue_schedulers s, clock
WHERE s.namespace = :namespace AND s.next_run_at <= clock.now
ORDER BY s.next_run_at, s.name
LIMIT :limit
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
-- Parameters, in order: :namespace, :name, :tick_ats, :job_ids.
-- Ticks of scheduler :name (namespace :namespace) at :tick_ats whose job was not admitted
-- because a live one holds the scheduler's unique key: outcome 'overlap',
-- job_id the live job (:job_ids).
UPDATE pgqueue_scheduler_ticks t
SET outcome = 'overlap', job_id = o.job_id
FROM unnest(:tick_ats::timestamptz[], :job_ids::text[]) AS o (tick_at, job_id)
WHERE t.namespace = :namespace AND t.scheduler = :name AND t.tick_at = o.tick_at

-- name: scheduler_advance
-- Parameters, in order: :namespace, :name, :executions, :last_run_at, :next_run_at, :expected_next_run_at.
-- After a pass: scheduler :name (namespace :namespace) ran :executions more executions, its last
-- tick was :last_run_at (NULL: keep) and its next run is :next_run_at (NULL: spent).  A
-- compare-and-set on the next run the pass read (:expected_next_run_at): a row changed meanwhile
-- (an upsert) is left as it is.  Returns the row (no row: changed).
UPDATE pgqueue_schedulers s
SET executions = s.executions + :executions::int,
    last_run_at = coalesce(:last_run_at::timestamptz, s.last_run_at),
    next_run_at = :next_run_at::timestamptz,
    updated_at = statement_timestamp()
WHERE s.namespace = :namespace AND s.name = :name AND s.next_run_at = :expected_next_run_at::timestamptz
RETURNING s.name

-- name: scheduler_ticks_prune
-- Forget tick records of namespace :namespace admitted before :kept_ms ago (the
-- schedulers' next runs are long past them), at most :limit per call.
DELETE FROM pgqueue_scheduler_ticks t
USING (SELECT namespace, scheduler, tick_at FROM pgqueue_scheduler_ticks
       WHERE namespace = :namespace
         AND admitted_at < statement_timestamp() - :kept_ms::bigint * interval '1 millisecond'
       LIMIT :limit) old
WHERE t.namespace = old.namespace AND t.scheduler = old.scheduler AND t.tick_at = old.tick_at

-- name: scheduler_tick_job
-- Parameters, in order: :namespace, :name, :first.
-- The job admitted for tick :first of scheduler :name (namespace :namespace); no row: none.
SELECT t.job_id FROM pgqueue_scheduler_ticks t
WHERE t.namespace = :namespace AND t.scheduler = :name AND t.tick_at = :first
