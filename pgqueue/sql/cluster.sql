-- name: broker_overview
-- Every broker session of a namespace: its process, liveness on the database clock,
-- whether it drains, whether it holds the maintenance seat, and the status it last
-- reported (broker_status_report: LISTEN, projection staleness; NULL until then).
-- :namespace, :session_stale_ms, :maintenance_seat name.
SELECT b.broker_id, b.session_id::text AS session_id, b.hostname, b.pid,
       (extract(epoch FROM b.started_at) * 1000)::float8 AS started_at,
       (extract(epoch FROM b.heartbeat_at) * 1000)::float8 AS heartbeat_at,
       (extract(epoch FROM clock_timestamp() - b.heartbeat_at) * 1000)::float8 AS silent_ms,
       b.heartbeat_at > clock_timestamp() - :session_stale_ms::bigint * interval '1 millisecond' AS live,
       (extract(epoch FROM b.draining_since) * 1000)::float8 AS draining_since,
       (l.holder IS NOT NULL) AS leader,
       b.status::text AS status,
       (extract(epoch FROM clock_timestamp() - b.heartbeat_at) * 1000)::float8 AS status_age_ms
FROM pgqueue_brokers b
LEFT JOIN pgqueue_leaders l
       ON l.namespace = b.namespace AND l.name = :maintenance_seat AND l.holder = b.session_id
      AND l.expires_at > clock_timestamp()
WHERE b.namespace = :namespace
ORDER BY b.broker_id

-- name: broker_status_report
-- A broker's own status (what only it knows: LISTEN or poll-only, projection
-- staleness), written on its session row with each report.  :namespace,
-- :session_id, :status the status document.
UPDATE pgqueue_brokers SET status = :status::jsonb
WHERE namespace = :namespace AND session_id = :session_id::uuid

-- name: broker_rate_throttled
-- The claims a full rate window held back on the other live brokers of :namespace
-- (all but session :session_id), by queue, as their last status reports give them
-- (``rateThrottled``; a report without it counts nothing).  :session_stale_ms.
SELECT t.key AS queue, sum(t.value::text::bigint)::bigint AS throttled
FROM pgqueue_brokers b
CROSS JOIN LATERAL jsonb_each(
    CASE WHEN jsonb_typeof(b.status -> 'rateThrottled') = 'object'
         THEN b.status -> 'rateThrottled' ELSE '{}'::jsonb END) t
WHERE b.namespace = :namespace
  AND b.session_id <> :session_id::uuid
  AND b.heartbeat_at > clock_timestamp() - :session_stale_ms::bigint * interval '1 millisecond'
  AND jsonb_typeof(t.value) = 'number'
GROUP BY t.key
