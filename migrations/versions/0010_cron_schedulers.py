"""Cron schedulers and the ticks they admitted (exactly once per tick).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02

``pgqueue_schedulers`` holds bunqueue's crons / BullMQ's job schedulers: what
to push (queue, job name, data as the JSON text sent, job options), when
(a cron ``pattern`` in a ``timezone``, or ``every_ms``; ``start_at`` /
``end_at``; ``max_limit`` executions) and how (``prevent_overlap``,
``skip_missed_on_restart``, ``skip_if_no_worker``).  ``next_run_at`` is the
next tick on the database clock, NULL once the scheduler is spent (limit
reached, end passed).

``pgqueue_scheduler_ticks`` is the proof of exactly-once: a tick is admitted
by inserting its row, whose primary key is ``(namespace, scheduler, tick_at)``,
in the transaction that admits the tick's job and its outbox event.  Two
brokers that both see the same tick due cannot both commit it, whoever leads.
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE pgqueue_schedulers (
    namespace text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    queue text COLLATE "C" NOT NULL,
    job_name text NOT NULL DEFAULT 'default',
    data json,
    pattern text,
    every_ms bigint CHECK (every_ms > 0),
    timezone text,
    immediately boolean NOT NULL DEFAULT false,
    max_limit integer CHECK (max_limit > 0),
    start_at timestamptz,
    end_at timestamptz,
    prevent_overlap boolean NOT NULL DEFAULT true,
    skip_missed_on_restart boolean NOT NULL DEFAULT true,
    skip_if_no_worker boolean NOT NULL DEFAULT false,
    priority integer NOT NULL DEFAULT 0,
    unique_key text,
    dedup jsonb,
    job_options jsonb NOT NULL DEFAULT '{}'::jsonb,
    source text NOT NULL DEFAULT 'cron' CHECK (source IN ('cron', 'repeat')),
    executions integer NOT NULL DEFAULT 0,
    next_run_at timestamptz,
    last_run_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    PRIMARY KEY (namespace, name),
    CHECK (pattern IS NOT NULL OR every_ms IS NOT NULL)
);
CREATE INDEX pgqueue_schedulers_due_idx
    ON pgqueue_schedulers (namespace, next_run_at) WHERE next_run_at IS NOT NULL;

CREATE TABLE pgqueue_scheduler_ticks (
    namespace text COLLATE "C" NOT NULL,
    scheduler text COLLATE "C" NOT NULL,
    tick_at timestamptz NOT NULL,
    job_id text COLLATE "C",
    outcome text NOT NULL CHECK (outcome IN ('admitted', 'overlap', 'no-worker')),
    broker_id text,
    admitted_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    PRIMARY KEY (namespace, scheduler, tick_at)
);
CREATE INDEX pgqueue_scheduler_ticks_age_idx ON pgqueue_scheduler_ticks (namespace, admitted_at);
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS pgqueue_scheduler_ticks;
DROP TABLE IF EXISTS pgqueue_schedulers;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
