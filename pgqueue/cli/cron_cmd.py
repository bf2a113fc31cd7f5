"""``pgqueue cron``: the namespace's cron schedulers (list, get, delete).

Schedulers are made by producers (``Cron``, ``upsertJobScheduler``, the
``repeat`` job option); the operator lists them with their next run and
executions, reads one, and removes one (asking first, unless ``--yes``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import click

from pgqueue.cli.operator import (
    Target,
    confirm_or_refuse,
    connection_options,
    json_option,
    run_async,
    with_admin,
    yes_option,
)
from pgqueue.cli.render import moment, out, print_json, table
from pgqueue.client import Admin, JobScheduler

__all__ = ["register"]


def _plain(scheduler: JobScheduler) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(scheduler).items() if k != "raw"}


def _when(scheduler: JobScheduler) -> str:
    if scheduler.pattern is not None:
        zone = f" ({scheduler.timezone})" if scheduler.timezone else ""
        return f"{scheduler.pattern}{zone}"
    return f"every {scheduler.every} ms"


@click.group("cron")
def cron() -> None:
    """Cron schedulers: each tick pushes one job, whatever brokers run."""


@cron.command("list")
@click.option(
    "--queue", default=None, help="only the schedulers of this queue  [default: every queue]"
)
@connection_options
@json_option
def list_(target: Target, queue: str | None, as_json: bool) -> None:
    """Every scheduler: its queue, schedule, next run and executions."""
    schedulers = run_async(with_admin(target, lambda admin: admin.get_schedulers(queue)))
    if as_json:
        print_json([_plain(s) for s in schedulers])
        return
    if not schedulers:
        out.print("no cron schedulers")
        return
    rows = [
        [
            s.id,
            s.queue,
            s.name,
            _when(s),
            moment(s.next_run) if s.next_run is not None else "spent",
            s.executions,
            "" if s.limit is None else s.limit,
        ]
        for s in schedulers
    ]
    out.print(table(["name", "queue", "job", "schedule", "next run", "runs", "limit"], rows))


@cron.command("get")
@click.argument("name")
@connection_options
@json_option
def get(target: Target, name: str, as_json: bool) -> None:
    """One scheduler, all its settings (exit code 1 when there is none)."""
    scheduler = run_async(with_admin(target, lambda admin: admin.get_scheduler(name)))
    if scheduler is None:
        raise click.ClickException(f"no cron scheduler {name}")
    if as_json:
        print_json(_plain(scheduler))
        return
    fields = _plain(scheduler)
    fields["next_run"] = moment(scheduler.next_run) if scheduler.next_run else "spent"
    fields["last_run"] = moment(scheduler.last_run)
    out.print(table(["field", "value"], [[k, v] for k, v in fields.items()]))


@cron.command("delete")
@click.argument("name")
@yes_option
@connection_options
def delete(target: Target, name: str, yes: bool) -> None:
    """Remove scheduler NAME (the jobs it already pushed stay)."""
    confirm_or_refuse(f"Remove cron scheduler {name}?", yes)

    async def work(admin: Admin) -> bool:
        return await admin.remove_scheduler(name)

    if not run_async(with_admin(target, work)):
        raise click.ClickException(f"no cron scheduler {name}")
    out.print(f"cron scheduler {name} removed")


def register(group: click.Group) -> None:
    group.add_command(cron)
