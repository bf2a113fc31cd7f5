-- name: schema_version_table_exists
-- Whether alembic's version table for pgqueue exists.
SELECT to_regclass('pgqueue_alembic_version') IS NOT NULL

-- name: schema_version_get
-- The applied revision id.
SELECT version_num FROM pgqueue_alembic_version LIMIT 1

-- name: server_durability_get
-- fsync and synchronous_commit as this session sees them, and the server version.
SELECT current_setting('fsync') AS fsync,
       current_setting('synchronous_commit') AS synchronous_commit,
       current_setting('server_version_num')::int AS server_version_num

-- name: schema_oldest_broker
-- The oldest pgqueue revision that revision :revision declares able to run on it
-- (no row: it declares none).
SELECT oldest_broker FROM pgqueue_schema_compat WHERE revision = :revision
