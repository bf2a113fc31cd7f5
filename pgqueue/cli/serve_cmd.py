"""``pgqueue serve``: run a broker (TCP 6789, HTTP 6790).

With no DSN it starts an embedded PostgreSQL in the data directory, migrates
it and serves: one command from a fresh install to a working queue.  With a
DSN it only checks the schema (run ``pgqueue migrate`` first, or pass
``--migrate``).  SIGTERM or Ctrl-C drains the broker cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

from pgqueue.cli.common import add_dsn_argument, engine_settings
from pgqueue.config import HEARTBEAT_INTERVAL_MS_DEFAULT, Config
from pgqueue.db.schema import migrate
from pgqueue.embedded import EmbeddedPostgres, default_data_dir
from pgqueue.server.settings import HTTP_BODY_BYTES_DEFAULT, AuthToken, BrokerSettings

__all__ = ["register"]


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("serve", help="run a broker (bunqueue TCP protocol + HTTP API)")
    add_dsn_argument(parser, required=False)
    parser.add_argument("--namespace", default=os.environ.get("PGQUEUE_NAMESPACE", "default"))
    parser.add_argument("--broker-id", default=os.environ.get("PGQUEUE_BROKER_ID"))
    parser.add_argument("--host", default=os.environ.get("PGQUEUE_HOST", "0.0.0.0"))
    parser.add_argument("--tcp-port", type=int, default=_env_int("PGQUEUE_TCP_PORT", 6789))
    parser.add_argument("--http-port", type=int, default=_env_int("PGQUEUE_HTTP_PORT", 6790))
    parser.add_argument("--no-http", action="store_true", help="serve TCP only")
    parser.add_argument(
        "--auth-token",
        action="append",
        default=[],
        metavar="[NAME=]SECRET",
        help="accept this client token (repeatable; also $PGQUEUE_AUTH_TOKENS, comma separated)",
    )
    parser.add_argument("--lease-ms", type=int, default=_env_int("PGQUEUE_LEASE_MS", 30_000))
    parser.add_argument(
        "--poll-interval-ms", type=int, default=_env_int("PGQUEUE_POLL_INTERVAL_MS", 250)
    )
    parser.add_argument("--poll-only", action="store_true", help="no LISTEN (PgBouncer)")
    parser.add_argument("--pool-size", type=int, default=_env_int("PGQUEUE_POOL_SIZE", 10))
    parser.add_argument("--max-frame-bytes", type=int, default=64 * 1024 * 1024)
    parser.add_argument(
        "--max-http-body-bytes",
        type=int,
        default=_env_int("PGQUEUE_MAX_HTTP_BODY_BYTES", HTTP_BODY_BYTES_DEFAULT),
        help="largest HTTP request body accepted (413 above it)",
    )
    parser.add_argument(
        "--sse-keepalive-ms",
        type=int,
        default=_env_int("PGQUEUE_SSE_KEEPALIVE_MS", 15_000),
        help="keep-alive comment interval of the HTTP event streams",
    )
    parser.add_argument(
        "--session-heartbeat-ms",
        type=int,
        default=_env_int("PGQUEUE_SESSION_HEARTBEAT_MS", HEARTBEAT_INTERVAL_MS_DEFAULT),
        help="how often the broker renews (and checks) its session row",
    )
    parser.add_argument(
        "--idle-partial-frame-ms",
        type=int,
        default=60_000,
        help="close a connection that holds a partial frame this long (0: never)",
    )
    parser.add_argument(
        "--max-request-age-ms",
        type=int,
        default=_env_int("PGQUEUE_MAX_REQUEST_AGE_MS", 30_000),
        help="never serve a TCP request older than this (0: no limit; see docs)",
    )
    parser.add_argument(
        "--max-inflight",
        type=int,
        default=50,
        help="commands served at once per connection (reading pauses beyond it)",
    )
    parser.add_argument("--migrate", action="store_true", help="migrate the schema first")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="any engine setting (docs/configuration.md), e.g. retention_events_ms=3600000",
    )
    parser.add_argument(
        "--data-dir",
        default=None,
        help="embedded PostgreSQL data directory (default: see docs/configuration.md)",
    )
    parser.add_argument(
        "--unsafe-durability",
        action="store_true",
        help="start even when PostgreSQL runs with fsync=off",
    )
    parser.set_defaults(run=run)


def _tokens(args: argparse.Namespace) -> tuple[AuthToken, ...]:
    raw = list(args.auth_token)
    env = os.environ.get("PGQUEUE_AUTH_TOKENS")
    if env:
        raw += [t.strip() for t in env.split(",") if t.strip()]
    return tuple(AuthToken.parse(text, i) for i, text in enumerate(raw))


def run(args: argparse.Namespace) -> int:
    embedded: EmbeddedPostgres | None = None
    dsn = args.dsn
    if not dsn:
        data_dir = Path(args.data_dir).expanduser() if args.data_dir else default_data_dir()
        print(f"pgqueue: no --dsn given; starting an embedded PostgreSQL in {data_dir}", flush=True)
        embedded = EmbeddedPostgres(data_dir, cleanup="stop")
        dsn = embedded.start()
        migrate(dsn)
    elif args.migrate:
        migrate(dsn)
    config = Config(
        dsn=dsn,
        namespace=args.namespace,
        broker_id=args.broker_id,
        lease_ms=args.lease_ms,
        poll_interval_ms=args.poll_interval_ms,
        poll_only=args.poll_only,
        pool_max_size=args.pool_size,
        session_heartbeat_ms=args.session_heartbeat_ms,
        unsafe_durability=args.unsafe_durability,
        **engine_settings(args.set),
    ).validate()
    settings = BrokerSettings(
        host=args.host,
        tcp_port=args.tcp_port,
        http_port=args.http_port,
        auth_tokens=_tokens(args),
        max_frame_bytes=args.max_frame_bytes,
        idle_partial_frame_ms=args.idle_partial_frame_ms,
        max_inflight_per_connection=args.max_inflight,
        max_request_age_ms=args.max_request_age_ms,
        enable_http=not args.no_http,
        max_http_body_bytes=args.max_http_body_bytes,
        sse_keepalive_ms=args.sse_keepalive_ms,
    )
    try:
        _install_uvloop()
        return asyncio.run(_serve(config, settings))
    finally:
        if embedded is not None:
            embedded.stop()


def _install_uvloop() -> None:
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


async def _serve(config: Config, settings: BrokerSettings) -> int:
    from pgqueue.server.broker import Broker

    broker = Broker(config, settings)
    await broker.start()
    http = f", HTTP on {settings.host}:{broker.http.port}" if broker.http else ""
    print(
        f"pgqueue broker {broker.manager.broker_id} serving namespace {config.namespace!r}: "
        f"TCP on {settings.host}:{broker.tcp.port}{http}",
        flush=True,
    )
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    print("pgqueue: draining ...", file=sys.stderr, flush=True)
    await broker.stop()
    return 0
