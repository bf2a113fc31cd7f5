-- name: jobs_vacuum_stats
-- The jobs table's dead and live tuples as the statistics last heard of them (a
-- backend reports its counts at most once a second), and whether this role may
-- VACUUM it (its owner, a member of the owner's role, or a superuser).
SELECT coalesce(pg_stat_get_dead_tuples(c.oid), 0) AS dead,
       coalesce(pg_stat_get_live_tuples(c.oid), 0) AS live,
       pg_has_role(c.relowner, 'USAGE') AS may_vacuum
FROM pg_class c
WHERE c.oid = 'pgqueue_jobs'::regclass

-- name: jobs_vacuum_keep_pages
-- Vacuum the jobs table: the space of its dead versions goes back to the free-space
-- map, so the next claims and pushes reuse it instead of extending the table.
-- SKIP_LOCKED: when another VACUUM (autovacuum) or a schema change holds the table,
-- skip rather than wait.  No truncation: that takes an ACCESS EXCLUSIVE lock (and an
-- xid, which holds back every snapshot's xmin, the outbox readers' horizon) on a
-- table that is busy.  Outside any transaction (VACUUM cannot run in one).
VACUUM (SKIP_LOCKED, TRUNCATE false) pgqueue_jobs

-- name: jobs_vacuum
-- The same, and the empty pages at the table's end go back to the file system (a
-- drained table shrinks): for a table that holds more dead tuples than live ones.
-- The truncation takes its lock only when nobody holds the table, and gives it up
-- as soon as anyone waits.
VACUUM (SKIP_LOCKED) pgqueue_jobs
