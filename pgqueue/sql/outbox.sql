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

-- fragment: event_range
-- The id range of the events a statement has just written (a CTE `events`), for a
-- hint sent after the commit (pgqueue.manager.notifier.Notifier.hint): a NOTIFY in
-- the writing transaction would take PostgreSQL's cluster-wide notification lock
-- until its commit record is flushed, and so serialise every such commit (no group
-- commit).  One row; NULLs when no event was written.
SELECT min(e.id) AS hint_first, max(e.id) AS hint_last FROM events e

-- name: event_hint
-- Send one hint (NOTIFY pgqueue_events, :payload) for events committed already.  The hint
-- carries no data (polling is the truth), so its own commit need not wait for the WAL
-- flush: the notification lock is held only for a moment.
SELECT pg_notify('pgqueue_events', :payload::text),
       set_config('synchronous_commit', 'off', true)

-- name: event_hint_in_transaction
-- The same hint inside a writing transaction (delivered at its commit), for the
-- callers that own the transaction (:payload).
SELECT pg_notify('pgqueue_events', :payload::text)

-- name: event_snapshot
-- The database's "now" for the outbox: the current snapshot.  Every event of a
-- transaction it counts as finished is committed and readable (or was rolled
-- back); the others may still come.
SELECT pg_current_snapshot()::text AS snapshot

-- name: event_read_delta
-- The events a reader has not seen yet, in (xid, id) order (:namespace).  The reader has
-- seen every event of the transactions finished in its snapshot S (given as
-- :running_xids its running xids, :xmax its xmax): what is new belongs to a transaction S
-- counted as running (part a: a few index lookups) or that began after S
-- (part b: a range from :xmax on).  A read in batches takes the snapshot N of its
-- first statement (returned in `snapshot`) and keeps to it: :batch_xmax N's xmax and
-- :batch_running_xids its running xids (NULL for the first batch: this statement's own
-- snapshot), after the position (:after_xid xid, :after_id id) where the last batch ended.
-- :queue (NULL = all), :limit.  A long transaction anywhere never holds
-- this read back: it only stays in the running xids.  :namespace.
-- `pruned` (read in the same snapshot as the rows) is the highest transaction
-- whose events of the queue(s) retention deleted: the reader lost events when
-- it had not seen that one yet.  `now_ms`: the database clock.
WITH now AS (
    SELECT pg_current_snapshot()::text AS snapshot,
           (SELECT max(m.xid) FROM pgqueue_event_prune_marks m
            WHERE m.namespace = :namespace AND (:queue::text IS NULL OR m.queue = :queue::text)) AS pruned,
           (extract(epoch FROM statement_timestamp()) * 1000)::float8 AS now_ms
), fresh AS (
    (SELECT e.id, e.xid, e.queue, e.job_id, e.type, e.payload, e.created_at
     FROM pgqueue_events e
     WHERE e.namespace = :namespace
       AND e.xid = ANY(:running_xids::bigint[])
       AND (e.xid, e.id) > (:after_xid::bigint, :after_id::bigint)
       AND (:batch_xmax::bigint IS NULL OR (e.xid < :batch_xmax::bigint AND e.xid <> ALL(:batch_running_xids::bigint[])))
       AND (:queue::text IS NULL OR e.queue = :queue::text)
     ORDER BY e.xid, e.id
     LIMIT :limit)
    UNION ALL
    (SELECT e.id, e.xid, e.queue, e.job_id, e.type, e.payload, e.created_at
     FROM pgqueue_events e
     WHERE e.namespace = :namespace
       AND (e.xid, e.id) > (greatest(:xmax::bigint - 1, :after_xid::bigint),
                            CASE WHEN :xmax::bigint - 1 >= :after_xid::bigint THEN 9223372036854775807
                                 ELSE :after_id::bigint END)
       AND (:batch_xmax::bigint IS NULL OR (e.xid < :batch_xmax::bigint AND e.xid <> ALL(:batch_running_xids::bigint[])))
       AND (:queue::text IS NULL OR e.queue = :queue::text)
     ORDER BY e.xid, e.id
     LIMIT :limit)
    ORDER BY xid, id
    LIMIT :limit
)
-- The first row is the head (`snapshot`, `pruned`, `now_ms`; no event), then one row per
-- event with the head's columns NULL: what each event costs the reader to decode is its
-- own columns only (Event.from_row reads them by position).
SELECT now.snapshot, now.pruned, now.now_ms, NULL::bigint AS id, NULL::bigint AS xid,
       NULL::text AS queue, NULL::text AS job_id, NULL::text AS type, NULL::json AS payload,
       NULL::float8 AS ts
FROM now
UNION ALL
SELECT NULL, NULL, NULL, f.id, f.xid, f.queue, f.job_id, f.type, f.payload,
       (extract(epoch FROM f.created_at) * 1000)::float8
FROM fresh f
ORDER BY xid NULLS FIRST, id
