"""Verifiable lock tokens: a per-job secret salt.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-20

A claim's lock token is ``"<fence>:<uuid>"`` with the uuid derived from the
job's ``token_salt`` and the fence (``md5(salt || ':' || fence)``), so the
database can tell a token it issued for a job from a forged one without
keeping every token: a late ACK with a token issued for an earlier claim is
``already-finalized``, an unknown token is an error.  The salt never leaves
the database.  ``pgqueue_finished`` keeps the salt of the job it archives
(NULL for rows archived before this revision: their tokens cannot be
checked, and any well-formed token up to their fence counts as issued).
Leases taken before this revision keep their random tokens until they end.
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE pgqueue_jobs ADD COLUMN token_salt uuid NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE pgqueue_finished ADD COLUMN token_salt uuid;
"""

DOWNGRADE = r"""
ALTER TABLE pgqueue_finished DROP COLUMN token_salt;
ALTER TABLE pgqueue_jobs DROP COLUMN token_salt;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
