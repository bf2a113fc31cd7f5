"""A deduplication key with a TTL outlives its job; finished jobs kept by count or age.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02

A live job holds its unique key in ``pgqueue_jobs.unique_key`` (unique per
queue while the job is live).  A key pushed with ``dedup.ttl`` (or a
``debounceTtl``) is held for that long even once its job finished: the
finished row keeps the key's deadline in ``unique_expires_at`` (NULL: the key
went with the job), and admission treats a finished row whose deadline has
not passed as the key's owner.  The partial index finds the holder of a
(queue, key) among finished rows.

``removeOnComplete`` / ``removeOnFail`` given as a count or ``{age, count}``
(BullMQ's "keep jobs") leave the policy in the finished row's ``opts``
(``keep_completed`` / ``keep_failed``); retention hides the rows beyond it.
The partial index finds the queues and states that have such rows.
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE pgqueue_finished ADD COLUMN unique_expires_at timestamptz;
CREATE INDEX pgqueue_finished_unique_key_idx ON pgqueue_finished
    (namespace, queue, unique_key) WHERE unique_expires_at IS NOT NULL;
CREATE INDEX pgqueue_finished_keep_idx ON pgqueue_finished (namespace, queue, state)
    WHERE NOT removed AND (opts ? 'keep_completed' OR opts ? 'keep_failed');
"""

DOWNGRADE = r"""
DROP INDEX IF EXISTS pgqueue_finished_keep_idx;
DROP INDEX IF EXISTS pgqueue_finished_unique_key_idx;
ALTER TABLE pgqueue_finished DROP COLUMN IF EXISTS unique_expires_at;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
