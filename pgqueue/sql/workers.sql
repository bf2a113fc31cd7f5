-- name: worker_register
-- Parameters, in order: :namespace, :worker_id, :name, :queues, :slots, :hostname, :process, :broker_id, :session_id, :client_id.
-- Register a worker, or refresh its registration (a reconnect registers
-- again): the registering broker (:broker_id, :session_id) and client
-- connection (:client_id) take it over; counters and registered_at stay.
-- :namespace, :worker_id, :name, :queues, :slots concurrency,
-- :hostname, :process pid.  Returns the row and the database clock.
INSERT INTO pgqueue_workers AS w (
    namespace, worker_id, name, queues, concurrency, hostname, pid, broker_id,
    session_id, client_id, registered_at, last_seen)
VALUES (:namespace, :worker_id, :name, :queues::text[], :slots::int, :hostname::text, :process::int, :broker_id::text, :session_id::uuid, :client_id::text,
        statement_timestamp(), statement_timestamp())
ON CONFLICT (namespace, worker_id) DO UPDATE SET
    name = EXCLUDED.name,
    queues = EXCLUDED.queues,
    concurrency = EXCLUDED.concurrency,
    hostname = coalesce(EXCLUDED.hostname, w.hostname),
    pid = coalesce(EXCLUDED.pid, w.pid),
    broker_id = EXCLUDED.broker_id,
    session_id = EXCLUDED.session_id,
    client_id = EXCLUDED.client_id,
    last_seen = EXCLUDED.last_seen
RETURNING w.*, statement_timestamp() AS now

-- name: worker_heartbeat
-- Parameters, in order: :namespace, :worker_id, :active_jobs, :processed, :failed.
-- A worker is alive; optionally its own counters (:active_jobs,
-- :processed, :failed; NULL keeps).  :namespace, :worker_id.
-- Returns the worker_id (no row: not registered).
UPDATE pgqueue_workers w
SET last_seen = statement_timestamp(),
    active_jobs = coalesce(:active_jobs::int, w.active_jobs),
    processed = coalesce(:processed::bigint, w.processed),
    failed = coalesce(:failed::bigint, w.failed)
WHERE w.namespace = :namespace AND w.worker_id = :worker_id
RETURNING w.worker_id

-- name: worker_unregister
-- Remove one worker.  :namespace, :worker_id.  Returns it (no row: unknown).
DELETE FROM pgqueue_workers w
WHERE w.namespace = :namespace AND w.worker_id = :worker_id
RETURNING w.worker_id

-- name: worker_unregister_client
-- Remove the workers a client connection of this broker registered (the
-- connection closed).  :namespace, :broker_id, :client_id.
-- Returns how many.
WITH removed AS (
    DELETE FROM pgqueue_workers w
    WHERE w.namespace = :namespace AND w.broker_id = :broker_id AND w.client_id = :client_id
    RETURNING 1
)
SELECT count(*)::int AS removed FROM removed

-- name: worker_list
-- Parameters, in order: :namespace, :worker_timeout_ms, :limit, :now.
-- Registered workers with the clock and whether each was seen in the last
-- :worker_timeout_ms before it.  :namespace, :limit; :now the clock (NULL: the
-- database clock; a test passes a later instant to move time).
SELECT w.*, c.now,
       w.last_seen > c.now - :worker_timeout_ms::bigint * interval '1 millisecond' AS active
FROM pgqueue_workers w,
     (SELECT coalesce(:now::timestamptz, statement_timestamp()) AS now) c
WHERE w.namespace = :namespace
ORDER BY w.registered_at, w.worker_id
LIMIT :limit
