"""Users' values as the JSON text they sent: ``json`` columns instead of ``jsonb``.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-15

``jsonb`` reorders object keys (shortest first) and rewrites numbers
(``1e20`` reads back as ``100000000000000000000``), so a result ``{sum, by}``
came back as ``{by, sum}``.  The ``json`` type keeps the text verbatim and
skips the parse into a binary tree on every write.  Converted: job data,
progress, stack traces, results (live and finished jobs) and the outbox
payloads that carry them.  Engine-made documents that queries read with jsonb
operators stay ``jsonb``: ``opts``, ``attempt_log``, DLQ ``attempts``, queue
configs, audit filters.  The upgrade keeps today's (already reordered) text;
the downgrade parses it back into ``jsonb``.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

COLUMNS = {
    "pgqueue_jobs": ("data", "progress", "stacktrace"),
    "pgqueue_finished": ("data", "progress", "result", "stacktrace"),
    "pgqueue_events": ("payload",),
}


def _alter(target: str) -> str:
    return "\n".join(
        f"ALTER TABLE {table} "
        + ", ".join(
            f"ALTER COLUMN {column} TYPE {target} USING {column}::{target}" for column in columns
        )
        + ";"
        for table, columns in COLUMNS.items()
    )


def upgrade() -> None:
    op.execute(_alter("json"))


def downgrade() -> None:
    op.execute(_alter("jsonb"))
