-- fragment: notify_hint
-- The NOTIFY hint for the events a statement has just written (a CTE `events`
-- of their id and queue), in its transaction: the namespace ({namespace}, the
-- parameter that holds it), the id range, and the queues when there are at most
-- 16 of them (more: no list, and every waiter of the namespace looks, so the
-- payload stays far below PostgreSQL's 8000-byte cap).  No event: no row, no NOTIFY.
SELECT pg_notify('pgqueue_events', json_build_object(
           'ns', {namespace}::text, 'a', min(e.id), 'b', max(e.id),
           'q', CASE WHEN count(DISTINCT e.queue) <= 16
                     THEN array_agg(DISTINCT e.queue) END)::text)
FROM events e
HAVING count(*) > 0

-- name: event_snapshot
-- The database's "now" for the outbox: the current snapshot.  Every event of a
-- transaction it counts as finished is committed and readable (or was rolled
-- back); the others may still come.
SELECT pg_current_snapshot()::text AS snapshot

-- name: event_read_delta
-- The events a reader has not seen yet, in (xid, id) order.  The reader has
-- seen every event of the transactions finished in its snapshot S (given as
-- $2 its running xids, $3 its xmax): what is new belongs to a transaction S
-- counted as running (part a: a few index lookups) or that began after S
-- (part b: a range from $3 on).  A read in batches takes the snapshot N of its
-- first statement (returned in `snapshot`) and keeps to it: $4 N's xmax and
-- $5 its running xids (NULL for the first batch: this statement's own
-- snapshot), after the position ($6 xid, $7 id) where the last batch ended.
-- $8 queue (NULL = all), $9 limit.  A long transaction anywhere never holds
-- this read back: it only stays in the running xids.  $1 namespace.
-- `pruned` (read in the same snapshot as the rows) is the highest transaction
-- whose events of the queue(s) retention deleted: the reader lost events when
-- it had not seen that one yet.  `now_ms`: the database clock.
WITH now AS (
    SELECT pg_current_snapshot()::text AS snapshot,
           (SELECT max(m.xid) FROM pgqueue_event_prune_marks m
            WHERE m.namespace = $1 AND ($8::text IS NULL OR m.queue = $8::text)) AS pruned,
           (extract(epoch FROM statement_timestamp()) * 1000)::float8 AS now_ms
), fresh AS (
    (SELECT e.id, e.xid, e.queue, e.job_id, e.type, e.payload, e.created_at
     FROM pgqueue_events e
     WHERE e.namespace = $1
       AND e.xid = ANY($2::bigint[])
       AND (e.xid, e.id) > ($6::bigint, $7::bigint)
       AND ($4::bigint IS NULL OR (e.xid < $4::bigint AND e.xid <> ALL($5::bigint[])))
       AND ($8::text IS NULL OR e.queue = $8::text)
     ORDER BY e.xid, e.id
     LIMIT $9)
    UNION ALL
    (SELECT e.id, e.xid, e.queue, e.job_id, e.type, e.payload, e.created_at
     FROM pgqueue_events e
     WHERE e.namespace = $1
       AND (e.xid, e.id) > (greatest($3::bigint - 1, $6::bigint),
                            CASE WHEN $3::bigint - 1 >= $6::bigint THEN 9223372036854775807
                                 ELSE $7::bigint END)
       AND ($4::bigint IS NULL OR (e.xid < $4::bigint AND e.xid <> ALL($5::bigint[])))
       AND ($8::text IS NULL OR e.queue = $8::text)
     ORDER BY e.xid, e.id
     LIMIT $9)
    ORDER BY xid, id
    LIMIT $9
)
SELECT now.snapshot, now.pruned, now.now_ms, f.id, f.xid, f.queue, f.job_id, f.type, f.payload,
       (extract(epoch FROM f.created_at) * 1000)::float8 AS ts
FROM now LEFT JOIN fresh f ON true
ORDER BY f.xid, f.id
