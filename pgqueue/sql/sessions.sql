-- name: session_register
-- Register a broker session; take over the broker id when its holder is stale.
-- :namespace, :broker_id, :session_id, :stale_ms, :hostname, :pid,
-- :host_key, :process_start (see liveness.py).
-- Returns no row when a live session of another process holds the id.
INSERT INTO pgqueue_brokers AS b
    (namespace, broker_id, session_id, started_at, heartbeat_at, hostname, pid, host_key,
     process_start)
VALUES (:namespace, :broker_id, :session_id::uuid, clock_timestamp(), clock_timestamp(), :hostname, :pid, :host_key, :process_start)
ON CONFLICT (namespace, broker_id) DO UPDATE
    SET session_id = EXCLUDED.session_id,
        started_at = EXCLUDED.started_at,
        heartbeat_at = EXCLUDED.heartbeat_at,
        hostname = EXCLUDED.hostname,
        pid = EXCLUDED.pid,
        host_key = EXCLUDED.host_key,
        process_start = EXCLUDED.process_start
    WHERE b.session_id = EXCLUDED.session_id
       OR b.heartbeat_at <= clock_timestamp() - :stale_ms::bigint * interval '1 millisecond'
RETURNING session_id

-- name: session_holder_get
-- Parameters, in order: :namespace, :broker_id.
-- The session holding broker id :broker_id and its process.  :namespace, :broker_id.
SELECT session_id::text AS session_id, hostname, pid, host_key, process_start,
       (extract(epoch FROM heartbeat_at) * 1000)::float8 AS heartbeat_at,
       (extract(epoch FROM clock_timestamp() - heartbeat_at) * 1000)::float8 AS silent_ms
FROM pgqueue_brokers
WHERE namespace = :namespace AND broker_id = :broker_id

-- name: session_take_over
-- Replace the old session of a broker id (its process is provably gone) by ours.
-- Compare-and-set on the old session id: no row when it changed meanwhile.
-- :namespace, :broker_id, :session_id new session_id, :old_session_id old session_id, :hostname,
-- :pid, :host_key, :process_start.
UPDATE pgqueue_brokers
SET session_id = :session_id::uuid,
    started_at = clock_timestamp(),
    heartbeat_at = clock_timestamp(),
    hostname = :hostname,
    pid = :pid,
    host_key = :host_key,
    process_start = :process_start
WHERE namespace = :namespace AND broker_id = :broker_id AND session_id = :old_session_id::uuid
RETURNING session_id

-- name: session_heartbeat
-- Renew this session; no row means it was taken over (fenced).
-- :namespace, :broker_id, :session_id.
UPDATE pgqueue_brokers
SET heartbeat_at = clock_timestamp()
WHERE namespace = :namespace AND broker_id = :broker_id AND session_id = :session_id::uuid
RETURNING heartbeat_at

-- name: session_end
-- Delete this session's row (graceful shutdown).  :namespace, :broker_id, :session_id.
DELETE FROM pgqueue_brokers
WHERE namespace = :namespace AND broker_id = :broker_id AND session_id = :session_id::uuid

-- name: session_list
-- Every broker session of a namespace, with liveness on the database clock.
-- :namespace, :session_stale_ms.
SELECT broker_id, session_id::text AS session_id, hostname, pid,
       (extract(epoch FROM started_at) * 1000)::float8 AS started_at,
       (extract(epoch FROM heartbeat_at) * 1000)::float8 AS heartbeat_at,
       heartbeat_at > clock_timestamp() - :session_stale_ms::bigint * interval '1 millisecond' AS live
FROM pgqueue_brokers
WHERE namespace = :namespace
ORDER BY broker_id

-- name: session_purge_stale
-- Parameters, in order: :namespace, :stale_ms.
-- Remove sessions stale for longer than :stale_ms (their leases expire on their own).
DELETE FROM pgqueue_brokers
WHERE namespace = :namespace AND heartbeat_at <= clock_timestamp() - :stale_ms::bigint * interval '1 millisecond'

-- name: session_mark_draining
-- This session began to drain (SIGTERM): it serves what is in flight, takes nothing new.
-- :namespace, :broker_id, :session_id.
UPDATE pgqueue_brokers
SET draining_since = coalesce(draining_since, clock_timestamp())
WHERE namespace = :namespace AND broker_id = :broker_id AND session_id = :session_id::uuid
