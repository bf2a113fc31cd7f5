"""Alembic environment for pgqueue: raw SQL revisions, one advisory lock.

The DSN comes from ``config.attributes["dsn"]`` (``pgqueue migrate``), from
``alembic -x dsn=...``, or from ``PGQUEUE_DSN``.  Concurrent runs are safe: the
whole upgrade runs under a session advisory lock, so a second runner waits and
then finds nothing to do.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import create_engine, pool, text

from pgqueue.db.schema import MIGRATION_LOCK_KEY, VERSION_TABLE, sqlalchemy_url

config = context.config


def _dsn() -> str:
    dsn = config.attributes.get("dsn") or context.get_x_argument(as_dictionary=True).get("dsn")
    dsn = dsn or os.environ.get("PGQUEUE_DSN")
    if not dsn:
        raise SystemExit("pgqueue migrations: give a DSN with -x dsn=... or PGQUEUE_DSN")
    return str(dsn)


def run_migrations_offline() -> None:
    context.configure(
        url=sqlalchemy_url(_dsn()),
        literal_binds=True,
        version_table=VERSION_TABLE,
        transaction_per_migration=False,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = create_engine(sqlalchemy_url(_dsn()), poolclass=pool.NullPool)
    with engine.connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        connection.commit()
        try:
            context.configure(
                connection=connection,
                version_table=VERSION_TABLE,
                transaction_per_migration=False,
            )
            with context.begin_transaction():
                context.run_migrations()
            connection.commit()
        finally:
            connection.execute(
                text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY}
            )
            connection.commit()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
