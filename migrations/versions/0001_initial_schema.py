"""Initial schema: live jobs, finished jobs, DLQ, outbox, sessions, leadership.

Revision ID: 0001
Revises:
Create Date: 2026-11-30

The hot table ``pgqueue_jobs`` holds only live jobs (pending, active,
waiting-children); terminal jobs move to ``pgqueue_finished`` in the same
transaction, so churn does not bloat the claim index.  ``pgqueue_events`` is
the durable outbox, read in commit-safe order on ``(xid, id)``.
"""

from __future__ import annotations

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

UPGRADE = r"""
-- Microseconds since the epoch.  Marked IMMUTABLE because the epoch of a
-- timestamptz does not depend on the session time zone; the claim order's
-- generated column needs it.
CREATE FUNCTION pgqueue_epoch_us(ts timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN (extract(epoch FROM ts) * 1000000)::bigint;

CREATE SEQUENCE pgqueue_lifo_seq;

CREATE TABLE pgqueue_jobs (
    namespace           text COLLATE "C" NOT NULL,
    id                  text COLLATE "C" NOT NULL,
    queue               text COLLATE "C" NOT NULL,
    name                text NOT NULL,
    data                jsonb NOT NULL,
    state               text NOT NULL,
    priority            integer NOT NULL DEFAULT 0,
    lifo                boolean NOT NULL DEFAULT false,
    lifo_seq            bigint,
    run_at              timestamptz NOT NULL,
    -- Claim order within a priority: LIFO jobs first, newest first; then FIFO by run_at.
    sort_key            bigint NOT NULL GENERATED ALWAYS AS (
                            CASE WHEN lifo THEN -lifo_seq ELSE pgqueue_epoch_us(run_at) END
                        ) STORED,
    created_at          timestamptz NOT NULL,
    expires_at          timestamptz,
    attempts            integer NOT NULL DEFAULT 0,
    max_attempts        integer NOT NULL DEFAULT 3,
    backoff_type        text NOT NULL DEFAULT 'exponential',
    backoff_ms          bigint NOT NULL DEFAULT 1000,
    backoff_max_ms      bigint NOT NULL DEFAULT 3600000,
    timeout_ms          bigint,
    ttl_ms              bigint,
    stall_timeout_ms    bigint,
    remove_on_complete  boolean NOT NULL DEFAULT false,
    remove_on_fail      boolean NOT NULL DEFAULT false,
    custom_id           text COLLATE "C",
    unique_key          text COLLATE "C",
    unique_expires_at   timestamptz,
    group_id            text COLLATE "C",
    parent_id           text COLLATE "C",
    parent_queue        text COLLATE "C",
    pending_deps        integer NOT NULL DEFAULT 0,
    has_dependents      boolean NOT NULL DEFAULT false,
    stall_count         integer NOT NULL DEFAULT 0,
    fence               bigint NOT NULL DEFAULT 0,
    lease_token         text COLLATE "C",
    lease_owner         text,
    lease_broker        text,
    lease_session       uuid,
    lease_until         timestamptz,
    started_at          timestamptz,
    progress            jsonb,
    progress_message    text,
    attempt_log         jsonb NOT NULL DEFAULT '[]'::jsonb,
    last_error          text,
    stacktrace          jsonb,
    opts                jsonb NOT NULL DEFAULT '{}'::jsonb,
    CONSTRAINT pgqueue_jobs_pkey PRIMARY KEY (namespace, id),
    CONSTRAINT pgqueue_jobs_state_check
        CHECK (state IN ('pending', 'active', 'waiting-children')),
    CONSTRAINT pgqueue_jobs_backoff_type_check
        CHECK (backoff_type IN ('exponential', 'fixed')),
    CONSTRAINT pgqueue_jobs_attempts_check CHECK (max_attempts >= 1 AND attempts >= 0),
    CONSTRAINT pgqueue_jobs_lease_check
        CHECK (state <> 'active' OR (lease_token IS NOT NULL AND lease_until IS NOT NULL)),
    CONSTRAINT pgqueue_jobs_lifo_check CHECK (NOT lifo OR lifo_seq IS NOT NULL)
) WITH (
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0
);

-- The claim reads only this partial index, in the claim's own order.
CREATE INDEX pgqueue_jobs_claim_idx
    ON pgqueue_jobs (namespace, queue, priority DESC, sort_key, id)
    WHERE state = 'pending';
CREATE INDEX pgqueue_jobs_lease_idx
    ON pgqueue_jobs (namespace, lease_until)
    WHERE state = 'active';
CREATE INDEX pgqueue_jobs_listing_idx
    ON pgqueue_jobs (namespace, queue, state, created_at, id);
CREATE UNIQUE INDEX pgqueue_jobs_unique_key_idx
    ON pgqueue_jobs (namespace, queue, unique_key)
    WHERE unique_key IS NOT NULL;
CREATE INDEX pgqueue_jobs_parent_idx
    ON pgqueue_jobs (namespace, parent_id)
    WHERE parent_id IS NOT NULL;
CREATE INDEX pgqueue_jobs_expiry_idx
    ON pgqueue_jobs (namespace, expires_at)
    WHERE state = 'pending' AND expires_at IS NOT NULL;

CREATE TABLE pgqueue_finished (
    namespace           text COLLATE "C" NOT NULL,
    id                  text COLLATE "C" NOT NULL,
    queue               text COLLATE "C" NOT NULL,
    name                text NOT NULL,
    data                jsonb,
    state               text NOT NULL,
    priority            integer NOT NULL DEFAULT 0,
    lifo                boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL,
    started_at          timestamptz,
    finished_at         timestamptz NOT NULL,
    attempts            integer NOT NULL DEFAULT 0,
    max_attempts        integer NOT NULL DEFAULT 3,
    backoff_type        text NOT NULL DEFAULT 'exponential',
    backoff_ms          bigint NOT NULL DEFAULT 1000,
    backoff_max_ms      bigint NOT NULL DEFAULT 3600000,
    timeout_ms          bigint,
    ttl_ms              bigint,
    stall_timeout_ms    bigint,
    remove_on_complete  boolean NOT NULL DEFAULT false,
    remove_on_fail      boolean NOT NULL DEFAULT false,
    custom_id           text COLLATE "C",
    unique_key          text COLLATE "C",
    group_id            text COLLATE "C",
    parent_id           text COLLATE "C",
    parent_queue        text COLLATE "C",
    stall_count         integer NOT NULL DEFAULT 0,
    fence               bigint NOT NULL DEFAULT 0,
    progress            jsonb,
    progress_message    text,
    attempt_log         jsonb NOT NULL DEFAULT '[]'::jsonb,
    result              jsonb,
    failed_reason       text,
    error               text,
    stacktrace          jsonb,
    removed             boolean NOT NULL DEFAULT false,
    opts                jsonb NOT NULL DEFAULT '{}'::jsonb,
    CONSTRAINT pgqueue_finished_pkey PRIMARY KEY (namespace, id),
    CONSTRAINT pgqueue_finished_state_check CHECK (state IN ('completed', 'failed'))
) WITH (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
CREATE INDEX pgqueue_finished_listing_idx
    ON pgqueue_finished (namespace, queue, state, finished_at, id);
CREATE INDEX pgqueue_finished_parent_idx
    ON pgqueue_finished (namespace, parent_id)
    WHERE parent_id IS NOT NULL;

CREATE TABLE pgqueue_dlq (
    namespace       text COLLATE "C" NOT NULL,
    job_id          text COLLATE "C" NOT NULL,
    queue           text COLLATE "C" NOT NULL,
    reason          text NOT NULL,
    error           text,
    entered_at      timestamptz NOT NULL,
    attempts        jsonb NOT NULL DEFAULT '[]'::jsonb,
    retry_count     integer NOT NULL DEFAULT 0,
    last_retry_at   timestamptz,
    next_retry_at   timestamptz,
    CONSTRAINT pgqueue_dlq_pkey PRIMARY KEY (namespace, job_id),
    CONSTRAINT pgqueue_dlq_reason_check CHECK (reason IN (
        'explicit_fail', 'max_attempts_exceeded', 'timeout', 'stalled',
        'ttl_expired', 'worker_lost', 'dependency_failed', 'unknown'))
);
CREATE INDEX pgqueue_dlq_queue_idx ON pgqueue_dlq (namespace, queue, entered_at, job_id);

CREATE TABLE pgqueue_dependencies (
    namespace   text COLLATE "C" NOT NULL,
    job_id      text COLLATE "C" NOT NULL,
    depends_on  text COLLATE "C" NOT NULL,
    CONSTRAINT pgqueue_dependencies_pkey PRIMARY KEY (namespace, job_id, depends_on)
);
CREATE INDEX pgqueue_dependencies_reverse_idx
    ON pgqueue_dependencies (namespace, depends_on);

CREATE TABLE pgqueue_events (
    id          bigserial NOT NULL,
    namespace   text COLLATE "C" NOT NULL,
    xid         bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
    queue       text COLLATE "C" NOT NULL,
    job_id      text COLLATE "C",
    type        text NOT NULL,
    payload     jsonb,
    created_at  timestamptz NOT NULL DEFAULT statement_timestamp(),
    CONSTRAINT pgqueue_events_pkey PRIMARY KEY (id)
) WITH (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05
);
CREATE INDEX pgqueue_events_cursor_idx ON pgqueue_events (namespace, xid, id);
CREATE INDEX pgqueue_events_job_idx ON pgqueue_events (namespace, job_id, id);

CREATE TABLE pgqueue_queues (
    namespace       text COLLATE "C" NOT NULL,
    queue           text COLLATE "C" NOT NULL,
    paused          boolean NOT NULL DEFAULT false,
    stall_config    jsonb,
    dlq_config      jsonb,
    created_at      timestamptz NOT NULL DEFAULT statement_timestamp(),
    CONSTRAINT pgqueue_queues_pkey PRIMARY KEY (namespace, queue)
);

CREATE TABLE pgqueue_brokers (
    namespace       text COLLATE "C" NOT NULL,
    broker_id       text COLLATE "C" NOT NULL,
    session_id      uuid NOT NULL,
    started_at      timestamptz NOT NULL,
    heartbeat_at    timestamptz NOT NULL,
    hostname        text,
    pid             integer,
    CONSTRAINT pgqueue_brokers_pkey PRIMARY KEY (namespace, broker_id)
);

CREATE TABLE pgqueue_leaders (
    namespace   text COLLATE "C" NOT NULL,
    name        text COLLATE "C" NOT NULL,
    holder      uuid NOT NULL,
    broker_id   text NOT NULL,
    elected_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    CONSTRAINT pgqueue_leaders_pkey PRIMARY KEY (namespace, name)
);

CREATE TABLE pgqueue_job_logs (
    id          bigserial NOT NULL,
    namespace   text COLLATE "C" NOT NULL,
    job_id      text COLLATE "C" NOT NULL,
    logged_at   timestamptz NOT NULL DEFAULT statement_timestamp(),
    level       text NOT NULL DEFAULT 'info',
    message     text NOT NULL,
    CONSTRAINT pgqueue_job_logs_pkey PRIMARY KEY (id),
    CONSTRAINT pgqueue_job_logs_level_check CHECK (level IN ('info', 'warn', 'error'))
);
CREATE INDEX pgqueue_job_logs_job_idx ON pgqueue_job_logs (namespace, job_id, id);

CREATE TABLE pgqueue_workers (
    namespace       text COLLATE "C" NOT NULL,
    worker_id       text COLLATE "C" NOT NULL,
    name            text NOT NULL,
    queues          text[] NOT NULL DEFAULT '{}',
    concurrency     integer NOT NULL DEFAULT 1,
    hostname        text,
    pid             integer,
    broker_id       text,
    session_id      uuid,
    client_id       text,
    registered_at   timestamptz NOT NULL DEFAULT statement_timestamp(),
    last_seen       timestamptz NOT NULL DEFAULT statement_timestamp(),
    active_jobs     integer NOT NULL DEFAULT 0,
    processed       bigint NOT NULL DEFAULT 0,
    failed          bigint NOT NULL DEFAULT 0,
    CONSTRAINT pgqueue_workers_pkey PRIMARY KEY (namespace, worker_id)
);
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS pgqueue_workers;
DROP TABLE IF EXISTS pgqueue_job_logs;
DROP TABLE IF EXISTS pgqueue_leaders;
DROP TABLE IF EXISTS pgqueue_brokers;
DROP TABLE IF EXISTS pgqueue_queues;
DROP TABLE IF EXISTS pgqueue_events;
DROP TABLE IF EXISTS pgqueue_dependencies;
DROP TABLE IF EXISTS pgqueue_dlq;
DROP TABLE IF EXISTS pgqueue_finished;
DROP SEQUENCE IF EXISTS pgqueue_lifo_seq;
DROP TABLE IF EXISTS pgqueue_jobs;
DROP FUNCTION IF EXISTS pgqueue_epoch_us(timestamptz);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
