"""``pgqueue worker module:function``: run a worker with that handler until stopped.

    pgqueue worker app.tasks:send_email --queue emails \\
        --connection postgresql://localhost/app --concurrency 10

The handler is imported like ``python -c "from app.tasks import send_email"``
(the current directory is on the path): a coroutine function or a plain
function (run in a thread pool) taking a :class:`~pgqueue.client.Job`.
``--connection`` is a ``postgresql://`` URL (embedded) or ``pgqueue://`` broker
addresses (default ``$PGQUEUE_CONNECTION``, then ``$PGQUEUE_DSN``).

SIGTERM or Ctrl-C closes the worker gracefully: it stops pulling, lets the
running jobs finish and acks them, then exits 0.  A second signal cancels
the running handlers (their jobs go back to waiting) and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import signal
import sys
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pgqueue.errors import ConfigError

__all__ = ["load_processor", "register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("worker", help="run a worker: pgqueue worker module:function")
    parser.add_argument("target", metavar="module:function", help="the job handler")
    parser.add_argument(
        "--queue", default=os.environ.get("PGQUEUE_QUEUE"), help="queue (default $PGQUEUE_QUEUE)"
    )
    parser.add_argument(
        "--connection",
        default=os.environ.get("PGQUEUE_CONNECTION") or os.environ.get("PGQUEUE_DSN"),
        help="postgresql://... (embedded) or pgqueue://host:port,... (brokers)",
    )
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--lock-duration-ms", type=int, default=30_000)
    parser.add_argument(
        "--limit",
        metavar="MAX/MS",
        help="start at most MAX jobs per MS milliseconds (e.g. 100/1000)",
    )
    parser.set_defaults(run=run)


def load_processor(target: str) -> Any:
    """The object ``module:attribute`` names (attributes may be dotted)."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"worker target must be module:function, not {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name!r}: {exc}") from exc
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError as exc:
            raise ConfigError(f"{module_name!r} has no attribute {attribute!r}") from exc
    if not callable(value):
        raise ConfigError(f"{target} is not callable")
    return value


def _limit(text: str | None) -> dict[str, int] | None:
    if not text:
        return None
    count, sep, window = text.partition("/")
    if not sep or not count.isdigit() or not window.isdigit():
        raise ConfigError(f"--limit must look like 100/1000 (max/milliseconds), not {text!r}")
    return {"max": int(count), "duration": int(window)}


def _shown(connection: str) -> str:
    """The connection string without a password."""
    parts = urlsplit(connection)
    host = parts.netloc.rpartition("@")[2]
    user = parts.username
    netloc = f"{user}@{host}" if user else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def run(args: argparse.Namespace) -> int:
    if not args.queue:
        raise ConfigError("no queue: pass --queue NAME or set PGQUEUE_QUEUE")
    if not args.connection:
        raise ConfigError(
            "no connection: pass --connection postgresql://... or pgqueue://host:6789, "
            "or set PGQUEUE_CONNECTION"
        )
    processor = load_processor(args.target)
    return asyncio.run(_work(args, processor))


async def _work(args: argparse.Namespace, processor: Any) -> int:
    from pgqueue.client import Worker

    worker = Worker(
        args.queue,
        processor,
        args.connection,
        concurrency=args.concurrency,
        lock_duration_ms=args.lock_duration_ms,
        limiter=_limit(args.limit),
    )
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = 0
    forcing: list[asyncio.Task[None]] = []

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            print(
                f"pgqueue worker: closing; waiting for {worker.active} running job(s)",
                file=sys.stderr,
                flush=True,
            )
            stop.set()
        else:
            print("pgqueue worker: cancelling the running jobs", file=sys.stderr, flush=True)
            forcing.append(loop.create_task(worker.close(force=True)))

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal)
    worker.once(
        "ready",
        lambda: print(
            f"pgqueue worker {worker.id} processing queue {args.queue!r} "
            f"(concurrency {args.concurrency}) via {_shown(args.connection)}",
            flush=True,
        ),
    )
    worker.on("error", lambda exc: print(f"pgqueue worker: {exc}", file=sys.stderr, flush=True))
    await stop.wait()
    await worker.close()
    print(
        f"pgqueue worker: closed ({worker.processed} completed, {worker.failed} failed)",
        flush=True,
    )
    return 0
