"""``pgqueue worker module:function``: run a worker with that handler until stopped.

    pgqueue worker app.tasks:send_email --queue emails \\
        --connection postgresql://localhost/app --concurrency 10

The handler is imported like ``python -c "from app.tasks import send_email"``
(the current directory is on the path): a coroutine function or a plain
function (run in a thread pool) taking a :class:`~pgqueue.client.Job`.
``--connection`` is a ``postgresql://`` URL (embedded) or ``pgqueue://`` broker
addresses (default ``$PGQUEUE_CONNECTION``, then ``$PGQUEUE_DSN``).

Each failed job is logged at WARNING with its traceback; at ``--log-level
DEBUG`` each job's start and end too; ``--log-format json`` writes them as
JSON lines (with ``job_id``, ``queue``, ``worker_id``) for log shippers.

SIGTERM or Ctrl-C closes the worker gracefully: it stops pulling, lets the
running jobs finish and acks them, then exits 0.  A second signal cancels
the running handlers (their jobs go back to waiting) and exits.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import signal
import sys
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import click

from pgqueue.cli.common import env_option
from pgqueue.cli.logs import apply_logging, logging_options
from pgqueue.errors import ConfigError

__all__ = ["load_processor", "register", "worker"]

log = logging.getLogger("pgqueue.worker")


@click.command("worker")
@click.argument("target", metavar="MODULE:FUNCTION")
@env_option("--queue", default=None, help="queue to process  [required]")
@click.option(
    "--connection",
    default=None,
    help="postgresql://... (embedded) or pgqueue://host:port,... (brokers)  "
    "[default: $PGQUEUE_CONNECTION, then $PGQUEUE_DSN]",
)
@click.option("--concurrency", type=click.IntRange(min=1), default=1, help="jobs run at once")
@click.option(
    "--lock-duration-ms",
    type=click.IntRange(min=1),
    default=30_000,
    help="lease of each job, renewed while it runs",
)
@click.option(
    "--limit",
    metavar="MAX/MS",
    default=None,
    help="start at most MAX jobs per MS milliseconds, e.g. 100/1000  [default: no limit]",
)
@logging_options
def worker(
    target: str,
    queue: str | None,
    connection: str | None,
    concurrency: int,
    lock_duration_ms: int,
    limit: str | None,
    log_level: str | None,
    log_format: str | None,
) -> int:
    """Run a worker with the handler MODULE:FUNCTION until stopped (SIGTERM/Ctrl-C)."""
    apply_logging(log_level, log_format)
    connection = connection or os.environ.get("PGQUEUE_CONNECTION") or os.environ.get("PGQUEUE_DSN")
    if not queue:
        raise ConfigError("no queue: pass --queue NAME or set PGQUEUE_QUEUE")
    if not connection:
        raise ConfigError(
            "no connection: pass --connection postgresql://... or pgqueue://host:6789, "
            "or set PGQUEUE_CONNECTION"
        )
    processor = load_processor(target)
    settings = {
        "queue": queue,
        "connection": connection,
        "concurrency": concurrency,
        "lock_duration_ms": lock_duration_ms,
        "limiter": _limit(limit),
    }
    return asyncio.run(_work(settings, processor))


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


class JobLog:
    """Per-job log lines of ``pgqueue worker`` (see the module docstring)."""

    def __init__(self, queue: str, worker_id: str) -> None:
        self.queue = queue
        self.worker_id = worker_id
        self._started: dict[str, float] = {}

    def _extra(self, job: Any, **more: Any) -> dict[str, Any]:
        return {"job_id": job.id, "queue": self.queue, "worker_id": self.worker_id, **more}

    def _took(self, job: Any) -> float | None:
        started = self._started.pop(job.id, None)
        return None if started is None else round((time.monotonic() - started) * 1000, 1)

    def active(self, job: Any) -> None:
        self._started[job.id] = time.monotonic()
        attempt = int(getattr(job, "attempts_made", 0) or 0) + 1
        self._log(logging.DEBUG, job, "started, attempt %d", attempt, attempt=attempt)

    def completed(self, job: Any, result: Any) -> None:
        took = self._took(job)
        self._log(logging.DEBUG, job, "completed in %s ms", took, duration_ms=took)

    def failed(self, job: Any, exc: BaseException) -> None:
        took = self._took(job)
        what = "failed after %s ms: %s: %s"
        self._log(
            logging.WARNING, job, what, took, type(exc).__name__, exc, exc=exc, duration_ms=took
        )

    def _log(
        self,
        level: int,
        job: Any,
        what: str,
        *args: Any,
        exc: BaseException | None = None,
        **more: Any,
    ) -> None:
        """One line ``job <id> (<name>) <what>``, with the job's fields as ``extra``."""
        log.log(
            level,
            "job %s (%s) " + what,
            job.id,
            job.name,
            *args,
            exc_info=exc,
            extra=self._extra(job, **more),
        )


async def _work(settings: dict[str, Any], processor: Any) -> int:
    from pgqueue.client import Worker

    queue = settings["queue"]
    connection = settings["connection"]
    worker = Worker(
        queue,
        processor,
        connection,
        concurrency=settings["concurrency"],
        lock_duration_ms=settings["lock_duration_ms"],
        limiter=settings["limiter"],
    )
    jobs = JobLog(queue, worker.id)
    worker.on("active", jobs.active)
    worker.on("completed", jobs.completed)
    worker.on("failed", jobs.failed)
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
            f"pgqueue worker {worker.id} processing queue {queue!r} "
            f"(concurrency {settings['concurrency']}) via {_shown(connection)}; "
            "Ctrl-C or SIGTERM stops it after the running jobs",
            flush=True,
        ),
    )
    worker.on("error", lambda exc: log.error("pgqueue worker: %s", exc))
    await stop.wait()
    await worker.close()
    print(
        f"pgqueue worker: closed ({worker.processed} completed, {worker.failed} failed)",
        flush=True,
    )
    return 0


def register(group: click.Group) -> None:
    group.add_command(worker)
