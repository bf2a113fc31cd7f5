"""The jobs table's one-column CHECKs as domain types, whose constraints are cached.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-07

A table's CHECK constraints are kept in the relation cache as text: every statement
that writes a row of the table (an insert, or an update of any column) reads each
expression back from its text (``stringToNode``), runs it through the planner and
compiles it, once per statement, before the first row.  For a sequential push, one row
per statement, that start-up was most of what the six CHECKs of ``pgqueue_jobs`` cost:
a PL/pgSQL loop of static single-row inserts into copies of the table, 12 rounds of
3,000, best per insert: 50.3 us with the six CHECKs, 38.0 with none, 39.8 with this
revision's shape (docs/performance.md, finding 33).  A domain's constraints are read
and planned once per backend (the type cache) and only compiled per statement.

- ``state`` (``pgqueue_job_state``: pending, active, waiting-children),
  ``backoff_type`` (``pgqueue_backoff_type``: exponential, fixed), ``attempts`` and
  ``dlq_retry_count`` (``pgqueue_count``: >= 0) and ``max_attempts``
  (``pgqueue_max_attempts``: >= 1) are domain types over their old types; the table
  CHECKs that held the same rules are gone.  A domain's rule is checked where a value
  is assigned to the column (an insert; an update that sets it), which is every write
  that could break it.
- ``pgqueue_jobs_lifo_check`` (``NOT lifo OR lifo_seq IS NOT NULL``) is gone: the
  generated ``sort_key`` is ``-lifo_seq`` for a LIFO job and NOT NULL, so a LIFO row
  without a sequence number already fails (as a NOT NULL violation of ``sort_key``).
- ``pgqueue_jobs_lease_check`` (two columns) stays a table CHECK.

No table rewrite: each column first becomes a domain without constraints (binary
coercible: the catalog changes, the heap stays), then the domains get their
constraints, which validates the rows by a scan.  The seven partial indexes whose
predicate names ``state`` are rebuilt (PostgreSQL reuses no index with a predicate
across a column type change), under the migration's ACCESS EXCLUSIVE lock of the
table: on a large backlog that is the migration's cost.  A client sees the base types
(the server describes a domain-typed result column by its base type), and every
statement passes its values as text or integers, which the insert coerces.

Brokers of 0029 run on this schema unchanged (the same statements; a value they
write is checked by the same rules, with SQLSTATE 23514 as before): a 0029 manager
kept pushing, claiming and acknowledging with its prepared statements across a live
upgrade to this revision, without an error.
"""

from __future__ import annotations

from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE DOMAIN pgqueue_job_state AS text;
CREATE DOMAIN pgqueue_backoff_type AS text;
CREATE DOMAIN pgqueue_count AS integer;
CREATE DOMAIN pgqueue_max_attempts AS integer;

ALTER TABLE pgqueue_jobs
    DROP CONSTRAINT pgqueue_jobs_state_check,
    DROP CONSTRAINT pgqueue_jobs_backoff_type_check,
    DROP CONSTRAINT pgqueue_jobs_attempts_check,
    DROP CONSTRAINT pgqueue_jobs_dlq_retry_count_check,
    DROP CONSTRAINT pgqueue_jobs_lifo_check,
    ALTER COLUMN state TYPE pgqueue_job_state,
    ALTER COLUMN backoff_type TYPE pgqueue_backoff_type,
    ALTER COLUMN attempts TYPE pgqueue_count,
    ALTER COLUMN dlq_retry_count TYPE pgqueue_count,
    ALTER COLUMN max_attempts TYPE pgqueue_max_attempts;

ALTER DOMAIN pgqueue_job_state ADD CONSTRAINT pgqueue_job_state_check
    CHECK (VALUE IN ('pending', 'active', 'waiting-children'));
ALTER DOMAIN pgqueue_backoff_type ADD CONSTRAINT pgqueue_backoff_type_check
    CHECK (VALUE IN ('exponential', 'fixed'));
ALTER DOMAIN pgqueue_count ADD CONSTRAINT pgqueue_count_check CHECK (VALUE >= 0);
ALTER DOMAIN pgqueue_max_attempts ADD CONSTRAINT pgqueue_max_attempts_check
    CHECK (VALUE >= 1);
"""

DOWNGRADE = r"""
ALTER TABLE pgqueue_jobs
    ALTER COLUMN state TYPE text,
    ALTER COLUMN backoff_type TYPE text,
    ALTER COLUMN attempts TYPE integer,
    ALTER COLUMN dlq_retry_count TYPE integer,
    ALTER COLUMN max_attempts TYPE integer,
    ADD CONSTRAINT pgqueue_jobs_state_check
        CHECK (state IN ('pending', 'active', 'waiting-children')),
    ADD CONSTRAINT pgqueue_jobs_backoff_type_check
        CHECK (backoff_type IN ('exponential', 'fixed')),
    ADD CONSTRAINT pgqueue_jobs_attempts_check CHECK (max_attempts >= 1 AND attempts >= 0),
    ADD CONSTRAINT pgqueue_jobs_dlq_retry_count_check CHECK (dlq_retry_count >= 0),
    ADD CONSTRAINT pgqueue_jobs_lifo_check CHECK (NOT lifo OR lifo_seq IS NOT NULL);

DROP DOMAIN pgqueue_job_state;
DROP DOMAIN pgqueue_backoff_type;
DROP DOMAIN pgqueue_count;
DROP DOMAIN pgqueue_max_attempts;
"""

# The same statements and rules: brokers of 0029 run on it.
COMPAT = "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('0030', '0029')"


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(COMPAT)


def downgrade() -> None:
    op.execute("DELETE FROM pgqueue_schema_compat WHERE revision = '0030'")
    op.execute(DOWNGRADE)
