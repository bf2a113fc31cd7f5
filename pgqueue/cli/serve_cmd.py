"""``pgqueue serve``: run a broker (TCP 6789, HTTP 6790).

With no DSN it starts an embedded PostgreSQL in the data directory, migrates
it and serves: one command from a fresh install to a working queue.  With a
DSN it only checks the schema (run ``pgqueue migrate`` first, or pass
``--migrate``).  SIGTERM or Ctrl-C drains the broker cleanly.

Without ``--host`` it listens on 127.0.0.1 unless auth tokens are set (then
0.0.0.0), as Redis does in protected mode; listening beyond loopback with no
token prints a warning (also in the log and ``/readyz``).  SIGHUP re-reads
``--tokens-file`` (docs/security.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import click

from pgqueue.cli.common import create_db_option, engine_settings, env_option
from pgqueue.cli.logs import apply_logging, logging_options
from pgqueue.config import HEARTBEAT_INTERVAL_MS_DEFAULT, Config
from pgqueue.db.reachability import check_database, shown_dsn
from pgqueue.db.schema import migrate
from pgqueue.embedded import EmbeddedPostgres, choose_data_dir
from pgqueue.errors import ConfigError
from pgqueue.server.security import open_warning
from pgqueue.server.settings import HTTP_BODY_BYTES_DEFAULT, AuthToken, BrokerSettings

__all__ = ["register", "serve"]

LOOPBACK_HOST = "127.0.0.1"
ANY_HOST = "0.0.0.0"


@click.command("serve")
@env_option(
    "--dsn",
    default=None,
    help="PostgreSQL URL; without one, an embedded PostgreSQL is started  [default: none]",
)
@env_option(
    "--namespace",
    default="default",
    help="namespace served (installs sharing a database stay apart)",
)
@env_option(
    "--broker-id",
    default=None,
    help="this broker's id, unique in the namespace  [default: host:pid:random]",
)
@env_option(
    "--host",
    default=None,
    help=f"address to listen on  [default: {LOOPBACK_HOST} without auth tokens, {ANY_HOST} with]",
)
@env_option(
    "--tcp-port", type=int, default=6789, help="bunqueue TCP protocol port (0: any free port)"
)
@env_option("--http-port", type=int, default=6790, help="HTTP API port (0: any free port)")
@click.option("--no-http", is_flag=True, default=False, help="serve TCP only")
@click.option(
    "--auth-token",
    "auth_tokens",
    multiple=True,
    metavar="[NAME=]SECRET",
    help="accept this client token (repeatable; also $PGQUEUE_AUTH_TOKENS, comma "
    "separated)  [default: none: no auth]",
)
@env_option(
    "--tokens-file",
    default=None,
    metavar="PATH",
    help="hashed tokens bound to namespaces, one per line (pgqueue token add); "
    "re-read on SIGHUP  [default: none]",
)
@click.option(
    "--tokens-from-db",
    is_flag=True,
    default=False,
    help="also accept the tokens of the pgqueue_tokens table (pgqueue token add --dsn); "
    "re-read on SIGHUP",
)
@env_option(
    "--tls-cert",
    default=None,
    metavar="PEM",
    help="TLS certificate chain for the TCP and HTTP listeners (with --tls-key)  "
    "[default: none: no TLS]",
)
@env_option(
    "--tls-key",
    default=None,
    metavar="PEM",
    help="TLS private key (with --tls-cert)  [default: none]",
)
@env_option(
    "--lease-ms",
    type=int,
    default=30_000,
    help="lease of a pulled job when the client asks for none",
)
@env_option(
    "--poll-interval-ms",
    type=int,
    default=250,
    help="how often the outbox and the queues are polled",
)
@click.option(
    "--poll-only",
    is_flag=True,
    default=False,
    help="no LISTEN, polling only (behind PgBouncer in transaction mode)",
)
@env_option("--pool-size", type=int, default=10, help="PostgreSQL connections of the broker's pool")
@click.option(
    "--max-frame-bytes", type=int, default=64 * 1024 * 1024, help="largest TCP frame accepted"
)
@env_option(
    "--max-http-body-bytes",
    type=int,
    default=HTTP_BODY_BYTES_DEFAULT,
    help="largest HTTP request body accepted (413 above it)",
)
@env_option(
    "--sse-keepalive-ms",
    type=int,
    default=15_000,
    help="keep-alive comment interval of the HTTP event streams",
)
@env_option(
    "--session-heartbeat-ms",
    type=int,
    default=HEARTBEAT_INTERVAL_MS_DEFAULT,
    help="how often the broker renews (and checks) its session row",
)
@click.option(
    "--idle-partial-frame-ms",
    type=int,
    default=60_000,
    help="close a connection that holds a partial frame this long (0: never)",
)
@env_option(
    "--max-request-age-ms",
    type=int,
    default=30_000,
    help="never serve a TCP request older than this (0: no limit; see docs)",
)
@click.option(
    "--max-inflight",
    type=int,
    default=50,
    help="commands served at once per connection (reading pauses beyond it)",
)
@click.option(
    "--max-write-buffer-bytes",
    type=int,
    default=64 * 1024 * 1024,
    help="close a TCP client whose unread answers pass this many bytes",
)
@env_option(
    "--max-connections-per-address",
    type=int,
    default=1024,
    help="TCP connections one client address may hold (0: no limit)",
)
@click.option(
    "--migrate",
    "run_migrate",
    is_flag=True,
    default=False,
    help="migrate the schema first (always done for the embedded database)",
)
@create_db_option
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="NAME=VALUE",
    help="any engine setting (docs/configuration.md), e.g. "
    "retention_events_ms=3600000 (repeatable)  [default: none]",
)
@click.option(
    "--data-dir",
    default=None,
    help="embedded PostgreSQL data directory  [default: $PGQUEUE_DATA_DIR/postgres, "
    "$XDG_DATA_HOME/pgqueue/postgres, /var/lib/pgqueue/postgres as root, "
    "else ~/.local/share/pgqueue/postgres]",
)
@click.option(
    "--unsafe-durability",
    is_flag=True,
    default=False,
    help="start even when PostgreSQL runs with fsync=off",
)
@logging_options
def serve(**opts: object) -> int:
    """Run a broker (bunqueue TCP protocol + HTTP API).

    With no --dsn, an embedded PostgreSQL is started, migrated and served.
    Ctrl-C or SIGTERM drains the broker: requests in flight finish, its jobs go back.
    """
    apply_logging(opts.pop("log_level"), opts.pop("log_format"))  # type: ignore[arg-type]
    return run(**opts)


def _tokens(given: tuple[str, ...]) -> tuple[AuthToken, ...]:
    raw = list(given)
    env = os.environ.get("PGQUEUE_AUTH_TOKENS")
    if env:
        raw += [t.strip() for t in env.split(",") if t.strip()]
    return tuple(AuthToken.parse(text, i) for i, text in enumerate(raw))


def _start_guard(data_dir: Path) -> None:
    """A process that stops the embedded server if this one dies without doing it."""
    subprocess.Popen(
        [sys.executable, "-m", "pgqueue.embedded_guard", str(os.getpid()), str(data_dir)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def run(**o: object) -> int:
    tokens = _tokens(o["auth_tokens"])  # type: ignore[arg-type]
    tokens_file = o["tokens_file"]
    guarded = bool(tokens) or tokens_file is not None or bool(o["tokens_from_db"])
    host = str(o["host"] or (ANY_HOST if guarded else LOOPBACK_HOST))
    embedded: EmbeddedPostgres | None = None
    dsn = o["dsn"]
    if not dsn:
        data_dir, chosen_by = choose_data_dir(o["data_dir"])  # type: ignore[arg-type]
        print(
            f"pgqueue: no --dsn given; starting an embedded PostgreSQL in {data_dir} "
            f"(chosen by {chosen_by})",
            flush=True,
        )
        embedded = EmbeddedPostgres(data_dir, cleanup="stop")
        dsn = embedded.start()
        _start_guard(data_dir)
        migrate(dsn)
        print(f"pgqueue: embedded database: {dsn}", flush=True)
        print(f"         psql '{dsn}'   ·   pgqueue migrate --dsn '{dsn}'", flush=True)
    else:
        check_database(str(dsn), create=bool(o["create_db"]))
        if o["run_migrate"]:
            migrate(str(dsn))
    config = Config(
        dsn=str(dsn),
        namespace=str(o["namespace"]),
        broker_id=o["broker_id"],  # type: ignore[arg-type]
        lease_ms=o["lease_ms"],  # type: ignore[arg-type]
        poll_interval_ms=o["poll_interval_ms"],  # type: ignore[arg-type]
        poll_only=bool(o["poll_only"]),
        pool_max_size=o["pool_size"],  # type: ignore[arg-type]
        session_heartbeat_ms=o["session_heartbeat_ms"],  # type: ignore[arg-type]
        unsafe_durability=bool(o["unsafe_durability"]),
        **engine_settings(o["settings"]),  # type: ignore[arg-type]
    ).validate()
    settings = BrokerSettings(
        host=host,
        tcp_port=o["tcp_port"],  # type: ignore[arg-type]
        http_port=o["http_port"],  # type: ignore[arg-type]
        auth_tokens=tokens,
        tokens_file=tokens_file,  # type: ignore[arg-type]
        tokens_from_db=bool(o["tokens_from_db"]),
        tls_cert=o["tls_cert"],  # type: ignore[arg-type]
        tls_key=o["tls_key"],  # type: ignore[arg-type]
        max_frame_bytes=o["max_frame_bytes"],  # type: ignore[arg-type]
        idle_partial_frame_ms=o["idle_partial_frame_ms"],  # type: ignore[arg-type]
        max_inflight_per_connection=o["max_inflight"],  # type: ignore[arg-type]
        max_write_buffer_bytes=o["max_write_buffer_bytes"],  # type: ignore[arg-type]
        max_connections_per_address=o["max_connections_per_address"],  # type: ignore[arg-type]
        max_request_age_ms=o["max_request_age_ms"],  # type: ignore[arg-type]
        enable_http=not o["no_http"],
        max_http_body_bytes=o["max_http_body_bytes"],  # type: ignore[arg-type]
        sse_keepalive_ms=o["sse_keepalive_ms"],  # type: ignore[arg-type]
    ).validate()
    warning = open_warning(host, guarded)
    if warning is not None:
        print(f"pgqueue: {warning}", file=sys.stderr, flush=True)
    try:
        _install_uvloop()
        return asyncio.run(_serve(config, settings, shown_dsn(str(dsn))))
    finally:
        if embedded is not None:
            embedded.stop()


def _install_uvloop() -> None:
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def _check_ports(settings: BrokerSettings) -> None:
    """Refuse at once, before the database is touched, a port another process holds."""
    wanted = [("TCP", settings.tcp_port)]
    if settings.enable_http:
        wanted.append(("HTTP", settings.http_port))
    for kind, port in wanted:
        if port == 0:
            continue
        try:
            infos = socket.getaddrinfo(settings.host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise ConfigError(f"cannot listen on {settings.host}: {exc.strerror}") from None
        family, kind_, proto, _, address = infos[0]
        with socket.socket(family, kind_, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    flag = "--tcp-port" if kind == "TCP" else "--http-port"
                    raise ConfigError(
                        f"{kind} port {port} on {settings.host} is already in use (another "
                        f"broker?): stop it or pick another {flag}"
                    ) from None
                raise ConfigError(
                    f"cannot listen on {settings.host}:{port}: {exc.strerror}"
                ) from None


async def _serve(config: Config, settings: BrokerSettings, shown: str) -> int:
    from pgqueue.server.broker import Broker

    _check_ports(settings)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    broker = Broker(config, settings)
    reloads: set[asyncio.Task[bool]] = set()

    def reload() -> None:
        task = asyncio.create_task(broker.reload_tokens(), name="pgqueue:reload-tokens")
        reloads.add(task)
        task.add_done_callback(reloads.discard)

    loop.add_signal_handler(signal.SIGHUP, reload)
    try:
        await broker.start()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"cannot listen on {settings.host} (TCP {settings.tcp_port}, HTTP "
                f"{settings.http_port}): address already in use; another broker? "
                "pick --tcp-port / --http-port"
            ) from None
        raise ConfigError(f"cannot listen on {settings.host}: {exc.strerror or exc}") from None
    _settle_collector()
    http = f", HTTP on {settings.host}:{broker.http.port}" if broker.http else ""
    tls = " (TLS)" if broker.tls is not None else ""
    served = ", ".join(repr(ns) for ns in sorted(broker.tenants))
    print(
        f"pgqueue broker {broker.manager.broker_id} serving namespace {config.namespace!r}"
        f"{'' if len(broker.tenants) == 1 else f' (and {served} for its tokens)'}: "
        f"TCP on {settings.host}:{broker.tcp.port}{http}{tls}",
        flush=True,
    )
    print(
        f"pgqueue: database {shown}; Ctrl-C or SIGTERM drains and stops the broker",
        flush=True,
    )
    await stop.wait()
    print("pgqueue: draining ...", file=sys.stderr, flush=True)
    await broker.stop()
    return 0


def _settle_collector() -> None:
    """Once the broker is up: what start-up made (modules, functions, classes, ~50,000
    objects) goes to the collector's permanent generation, so that a full collection
    no longer walks it.  Served requests leave little behind (their objects die by
    reference counting), so without this each full collection (every few seconds
    under load) walked the whole start-up heap again: 35-150 ms pauses on the loaded
    test machine, in the middle of whatever the broker was serving."""
    gc.collect()
    gc.freeze()


def register(group: click.Group) -> None:
    group.add_command(serve)
