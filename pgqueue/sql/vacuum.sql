-- name: jobs_vacuum_stats
-- The jobs table's dead and live tuples as the statistics last heard of them (a
-- backend reports its counts at most once a second), and whether this role may
-- VACUUM it (its owner, a member of the owner's role, or a superuser).
SELECT coalesce(pg_stat_get_dead_tuples(c.oid), 0) AS dead,
       coalesce(pg_stat_get_live_tuples(c.oid), 0) AS live,
       pg_has_role(c.relowner, 'USAGE') AS may_vacuum
FROM pg_class c
WHERE c.oid = 'pgqueue_jobs'::regclass

-- name: jobs_vacuum
-- VACUUM the drained jobs table: its dead versions' space back to the free-space map,
-- its indexes cleaned, and the empty pages at its end back to the file system (that
-- truncation takes its ACCESS EXCLUSIVE lock only when nobody holds the table, and
-- gives it up as soon as anyone waits).  SKIP_LOCKED: when another VACUUM
-- (autovacuum) or a schema change holds the table, skip rather than wait.  Outside
-- any transaction (VACUUM cannot run in one).
VACUUM (SKIP_LOCKED, PARALLEL 0) pgqueue_jobs
