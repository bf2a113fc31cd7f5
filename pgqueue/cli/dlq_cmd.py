"""``pgqueue dlq list|stats|redrive|purge|audit``: the dead-letter queue.

Redrive and purge of many entries go queue by queue, in chunks, with a
progress bar; both are audited under the connection's actor (``sdk`` on a
database connection, the token's name on a broker) with ``--why``.
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
    run_async,
    with_admin,
    yes_option,
)
from pgqueue.cli.render import age, moment, out, plural, print_json, progress_bar, table
from pgqueue.client import Admin
from pgqueue.vocabulary.states import FAILURE_REASONS

__all__ = ["register"]

REDRIVE_CHUNK = 500
reason_option = click.option(
    "--reason",
    type=click.Choice(FAILURE_REASONS),
    default=None,
    help="only entries dead-lettered for this reason  [default: any]",
)
why_option = click.option(
    "--why", default=None, help="why, stored in the DLQ audit  [default: none]"
)


@click.group("dlq")
def dlq() -> None:
    """The dead-letter queue: list, stats, redrive, purge, audit."""


@dlq.command("list")
@click.argument("queue")
@reason_option
@shown_option("--page", type=click.IntRange(min=1), default=1, help="page to show")
@shown_option("--page-size", type=click.IntRange(1, 1000), default=20, help="entries per page")
@connection_options
@json_option
def list_(
    target: Target, queue: str, reason: str | None, page: int, page_size: int, as_json: bool
) -> None:
    """Dead-lettered jobs of QUEUE, oldest first."""

    async def work(admin: Admin) -> list[dict[str, Any]]:
        q = await admin.queue(queue)
        return await q.get_dlq(page_size + 1, (page - 1) * page_size, reason=reason)

    entries = run_async(with_admin(target, work))
    more = len(entries) > page_size
    entries = entries[:page_size]
    if as_json:
        print_json({"entries": entries, "page": page, "more": more})
        return
    rows = [
        [
            e["job"]["id"],
            e["job"]["name"],
            e["reason"],
            len(e.get("attempts") or []),
            age(e.get("enteredAt")),
            (e.get("error") or "")[:70],
        ]
        for e in entries
    ]
    out.print(table(["id", "name", "reason", "attempts", "entered", "error"], rows))
    following = f"; next: --page {page + 1}" if more else ""
    out.print(f"page {page}, {plural(len(entries), 'entry', 'entries')}{following}")


@dlq.command("stats")
@click.argument("queue", required=False)
@connection_options
@json_option
def stats(target: Target, queue: str | None, as_json: bool) -> None:
    """DLQ statistics of QUEUE, or of every queue."""

    async def work(admin: Admin) -> dict[str, Any]:
        if queue is None:
            return await admin.get_dlq_stats()
        return await (await admin.queue(queue)).get_dlq_stats()

    found = run_async(with_admin(target, work))
    if as_json:
        print_json(found)
        return
    out.print(
        f"{plural(found['total'], 'entry', 'entries')}; "
        f"{found['pendingRetry']} due for auto-retry, "
        f"{found['expired']} expired; oldest {age(found.get('oldestEntry'))} ago, "
        f"newest {age(found.get('newestEntry'))} ago"
    )
    reasons = [[r, n] for r, n in found["byReason"].items() if n]
    if reasons:
        out.print(table(["reason", "entries"], reasons))
    if queue is None and found["byQueue"]:
        out.print(table(["queue", "entries"], sorted(found["byQueue"].items())))


async def _each_queue(
    action: str,
    sizes: dict[str, int],
    act: Callable[[str, int, Callable[[int], None]], Awaitable[int]],
) -> dict[str, int]:
    """``act(queue, size, advance)`` on each queue of ``sizes`` under one
    progress bar (``advance(n)``: n more entries done); queue -> what it returned."""
    done: dict[str, int] = {}
    with progress_bar() as bar:
        task = bar.add_task(action, total=sum(sizes.values()))
        for name, size in sizes.items():
            bar.update(task, description=f"{action} {name}")
            done[name] = await act(name, size, lambda n: bar.advance(task, n))
        bar.update(task, description=action)
    return done


async def _selected_queues(admin: Admin, queue: str | None, reason: str | None) -> dict[str, int]:
    """Queue -> entries to act on (of ``reason``), largest work first."""
    if queue is not None:
        found = await (await admin.queue(queue)).get_dlq_stats()
        total = found["byReason"].get(reason, 0) if reason else found["total"]
        return {queue: int(total)}
    everything = await admin.get_dlq_stats()
    sizes = {name: int(n) for name, n in everything["byQueue"].items() if n}
    if reason is not None:
        sizes = {}
        for name in everything["byQueue"]:
            per = await (await admin.queue(name)).get_dlq_stats()
            if per["byReason"].get(reason):
                sizes[name] = int(per["byReason"][reason])
    return sizes


def _queue_choice(queue: str | None, every: bool) -> None:
    if queue is None and not every:
        raise click.UsageError("name a QUEUE, or pass --all for every queue")
    if queue is not None and every:
        raise click.UsageError("give a QUEUE or --all, not both")


@dlq.command("redrive")
@click.argument("queue", required=False)
@click.option("--all", "every", is_flag=True, default=False, help="every queue's DLQ")
@click.option("--job", "job_id", default=None, help="only this job  [default: every entry]")
@reason_option
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="at most this many per queue  [default: no limit]",
)
@why_option
@connection_options
@json_option
def redrive(
    target: Target,
    queue: str | None,
    every: bool,
    job_id: str | None,
    reason: str | None,
    limit: int | None,
    why: str | None,
    as_json: bool,
) -> None:
    """Send dead-lettered jobs of QUEUE (or --all queues) back to waiting."""
    _queue_choice(queue, every)
    if job_id is not None and queue is None:
        raise click.UsageError("--job needs the job's QUEUE")

    async def work(admin: Admin) -> dict[str, int]:
        if job_id is not None:
            assert queue is not None
            moved = await (await admin.queue(queue)).retry_dlq(job_id, why=why)
            return {queue: moved}
        sizes = await _selected_queues(admin, queue, reason)
        if limit is not None:
            sizes = {name: min(n, limit) for name, n in sizes.items()}

        async def redrive_queue(name: str, size: int, advance: Callable[[int], None]) -> int:
            q = await admin.queue(name)
            moved_here = 0
            while moved_here < size:
                step = min(REDRIVE_CHUNK, size - moved_here)
                moved = await q.retry_dlq(limit=step, reason=reason, why=why)
                moved_here += moved
                advance(moved)
                if moved < step:
                    break  # the rest is held back (a live job has its id) or gone
            return moved_here

        return await _each_queue("redrive", sizes, redrive_queue)

    _report(run_async(with_admin(target, work)), "redriven", "redrove", as_json)


@dlq.command("purge")
@click.argument("queue", required=False)
@click.option("--all", "every", is_flag=True, default=False, help="every queue's DLQ")
@reason_option
@why_option
@yes_option
@connection_options
@json_option
def purge(
    target: Target,
    queue: str | None,
    every: bool,
    reason: str | None,
    why: str | None,
    yes: bool,
    as_json: bool,
) -> None:
    """Delete dead-lettered jobs of QUEUE (or --all queues) for good."""
    _queue_choice(queue, every)
    sizes = run_async(with_admin(target, lambda admin: _selected_queues(admin, queue, reason)))
    confirm_or_refuse(
        f"Delete {sum(sizes.values())} dead-lettered job(s) of {len(sizes)} queue(s) for good?",
        yes,
    )

    async def work(admin: Admin) -> dict[str, int]:
        async def purge_queue(name: str, size: int, advance: Callable[[int], None]) -> int:
            deleted = await (await admin.queue(name)).purge_dlq(reason=reason, why=why)
            advance(deleted)
            return deleted

        return await _each_queue("purge", sizes, purge_queue)

    _report(run_async(with_admin(target, work)), "purged", "purged", as_json)


def _report(per_queue: dict[str, int], key: str, verb: str, as_json: bool) -> None:
    """Jobs moved per queue: ``{key: {queue: n}, total}`` or one line of prose."""
    total = sum(per_queue.values())
    if as_json:
        print_json({key: per_queue, "total": total})
        return
    out.print(f"{verb} {total} job(s) from {len(per_queue)} queue(s)")


@dlq.command("audit")
@click.argument("queue", required=False)
@shown_option("--limit", type=click.IntRange(1, 10_000), default=50, help="newest records to show")
@connection_options
@json_option
def audit(target: Target, queue: str | None, limit: int, as_json: bool) -> None:
    """Who redrove, purged or removed what, when and why (newest first)."""

    async def work(admin: Admin) -> list[dict[str, Any]]:
        if queue is None:
            return await admin.get_dlq_audit(limit)
        return await (await admin.queue(queue)).get_dlq_audit(limit)

    records = run_async(with_admin(target, work))
    if as_json:
        print_json({"records": records})
        return
    rows = [
        [
            moment(r["at"]),
            r["actor"],
            r["action"],
            r.get("queue") or "",
            r["count"],
            r.get("reason") or "",
        ]
        for r in records
    ]
    out.print(table(["at", "actor", "action", "queue", "count", "why"], rows))


def register(group: click.Group) -> None:
    group.add_command(dlq)
