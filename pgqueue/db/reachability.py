"""Before a command uses a DSN: can we reach it, and does its database exist?

``pgqueue migrate --dsn postgresql://localhost/app`` on a server without
database ``app`` used to end in a driver traceback.  :func:`check_database`
turns the usual first-run failures into one :class:`ConfigError` line naming
what to do, and with ``create=True`` creates the missing database (on the
server's ``postgres`` database, as ``createdb`` would).
"""

from __future__ import annotations

import logging
from urllib.parse import unquote, urlsplit, urlunsplit

from pgqueue.db.queries import Q
from pgqueue.errors import ConfigError

__all__ = ["check_database", "shown_dsn"]

log = logging.getLogger("pgqueue.db")

MAINTENANCE_DATABASE = "postgres"


def shown_dsn(dsn: str) -> str:
    """The DSN without its password (for messages)."""
    parts = urlsplit(dsn)
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{parts.username}@{host}" if parts.username else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _database_of(dsn: str) -> str | None:
    path = urlsplit(dsn).path.lstrip("/")
    return unquote(path) if path else None


def check_database(dsn: str, *, create: bool = False) -> bool:
    """Connect once; raise :class:`ConfigError` with the fix when that fails.

    Returns True when the database was created (``create=True``)."""
    import psycopg

    try:
        psycopg.connect(dsn, connect_timeout=10).close()
        return False
    except psycopg.OperationalError as exc:
        text = str(exc).strip()
        database = _database_of(dsn)
        missing = database is not None and f'database "{database}" does not exist' in text
        if not missing:
            first = text.splitlines()[-1] if text else type(exc).__name__
            raise ConfigError(f"cannot connect to {shown_dsn(dsn)}: {first}") from None
    assert database is not None
    if not create:
        raise ConfigError(
            f'database "{database}" does not exist on {shown_dsn(dsn)}: create it '
            f"(createdb {database}) or pass --create-db"
        )
    _create(dsn, database)
    return True


def _create(dsn: str, database: str) -> None:
    import psycopg
    from psycopg import sql

    parts = urlsplit(dsn)
    maintenance = urlunsplit(
        (parts.scheme, parts.netloc, "/" + MAINTENANCE_DATABASE, parts.query, "")
    )
    try:
        with psycopg.connect(maintenance, autocommit=True, connect_timeout=10) as conn:
            query = Q.catalog_database_exists
            [value] = query.arguments((), {"database": database})
            row = conn.execute(query.psycopg_sql, {"p1": value})
            present = row.fetchone()
            if present is not None and present[0]:
                return
            # An identifier cannot be a parameter: psycopg quotes it.
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    except psycopg.Error as exc:
        raise ConfigError(f'cannot create database "{database}": {exc}'.strip()) from None
    log.info("created database %s", database)
