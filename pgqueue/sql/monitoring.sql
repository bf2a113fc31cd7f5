-- name: table_health
-- Vacuum health of pgqueue's tables: live and dead tuples, last (auto)vacuum.
SELECT s.relname AS table_name, s.n_live_tup AS live, s.n_dead_tup AS dead,
       (extract(epoch FROM greatest(s.last_vacuum, s.last_autovacuum)) * 1000)::float8
           AS last_vacuum_at,
       s.autovacuum_count AS autovacuums
FROM pg_stat_user_tables s
WHERE s.relname LIKE 'pgqueue\_%'
ORDER BY s.relname

-- name: xmin_holders
-- Parameters, in order: :limit.
-- What holds the xmin horizon back (blocks vacuum and event retention,
-- which deletes only below it): the oldest transactions and snapshots, replication slots and
-- prepared transactions, with their age in transactions.
SELECT 'backend' AS kind, a.pid::text AS holder, a.application_name AS application,
       a.state, left(a.query, 200) AS query,
       greatest(age(a.backend_xid), age(a.backend_xmin)) AS xid_age,
       (extract(epoch FROM clock_timestamp() - a.xact_start))::float8 AS seconds
FROM pg_stat_activity a
WHERE (a.backend_xid IS NOT NULL OR a.backend_xmin IS NOT NULL) AND a.pid <> pg_backend_pid()
UNION ALL
SELECT 'replication_slot', s.slot_name::text, NULL, NULL, NULL,
       greatest(age(s.xmin), age(s.catalog_xmin)), NULL
FROM pg_replication_slots s
WHERE s.xmin IS NOT NULL OR s.catalog_xmin IS NOT NULL
UNION ALL
SELECT 'prepared_xact', p.gid, NULL, NULL, NULL, age(p.transaction),
       (extract(epoch FROM clock_timestamp() - p.prepared))::float8
FROM pg_prepared_xacts p
ORDER BY xid_age DESC NULLS LAST
LIMIT :limit::int

-- name: cron_table_exists
-- Whether this installation has a cron table (pgqueue_schedulers, on the search path).
SELECT to_regclass('pgqueue_schedulers') IS NOT NULL

-- name: cron_count
-- Cron schedules of namespace :namespace.  Run only when cron_table_exists says so (an
-- installation without cron has no such table: the statement would not parse).
SELECT count(*)::bigint FROM pgqueue_schedulers WHERE namespace = :namespace
