"""Client tokens kept in the database, hashed and bound to namespaces.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02

A broker started with ``--tokens-from-db`` accepts the tokens of this table as well
as those of its tokens file, re-read on SIGHUP (docs/security.md).  A row holds
the SHA-256 digest of the secret, never the secret; ``namespaces`` NULL means every
namespace the broker serves.  ``pgqueue token add --dsn`` inserts rows.
"""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE pgqueue_tokens (
    name text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 200) CHECK (name !~ '\s'),
    digest text NOT NULL UNIQUE CHECK (digest ~ '^sha256:[0-9a-f]{64}$'),
    namespaces text[] CHECK (namespaces IS NULL OR cardinality(namespaces) > 0),
    read_only boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS pgqueue_tokens;
"""


# Additive (a new table, read only by brokers started with --tokens-from-db).
COMPAT = "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('0019', '0022')"


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(COMPAT)


def downgrade() -> None:
    op.execute("DELETE FROM pgqueue_schema_compat WHERE revision = '0019'")
    op.execute(DOWNGRADE)
