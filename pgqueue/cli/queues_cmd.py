"""``pgqueue queues`` and the queue controls: pause, resume, drain, clean, obliterate.

Destructive controls (drain, clean, obliterate) say what they will remove and
ask first; ``--yes`` skips the question, and with no terminal to ask on they
refuse (exit code 2) unless ``--yes`` is given.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import click

from pgqueue.cli.common import shown_option
from pgqueue.cli.operator import (
    Target,
    confirm_or_refuse,
    connection_options,
    json_option,
    on_queue,
    run_async,
    with_admin,
    yes_option,
)
from pgqueue.cli.render import out, print_json, table
from pgqueue.client import Admin, Queue

__all__ = ["register"]

COUNT_COLUMNS = (
    ("waiting", "waiting"),
    ("prioritized", "prioritized"),
    ("delayed", "delayed"),
    ("active", "active"),
    ("completed", "completed"),
    ("failed", "failed"),
    ("children", "waiting-children"),
)
CLEANABLE_STATES = ("completed", "failed", "waiting", "delayed", "prioritized")


@click.command("queues")
@connection_options
@json_option
def queues(target: Target, as_json: bool) -> None:
    """Every queue: jobs per state, paused, dead-lettered entries."""
    overview = run_async(with_admin(target, lambda admin: admin.get_overview()))
    if as_json:
        print_json(overview)
        return
    if not overview:
        out.print("no queues yet (a queue exists once it has jobs or settings)")
        return
    rows = [
        [
            q["name"],
            "paused" if q["paused"] else "",
            *(q["counts"].get(key, 0) for _, key in COUNT_COLUMNS),
            q["dlq"],
        ]
        for q in overview
    ]
    out.print(table(["queue", "state", *(c for c, _ in COUNT_COLUMNS), "dlq"], rows))


def _switch(
    name: str, done: str, help: str, act: Callable[[Queue], Awaitable[None]]
) -> click.Command:
    """A command that does ``act`` to QUEUE and says it is ``done``."""

    @click.command(name, help=help)
    @click.argument("queue")
    @connection_options
    def switch(target: Target, queue: str) -> None:
        on_queue(target, queue, act)
        out.print(f"queue {queue} {done}")

    return switch


pause = _switch(
    "pause", "paused", "Stop every worker on every broker from taking jobs of QUEUE.", Queue.pause
)
resume = _switch("resume", "resumed", "Let workers take jobs of QUEUE again.", Queue.resume)


@click.command("drain")
@click.argument("queue")
@click.option("--delayed", is_flag=True, default=False, help="remove the delayed jobs too")
@yes_option
@connection_options
def drain(target: Target, queue: str, delayed: bool, yes: bool) -> None:
    """Remove the waiting (and with --delayed the delayed) jobs of QUEUE."""

    counts = on_queue(target, queue, lambda q: q.get_counts())
    doomed = counts["waiting"] + counts["prioritized"] + (counts["delayed"] if delayed else 0)
    what = "waiting and delayed" if delayed else "waiting"
    confirm_or_refuse(f"Remove {doomed} {what} job(s) of queue {queue}?", yes)

    removed = on_queue(target, queue, lambda q: q.drain(delayed))
    out.print(f"queue {queue}: removed {removed} job(s)")


@click.command("clean")
@click.argument("queue")
@shown_option(
    "--state",
    type=click.Choice(CLEANABLE_STATES),
    default="completed",
    help="remove jobs in this state",
)
@shown_option(
    "--grace-ms", type=click.IntRange(min=0), default=0, help="only jobs older than this (ms)"
)
@shown_option("--limit", type=click.IntRange(min=1), default=1000, help="remove at most this many")
@yes_option
@connection_options
def clean(target: Target, queue: str, state: str, grace_ms: int, limit: int, yes: bool) -> None:
    """Remove up to --limit jobs of QUEUE in --state older than --grace-ms."""

    present = on_queue(target, queue, lambda q: q.get_counts()).get(state, 0)
    confirm_or_refuse(
        f"Remove up to {min(limit, present)} {state} job(s) of queue {queue} "
        f"older than {grace_ms} ms?",
        yes,
    )

    removed = on_queue(target, queue, lambda q: q.clean(grace_ms, limit, state))
    out.print(f"queue {queue}: removed {len(removed)} {state} job(s)")


@click.command("obliterate")
@click.argument("queue")
@click.option("--force", is_flag=True, default=False, help="even while jobs are active")
@yes_option
@connection_options
def obliterate(target: Target, queue: str, force: bool, yes: bool) -> None:
    """Remove QUEUE with all its jobs, settings and DLQ entries."""

    async def count(admin: Admin) -> dict[str, Any]:
        return await admin.get_queue_overview(queue)

    overview = run_async(with_admin(target, count))
    jobs = sum(overview["counts"].values())
    confirm_or_refuse(
        f"Remove queue {queue} and all its {jobs} job(s)?",
        yes,
    )

    on_queue(target, queue, lambda q: q.obliterate(force))
    out.print(f"queue {queue} obliterated")


def register(group: click.Group) -> None:
    for command in (queues, pause, resume, drain, clean, obliterate):
        group.add_command(command)
