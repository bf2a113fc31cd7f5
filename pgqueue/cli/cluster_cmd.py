"""``pgqueue workers`` and ``pgqueue brokers``: who is connected and who leads."""

from __future__ import annotations

import click

from pgqueue.cli.operator import Target, connection_options, json_option, run_async, with_admin
from pgqueue.cli.render import age, moment, out, print_json, table

__all__ = ["register"]


@click.command("workers")
@click.option("--queue", default=None, help="only workers of this queue  [default: all]")
@connection_options
@json_option
def workers(target: Target, queue: str | None, as_json: bool) -> None:
    """Registered workers: queues, concurrency, jobs running and done, last heartbeat."""
    found = run_async(with_admin(target, lambda admin: admin.get_workers()))
    if queue is not None:
        found = [w for w in found if queue in (w.get("queues") or [])]
    if as_json:
        print_json({"workers": found})
        return
    rows = [
        [
            w.get("workerId"),
            w.get("name"),
            ",".join(w.get("queues") or []),
            w.get("hostname") or "",
            w.get("pid") or "",
            w.get("concurrency"),
            w.get("activeJobs"),
            w.get("processedJobs"),
            w.get("failedJobs"),
            age(w.get("lastSeen")),
        ]
        for w in found
    ]
    columns = [
        "id",
        "name",
        "queues",
        "host",
        "pid",
        "concurrency",
        "active",
        "processed",
        "failed",
        "seen",
    ]
    out.print(table(columns, rows))


@click.command("brokers")
@connection_options
@json_option
def brokers(target: Target, as_json: bool) -> None:
    """Broker sessions of the namespace: heartbeat, leader, draining."""
    found = run_async(with_admin(target, lambda admin: admin.get_brokers()))
    if as_json:
        print_json({"brokers": found})
        return
    rows = []
    for b in found:
        role = "leader" if b["leader"] else ""
        if b["draining"]:
            status = "draining"
        elif b["live"]:
            status = "live"
        else:
            status = "stale"
        rows.append(
            [
                b["brokerId"] + (" (this connection)" if b.get("self") else ""),
                status,
                role,
                b.get("hostname") or "",
                b.get("pid") or "",
                moment(b.get("startedAt")),
                f"{float(b.get('silentMs') or 0) / 1000:.1f}s ago",
            ]
        )
    out.print(table(["broker", "status", "role", "host", "pid", "started", "heartbeat"], rows))


def register(group: click.Group) -> None:
    group.add_command(workers)
    group.add_command(brokers)
