"""Jobs: ``pgqueue jobs QUEUE`` (a page of them), ``job ID`` (everything about one),
``push`` (one, or a JSON-lines file with a progress bar) and ``retry ID``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import orjson
from rich.panel import Panel
from rich.syntax import Syntax

from pgqueue.cli.common import shown_option
from pgqueue.cli.operator import Target, connection_options, json_option, run_async, with_admin
from pgqueue.cli.render import dumps, duration, moment, out, print_json, progress_bar, table
from pgqueue.client import Admin, Job
from pgqueue.client.options import check_job
from pgqueue.errors import JobNotFound, ValidationError
from pgqueue.vocabulary.states import JOB_STATES

__all__ = ["build_timeline", "register"]

PUSH_CHUNK = 1_000
OPTION_FIELDS = (
    "priority",
    "lifo",
    "maxAttempts",
    "backoffConfig",
    "timeout",
    "ttl",
    "uniqueKey",
    "customId",
    "groupId",
    "parentId",
    "dependsOn",
    "childrenIds",
    "tags",
    "removeOnComplete",
    "removeOnFail",
    "stackTraceLimit",
    "keepLogs",
    "failParentOnFailure",
    "removeDependencyOnFailure",
    "continueParentOnFailure",
    "ignoreDependencyOnFailure",
)


def _json_argument(text: str, what: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint=what) from None


@click.command("jobs")
@click.argument("queue")
@click.option(
    "--state",
    "states",
    multiple=True,
    type=click.Choice(JOB_STATES),
    help="only jobs in this state (repeatable)  [default: every state]",
)
@shown_option("--page", type=click.IntRange(min=1), default=1, help="page to show")
@shown_option("--page-size", type=click.IntRange(1, 1000), default=20, help="jobs per page")
@click.option("--newest-first", is_flag=True, default=False, help="newest jobs first")
@connection_options
@json_option
def jobs(
    target: Target,
    queue: str,
    states: tuple[str, ...],
    page: int,
    page_size: int,
    newest_first: bool,
    as_json: bool,
) -> None:
    """One page of the jobs of QUEUE (oldest first)."""

    async def work(admin: Admin) -> list[Job]:
        q = await admin.queue(queue)
        # One more than a page: whether a next page exists.
        return await q.get_jobs(
            list(states) or None,
            offset=(page - 1) * page_size,
            limit=page_size + 1,
            asc=not newest_first,
        )

    found = run_async(with_admin(target, work))
    more = len(found) > page_size
    found = found[:page_size]
    if as_json:
        print_json({"jobs": [job.raw for job in found], "page": page, "more": more})
        return
    rows = [
        [
            job.id,
            job.name,
            job.raw.get("state", ""),
            f"{job.raw.get('attempts', 0)}/{job.raw.get('maxAttempts', '')}",
            job.raw.get("priority", 0),
            moment(job.raw.get("createdAt")),
            (job.raw.get("failedReason") or "")[:60],
        ]
        for job in found
    ]
    out.print(table(["id", "name", "state", "attempts", "priority", "created", "error"], rows))
    where = f"page {page}, {len(found)} job(s)"
    out.print(where + (f"; next: --page {page + 1}" if more else ""))


def build_timeline(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The job's history from its timestamps and attempt log: ``[{at, event, detail}]``."""
    events: list[dict[str, Any]] = [{"at": raw.get("createdAt"), "event": "created", "detail": ""}]
    run_at, created = raw.get("runAt"), raw.get("createdAt")
    if run_at and created and run_at > created + 1:
        events.append({"at": run_at, "event": "due", "detail": "delayed until then"})
    for entry in raw.get("attemptLog") or []:
        attempt = entry.get("attempt")
        if entry.get("startedAt") is not None:
            events.append(
                {"at": entry["startedAt"], "event": f"attempt {attempt} started", "detail": ""}
            )
        detail = " ".join(str(x) for x in (entry.get("reason"), entry.get("error")) if x)
        events.append(
            {"at": entry.get("failedAt"), "event": f"attempt {attempt} failed", "detail": detail}
        )
    started = raw.get("startedAt")
    if started is not None and all(e["at"] != started for e in events):
        events.append({"at": started, "event": "started", "detail": ""})
    if raw.get("completedAt") is not None:
        state = raw.get("state")
        detail = raw.get("failedReason") or "" if state == "failed" else ""
        events.append({"at": raw["completedAt"], "event": state or "finished", "detail": detail})
    return sorted((e for e in events if e["at"] is not None), key=lambda e: float(e["at"]))


def _options(raw: dict[str, Any]) -> dict[str, Any]:
    empty: tuple[Any, ...] = (None, [], {}, False)
    return {key: raw[key] for key in OPTION_FIELDS if raw.get(key) not in empty}


@click.command("job")
@click.argument("job_id", metavar="ID")
@connection_options
@json_option
def job(target: Target, job_id: str, as_json: bool) -> None:
    """Everything about one job: data, options, attempts, logs, result, timeline."""

    async def work(admin: Admin) -> tuple[Job, list[dict[str, Any]]]:
        found = await admin.get_job(job_id)
        if found is None:
            raise JobNotFound(job_id, f"no job {job_id}")
        return found, await admin.get_job_logs(job_id)

    found, logs = run_async(with_admin(target, work))
    raw = dict(found.raw)
    timeline = build_timeline(raw)
    if as_json:
        print_json({"job": raw, "logs": logs, "timeline": timeline})
        return
    out.print(f"[bold]job {found.id}[/bold]")
    summary = table(["field", "value"], [])
    for name, value in (
        ("queue", raw.get("queue")),
        ("name", raw.get("name")),
        ("state", raw.get("state")),
        ("attempts", f"{raw.get('attempts', 0)} of {raw.get('maxAttempts')}"),
        ("progress", raw.get("progress")),
        ("created", moment(raw.get("createdAt"))),
        ("started", moment(raw.get("startedAt"))),
        ("finished", moment(raw.get("completedAt"))),
    ):
        summary.add_row(name, "" if value is None else str(value))
    out.print(summary)
    out.print(
        Panel(
            Syntax(dumps(raw.get("data")), "json"), title="data", title_align="left", expand=False
        )
    )
    options = _options(raw)
    if options:
        out.print(table(["option", "value"], [[k, dumps(v)] for k, v in options.items()]))
    if raw.get("state") == "completed":
        result = Syntax(dumps(raw.get("returnvalue")), "json")
        out.print(Panel(result, title="result", title_align="left", expand=False))
    attempts = raw.get("attemptLog") or []
    if attempts:
        out.print(
            table(
                ["attempt", "started at", "failed at", "took", "reason", "error"],
                [
                    [
                        a.get("attempt"),
                        moment(a.get("startedAt")),
                        moment(a.get("failedAt")),
                        duration(a.get("duration")),
                        a.get("reason"),
                        a.get("error"),
                    ]
                    for a in attempts
                ],
                title="attempts",
            )
        )
    if raw.get("stacktrace"):
        trace = "\n".join(raw["stacktrace"])
        out.print(Panel(trace, title="stack trace", title_align="left", expand=False))
    if logs:
        out.print(
            table(
                ["at", "level", "message"],
                [
                    [moment(line.get("timestamp")), line.get("level"), line.get("message")]
                    for line in logs
                ],
                title="logs",
            )
        )
    out.print(
        table(
            ["at", "event", "detail"],
            [[moment(e["at"]), e["event"], e["detail"]] for e in timeline],
            title="timeline",
        )
    )


def _read_jsonl(path: Path, queue: str) -> list[dict[str, Any]]:
    """Every line of ``path`` as ``{name, data, opts}``, all checked before any push."""
    entries: list[dict[str, Any]] = []
    try:
        text = path.read_text()
    except OSError as exc:
        raise click.BadParameter(str(exc), param_hint="--from") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ValidationError(f"{where}: not JSON: {exc}", field="from") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ValidationError(
                f'{where}: each line is {{"name": ..., "data": ..., "opts": {{...}}}}',
                field="from",
            )
        extra = set(entry) - {"name", "data", "opts"}
        if extra:
            keys = ", ".join(sorted(extra))
            raise ValidationError(f"{where}: unknown key: {keys}", field="from")
        opts = entry.get("opts")
        if opts is not None and not isinstance(opts, dict):
            raise ValidationError(f"{where}: opts must be an object", field="from")
        check_job(queue, entry["name"], entry.get("data"), opts, prefix=f"{where}: ")
        entries.append(entry)
    return entries


@click.command("push")
@click.argument("queue")
@click.argument("name", required=False)
@click.argument("data", required=False)
@click.option(
    "--from",
    "source",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help='JSON-lines file, one {"name", "data", "opts"} per line (then no NAME/DATA)  '
    "[default: none]",
)
@click.option(
    "--opts",
    default=None,
    help='job options as JSON, e.g. \'{"attempts": 3, "delay": 1000}\'  [default: none]',
)
@connection_options
@json_option
def push(
    target: Target,
    queue: str,
    name: str | None,
    data: str | None,
    source: Path | None,
    opts: str | None,
    as_json: bool,
) -> None:
    """Push one job (NAME, DATA as JSON) to QUEUE, or every line of --from FILE."""
    if source is not None:
        if name is not None or opts is not None:
            raise click.UsageError("--from FILE takes the names, data and options from the file")
        _push_file(target, queue, source, as_json)
        return
    if name is None:
        raise click.UsageError("give NAME (and DATA), or --from FILE.jsonl")
    value = None if data is None else _json_argument(data, "DATA")
    options = {} if opts is None else _json_argument(opts, "--opts")
    if not isinstance(options, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--opts")

    async def work(admin: Admin) -> str:
        return (await (await admin.queue(queue)).add(name, value, **options)).id

    job_id = run_async(with_admin(target, work))
    if as_json:
        print_json({"id": job_id})
    else:
        out.print(job_id)


def _push_file(target: Target, queue: str, source: Path, as_json: bool) -> None:
    entries = _read_jsonl(source, queue)

    async def work(admin: Admin) -> list[str]:
        q = await admin.queue(queue)
        ids: list[str] = []
        with progress_bar() as bar:
            task = bar.add_task(f"push {source.name} → {queue}", total=len(entries))
            for start in range(0, len(entries), PUSH_CHUNK):
                chunk = entries[start : start + PUSH_CHUNK]
                ids += [j.id for j in await q.add_bulk(chunk)]
                bar.advance(task, len(chunk))
        return ids

    ids = run_async(with_admin(target, work))
    if as_json:
        print_json({"ids": ids})
    else:
        out.print(f"pushed {len(ids)} job(s) to {queue}")


@click.command("retry")
@click.argument("job_id", metavar="ID")
@connection_options
def retry(target: Target, job_id: str) -> None:
    """Send failed job ID (dead-lettered) back to waiting."""

    async def work(admin: Admin) -> str:
        found = await admin.get_job(job_id)
        if found is None:
            raise JobNotFound(job_id, f"no job {job_id}")
        if found.raw.get("state") != "failed":
            raise ValidationError(
                f"job {job_id} is {found.raw.get('state')}, not failed: nothing to retry",
                field="id",
            )
        await admin.retry_job(job_id)
        again = await admin.get_job(job_id)
        return str(again.raw.get("state")) if again is not None else "unknown"

    state = run_async(with_admin(target, work))
    out.print(f"job {job_id} retried: now {state}")


def register(group: click.Group) -> None:
    for command in (jobs, job, push, retry):
        group.add_command(command)
