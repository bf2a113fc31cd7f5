-- name: worker_register
-- Register a worker, or refresh its registration (a reconnect registers
-- again): the registering broker ($8 broker_id, $9 session_id) and client
-- connection ($10) take it over; counters and registered_at stay.
-- $1 namespace, $2 worker_id, $3 name, $4 queues, $5 concurrency,
-- $6 hostname, $7 pid.  Returns the row and the database clock.
INSERT INTO pgqueue_workers AS w (
    namespace, worker_id, name, queues, concurrency, hostname, pid, broker_id,
    session_id, client_id, registered_at, last_seen)
VALUES ($1, $2, $3, $4::text[], $5::int, $6::text, $7::int, $8::text, $9::uuid, $10::text,
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
-- A worker is alive; optionally its own counters ($3 active jobs,
-- $4 processed, $5 failed; NULL keeps).  $1 namespace, $2 worker_id.
-- Returns the worker_id (no row: not registered).
UPDATE pgqueue_workers w
SET last_seen = statement_timestamp(),
    active_jobs = coalesce($3::int, w.active_jobs),
    processed = coalesce($4::bigint, w.processed),
    failed = coalesce($5::bigint, w.failed)
WHERE w.namespace = $1 AND w.worker_id = $2
RETURNING w.worker_id

-- name: worker_unregister
-- Remove one worker.  $1 namespace, $2 worker_id.  Returns it (no row: unknown).
DELETE FROM pgqueue_workers w
WHERE w.namespace = $1 AND w.worker_id = $2
RETURNING w.worker_id

-- name: worker_unregister_client
-- Remove the workers a client connection of this broker registered (the
-- connection closed).  $1 namespace, $2 broker_id, $3 client_id.
-- Returns how many.
WITH removed AS (
    DELETE FROM pgqueue_workers w
    WHERE w.namespace = $1 AND w.broker_id = $2 AND w.client_id = $3
    RETURNING 1
)
SELECT count(*)::int AS removed FROM removed

-- name: worker_list
-- Registered workers with the database clock and whether each was seen in
-- the last $2 ms.  $1 namespace, $3 limit.
SELECT w.*, statement_timestamp() AS now,
       w.last_seen > statement_timestamp() - $2::bigint * interval '1 millisecond' AS active
FROM pgqueue_workers w
WHERE w.namespace = $1
ORDER BY w.registered_at, w.worker_id
LIMIT $3
