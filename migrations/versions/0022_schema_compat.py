"""Each revision declares the oldest broker that can still run on it: rolling upgrades.

Revision ID: 0022
Revises: 0017
Create Date: 2026-12-02

A broker refused any schema newer than it knew, so between ``pgqueue migrate`` and
the first new broker every old broker left the load balancer's rotation.  Most
revisions only add (a table, a nullable column, an index) and old brokers run on
them unchanged.  From this revision on, every migration inserts one row here
naming the oldest revision of pgqueue that can run on the schema it leaves; a broker
that finds the database at a revision it does not know reads that row and keeps
serving (with a ``schemaNewer`` warning in ``/readyz``) when it is old enough, or
leaves rotation saying which release it needs.  A broker of this revision or later
is the first that reads the table, hence 0022 itself declares 0022.
"""

from __future__ import annotations

from alembic import op

revision = "0022"
down_revision = "0017"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE pgqueue_schema_compat (
    revision      text PRIMARY KEY,
    oldest_broker text NOT NULL
);
COMMENT ON TABLE pgqueue_schema_compat IS
    'One row per revision since 0022: the oldest pgqueue revision that can run on it.';
INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('0022', '0022');
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS pgqueue_schema_compat;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
