-- name: job_extend_leases
-- Renew leases: each a compare-and-set on (id, active, token) with the lease
-- still valid on the database clock, never past the job's processing
-- deadline.  The renewing broker takes over responsibility for the lease.
-- A lease of this session that already runs for at least 3/4 of the asked
-- duration counts as renewed without a write: a worker's heartbeat right after
-- its pull (bunqueue's TS worker sends one) then does not wait on the row
-- locks of its own acks (nor records last_heartbeat_at: the view shows the
-- claim or the previous renewal, at most a quarter lease earlier).  Nothing is renewed when the broker session is not
-- live.  :namespace, :ids, :tokens, :durations_ms, :broker_id,
-- :session_id.
WITH input AS (
    SELECT * FROM unnest(:ids::text[], :tokens::text[], :durations_ms::bigint[])
                  WITH ORDINALITY AS t(id, token, duration_ms, ord)
), valid AS (
    SELECT i.ord, i.id, i.token, greatest(i.duration_ms, 1) AS duration_ms, j.lease_until,
           (j.lease_session = :session_id::uuid
            AND j.lease_until >= statement_timestamp()
                + greatest(i.duration_ms, 1) * 0.75 * interval '1 millisecond') AS fresh
    FROM input i
    JOIN pgqueue_jobs j ON j.namespace = :namespace AND j.id = i.id
    WHERE j.state = 'active'
      AND j.lease_token = i.token
      AND j.lease_until > statement_timestamp()
      AND EXISTS (SELECT 1 FROM pgqueue_brokers b
                  WHERE b.namespace = :namespace AND b.broker_id = :broker_id AND b.session_id = :session_id::uuid)
), renewed AS (
    UPDATE pgqueue_jobs j
    SET lease_until = least(
            statement_timestamp() + v.duration_ms * interval '1 millisecond',
            coalesce(j.started_at + j.timeout_ms * interval '1 millisecond', 'infinity')),
        last_heartbeat_at = statement_timestamp(),
        lease_broker = :broker_id,
        lease_session = :session_id::uuid
    FROM valid v
    WHERE NOT v.fresh
      AND j.namespace = :namespace
      AND j.id = v.id
      AND j.state = 'active'
      AND j.lease_token = v.token
      AND j.lease_until > statement_timestamp()
    RETURNING v.ord, j.id, (extract(epoch FROM j.lease_until) * 1000)::float8 AS lease_until
)
SELECT r.ord, r.id, r.lease_until FROM renewed r
UNION ALL
SELECT v.ord, v.id, (extract(epoch FROM v.lease_until) * 1000)::float8 FROM valid v
WHERE v.fresh

-- name: job_lock_session_leases
-- The active jobs leased through one broker session (graceful shutdown
-- releases them at once).  :namespace, :session_id, :limit.
SELECT j.id, j.fence
FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.state = 'active' AND j.lease_session = :session_id::uuid
ORDER BY j.id
LIMIT :limit
FOR UPDATE SKIP LOCKED

-- name: job_lock_expired_leases
-- Active jobs whose lease ended on the database clock, oldest first, locked
-- for the reaper.  :namespace, :limit, :now the clock (NULL: the database
-- clock; a test passes a later instant to move time).
SELECT j.id, j.queue, j.fence, j.attempts, j.max_attempts, j.backoff_type, j.backoff_ms,
       j.backoff_max_ms, j.stall_count, j.timeout_ms, j.stall_timeout_ms,
       j.lease_owner, j.lease_broker, j.attempt_log,
       (extract(epoch FROM j.started_at) * 1000)::float8 AS started_at,
       (extract(epoch FROM j.lease_until) * 1000)::float8 AS lease_until,
       (j.timeout_ms IS NOT NULL
        AND j.started_at + j.timeout_ms * interval '1 millisecond' <= clock.now)
           AS timed_out,
       (extract(epoch FROM clock.now) * 1000)::float8 AS now
FROM pgqueue_jobs j,
     (SELECT coalesce(:now::timestamptz, statement_timestamp()) AS now) clock
WHERE j.namespace = :namespace AND j.state = 'active' AND j.lease_until <= clock.now
ORDER BY j.lease_until, j.id
LIMIT :limit
FOR UPDATE OF j SKIP LOCKED

-- name: job_lock_expired_ttl
-- Pending jobs whose TTL passed on the database clock, locked for the reaper.
-- :namespace, :limit, :now the clock (NULL: the database clock).
SELECT j.id, j.queue, j.fence, j.attempt_log
FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.state = 'pending'
  AND j.expires_at <= coalesce(:now::timestamptz, statement_timestamp())
ORDER BY j.expires_at, j.id
LIMIT :limit
FOR UPDATE OF j SKIP LOCKED

-- name: queue_stall_configs
-- Stall settings of the given queues.  :namespace, :queues.
SELECT queue, stall_config FROM pgqueue_queues
WHERE namespace = :namespace AND queue = ANY(:queues::text[]) AND stall_config IS NOT NULL
