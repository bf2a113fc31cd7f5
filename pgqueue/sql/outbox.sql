-- name: event_read_after
-- Outbox events after the cursor ($2 xid, $3 id), in commit-safe order: only
-- rows whose transaction is older than this snapshot's xmin, so no
-- transaction that is still running can later add a row behind the cursor.
-- $1 namespace, $4 limit.
SELECT e.id, e.xid, e.queue, e.job_id, e.type, e.payload,
       (extract(epoch FROM e.created_at) * 1000)::float8 AS ts
FROM pgqueue_events e
WHERE e.namespace = $1
  AND (e.xid, e.id) > ($2::bigint, $3::bigint)
  AND e.xid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
ORDER BY e.xid, e.id
LIMIT $4

-- name: event_positions_after
-- The fast path, step 1: positions of every committed event after the cursor
-- ($2 xid, $3 id), commit-safe or not yet, in (xid, id) order — an index-only
-- read of the cursor index.  $1 namespace, $4 limit.
SELECT e.id, e.xid
FROM pgqueue_events e
WHERE e.namespace = $1 AND (e.xid, e.id) > ($2::bigint, $3::bigint)
ORDER BY e.xid, e.id
LIMIT $4

-- name: event_read_by_ids
-- The fast path, step 2: the rows of the events not delivered yet, in (xid,
-- id) order (which keeps the events of one job in order: its transactions
-- are serialised by the row lock).  $1 namespace, $2 ids.
SELECT e.id, e.xid, e.queue, e.job_id, e.type, e.payload,
       (extract(epoch FROM e.created_at) * 1000)::float8 AS ts
FROM pgqueue_events e
WHERE e.namespace = $1 AND e.id = ANY($2::bigint[])
ORDER BY e.xid, e.id

-- name: event_horizon
-- The commit-safe horizon (snapshot xmin) and the transaction holding it back.
SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin,
       pg_current_snapshot()::text AS snapshot,
       (SELECT json_build_object('pid', a.pid, 'xact_start', a.xact_start,
                                 'state', a.state, 'query', left(a.query, 200),
                                 'application_name', a.application_name)
        FROM pg_stat_activity a
        WHERE a.backend_xid IS NOT NULL
        ORDER BY age(a.backend_xid) DESC
        LIMIT 1)::text AS oldest

-- name: event_read_range
-- Catch-up read for one subscriber: events after ($2, $3) up to and including
-- ($4, $5), optionally of one queue ($6 NULL = all).  $1 namespace, $7 limit.
SELECT e.id, e.xid, e.queue, e.job_id, e.type, e.payload,
       (extract(epoch FROM e.created_at) * 1000)::float8 AS ts
FROM pgqueue_events e
WHERE e.namespace = $1
  AND (e.xid, e.id) > ($2::bigint, $3::bigint)
  AND (e.xid, e.id) <= ($4::bigint, $5::bigint)
  AND ($6::text IS NULL OR e.queue = $6::text)
ORDER BY e.xid, e.id
LIMIT $7

-- name: event_safe_horizon
-- The commit-safe cursor a new reader starts from: every transaction with a
-- smaller xid has ended.
SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1 AS xid
