"""The schema's version: migrate it (alembic) and check it (brokers never create it).

``pgqueue migrate`` and ``alembic upgrade head`` run the same revisions under
one advisory lock.  A manager refuses to start on a schema that is missing,
older than it needs, or newer than it knows, and says what to run.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pgqueue.db.executor import Executor
from pgqueue.db.queries import Q
from pgqueue.errors import SchemaError

__all__ = [
    "COMPAT_SINCE",
    "KNOWN_REVISIONS",
    "MIGRATION_LOCK_KEY",
    "SCHEMA_VERSION",
    "VERSION_TABLE",
    "SchemaState",
    "check_schema",
    "current_revision",
    "migrate",
    "migrate_async",
    "migrations_dir",
    "sqlalchemy_url",
]

VERSION_TABLE = "pgqueue_alembic_version"
KNOWN_REVISIONS = (
    "0001",
    "0002",
    "0003",
    "0004",
    "0005",
    "0006",
    "0007",
    "0008",
    "0009",
    "0010",
    "0011",
    "0012",
    "0013",
    "0017",
    "0022",
    "0020",
    "0018",
    "0019",
    "0023",
    "0024",
    "0025",
    "0026",
    "0027",
    "0028",
    "0029",
    "0030",
    "0031",
)
SCHEMA_VERSION = KNOWN_REVISIONS[-1]
# The first revision that declares, in ``pgqueue_schema_compat``, the oldest pgqueue
# able to run on it; every later migration inserts its own row (a test holds that).
COMPAT_SINCE = "0022"
MIGRATION_LOCK_KEY = 0x7067_7175_6575_6501  # "pgqueue" + 1

# alembic's ``context`` and ``op`` are process-global proxies: one run at a time
# per process.  (Across processes, migrations/env.py's advisory lock serialises.)
_ALEMBIC_LOCK = threading.Lock()


def migrations_dir() -> Path:
    """Where the alembic scripts live: the installed copy, else the source tree."""
    try:
        packaged = resources.files("pgqueue") / "_migrations"
        if packaged.is_dir():
            return Path(str(packaged))
    except (ModuleNotFoundError, FileNotFoundError):
        pass
    return Path(__file__).resolve().parents[2] / "migrations"


def sqlalchemy_url(dsn: str) -> str:
    """A libpq DSN (``postgresql://…``) as a SQLAlchemy URL for psycopg 3."""
    parts = urlsplit(dsn)
    if parts.scheme not in ("postgres", "postgresql", "postgresql+psycopg"):
        raise SchemaError(f"not a PostgreSQL URL: scheme {parts.scheme!r}")
    return urlunsplit(("postgresql+psycopg", *parts[1:]))


def migrate(dsn: str, revision: str = "head") -> None:
    """Upgrade (or downgrade, with a revision id) the schema of the database at ``dsn``."""
    from alembic import command
    from alembic.config import Config as AlembicConfig

    config = AlembicConfig()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["dsn"] = dsn
    with _ALEMBIC_LOCK:
        if _is_downgrade(dsn, revision):
            command.downgrade(config, revision)
        else:
            command.upgrade(config, revision)


async def migrate_async(dsn: str, revision: str = "head") -> None:
    """:func:`migrate` from async code (alembic is synchronous)."""
    await asyncio.to_thread(migrate, dsn, revision)


def _is_downgrade(dsn: str, revision: str) -> bool:
    """Whether reaching ``revision`` goes down from the database's current revision."""
    if revision == "base" or revision.startswith("-"):
        return True
    if revision not in KNOWN_REVISIONS:
        return False
    current = current_revision(dsn)
    return current in KNOWN_REVISIONS and KNOWN_REVISIONS.index(revision) < KNOWN_REVISIONS.index(
        current
    )


def current_revision(dsn: str) -> str | None:
    """The schema revision of the database at ``dsn`` (None: no pgqueue schema)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        exists = conn.execute(Q.schema_version_table_exists.psycopg_sql).fetchone()
        if not exists or not exists[0]:
            return None
        row = conn.execute(Q.schema_version_get.psycopg_sql).fetchone()
        return str(row[0]) if row else None


@dataclass(frozen=True, slots=True)
class SchemaState:
    """The database's schema revision as this pgqueue judged it runnable.

    ``newer`` is true on a revision of a later release that declares this one
    able to run on it: the window of a rolling upgrade."""

    revision: str
    newer: bool = False

    @property
    def warning(self) -> str | None:
        if not self.newer:
            return None
        return (
            f"the pgqueue schema is at revision {self.revision}, newer than this "
            f"pgqueue ({SCHEMA_VERSION}), which it declares compatible: upgrade this broker"
        )


async def check_schema(db: Executor) -> SchemaState:
    """The schema revision, when this pgqueue can run on it; else :class:`SchemaError`
    saying what to run.  A newer revision is accepted when it declares a revision
    no later than this one as the oldest broker it serves."""
    if not await db.fetchval(Q.schema_version_table_exists):
        raise SchemaError(
            "the pgqueue schema is missing from this database: run `pgqueue migrate` "
            "(or `alembic upgrade head`) first"
        )
    version = await db.fetchval(Q.schema_version_get)
    if version is None:
        raise SchemaError("the pgqueue schema is empty: run `pgqueue migrate`")
    version = str(version)
    if version == SCHEMA_VERSION:
        return SchemaState(version)
    if version in KNOWN_REVISIONS:
        raise SchemaError(
            f"the pgqueue schema is at revision {version}; this pgqueue needs "
            f"{SCHEMA_VERSION}: run `pgqueue migrate`"
        )
    oldest = await db.fetchval(Q.schema_oldest_broker, revision=version)
    if oldest is None:
        raise SchemaError(
            f"the pgqueue schema is at revision {version}, newer than this pgqueue knows "
            f"({SCHEMA_VERSION}): upgrade pgqueue on this host"
        )
    if str(oldest) not in KNOWN_REVISIONS:
        raise SchemaError(
            f"the pgqueue schema at revision {version} needs pgqueue of revision {oldest} "
            f"or newer (this one is {SCHEMA_VERSION}): upgrade pgqueue on this host"
        )
    return SchemaState(version, newer=True)
