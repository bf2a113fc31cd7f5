"""The history checker: what clients saw against what the database holds.

One linear pass over the merged history (:mod:`pgqueue.testing.history`) and
one read of the database (jobs, finished jobs, DLQ, outbox), after the run
has quiesced and drained.  :func:`check` is pure (a history and a
:class:`Snapshot` in, a :class:`Report` out); :func:`check_run` reads the
database first.  The verdict depends only on safety counters; duplicate
deliveries and side effects are reported and bounded, not forbidden
(at-least-once, G2).

    python -m pgqueue.testing.checker --dsn postgresql://... --namespace app \\
        --queue q --history run/            # prints the headline, exits 1 if invalid

What each figure means (docs/reliability.md has the full table):

- **lost**: a custom id whose push was confirmed and of which no job exists
  (*absent*), or whose job is still live after the drain (*stuck*).
- **unexpected**: a job of the run's queues that no producer tried to push, or
  whose every push was definitely refused.
- **indeterminate**: custom ids with a push of unknown outcome; *recovered* when
  the job exists (a retry or the first try committed), *absent* otherwise.
- **stale acks accepted**: a completed job whose stored result was produced by
  an execution other than the claim current at completion (a smaller fence,
  or no recorded execution at all: a write by someone who did not hold it).
- **acked twice**: a job with more than one terminal event in the outbox.
- **lease overlaps**: a job claimed (``active``) again while its previous claim
  had not ended (no completion, failure, stall or release in between).
- **custom-id duplicates**: a custom id held by more than one job.
- **redeliveries**: claims beyond the first that no explicit failure caused;
  **duplicate side effects**: executions beyond the first per job, likewise
  (must not exceed the redeliveries).
- **events missing / duplicated**, per subscriber: outbox events (of the types
  the wire carries) committed while it was subscribed that it never received,
  or received twice.  "While subscribed" ends at the ``upto`` event id its
  ``unsubscribed`` record names (the position the run waited for it to reach
  before closing it), or, without one, a second before it closed (events
  still in flight then are not held against it).
- **DLQ expected vs found**: poison jobs must be dead-lettered, other jobs not
  (except after stalls); with ``backoff_ms`` the gaps between attempts are
  checked on the database clock (never shorter than the backoff).
- **max recovery**: the longest time from a fault to the next completion.
- **max event delay**: the longest time from an event's commit (database
  time) to a subscriber receiving it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgqueue.testing.history import Record, read_history

__all__ = ["DlqRow", "EventRow", "JobRow", "Report", "Snapshot", "check", "check_run", "main"]

SKIPPED_ON_THE_WIRE = frozenset({"dlq", "dlq_audit"})  # server/wire.py sends these to nobody
LEASE_ENDS = frozenset(
    {"completed", "failed", "stalled", "retried", "waiting", "delayed", "removed", "dlq"}
)
CLOSING_MARGIN_S = 1.0  # without an ``upto``: events of a subscriber's last second may be in flight
BACKOFF_TOLERANCE_MS = 5.0  # timestamps are rounded to the millisecond


@dataclass(frozen=True, slots=True)
class JobRow:
    id: str
    queue: str
    custom_id: str | None
    state: str  # live: pending / active / waiting-children; finished: completed / failed
    fence: int
    live: bool
    result: str | None = None
    failed_reason: str | None = None


@dataclass(frozen=True, slots=True)
class DlqRow:
    job_id: str
    reason: str
    attempts: tuple[int, ...] = ()  # the attempt log: number, reason, start, end
    reasons: tuple[str, ...] = ()
    started_ms: tuple[float, ...] = ()
    failed_ms: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class EventRow:
    id: int
    queue: str
    job_id: str | None
    type: str
    ts_ms: float
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the database holds for the run's queues."""

    jobs: Sequence[JobRow]
    dlq: Sequence[DlqRow]
    events: Sequence[EventRow]


@dataclass
class Report:
    """The checker's figures; :meth:`headline` prints them on one line."""

    faults: Counter[str] = field(default_factory=Counter)
    admitted: int = 0
    definitely_failed: int = 0
    indeterminate: int = 0
    recovered: int = 0
    absent: int = 0
    lost_absent: int = 0
    lost_stuck: int = 0
    unexpected: int = 0
    acked_twice: int = 0
    stale_acks_accepted: int = 0
    lease_overlaps: int = 0
    cid_duplicates: int = 0
    redeliveries: int = 0
    stalls: int = 0
    duplicate_side_effects: int = 0
    acks_rejected: int = 0
    acks_seen_ok_not_applied: int = 0
    events_missing: dict[str, int] = field(default_factory=dict)
    events_duplicated: dict[str, int] = field(default_factory=dict)
    dlq_expected: int = 0
    dlq_found: int = 0
    dlq_mismatch: int = 0
    backoff_early: int = 0
    backoff_late: int = 0
    max_recovery_s: float | None = None
    max_event_delay_s: float | None = None
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    label: str = ""

    @property
    def lost(self) -> int:
        return self.lost_absent + self.lost_stuck

    @property
    def valid(self) -> bool:
        return (
            self.lost == 0
            and self.unexpected == 0
            and self.acked_twice == 0
            and self.stale_acks_accepted == 0
            and self.lease_overlaps == 0
            and self.cid_duplicates == 0
            and sum(self.events_missing.values()) == 0
            and sum(self.events_duplicated.values()) == 0
            and self.dlq_mismatch == 0
            and self.backoff_early == 0
            and self.duplicate_side_effects <= self.redeliveries
        )

    def note(self, what: str, example: str) -> None:
        if len(self.examples[what]) < 5:
            self.examples[what].append(example)

    def headline(self) -> str:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(self.faults.items()))
        faults = f"faults {sum(self.faults.values())}" + (f" ({kinds})" if kinds else "")
        missing = sum(self.events_missing.values())
        duplicated = sum(self.events_duplicated.values())
        per = ", ".join(
            f"{name} {self.events_missing[name]}/{self.events_duplicated.get(name, 0)}"
            for name in sorted(self.events_missing)
        )
        parts = [
            *([self.label] if self.label else []),
            faults,
            f"jobs {self.admitted} admitted, {self.indeterminate} indeterminate "
            f"({self.recovered} recovered, {self.absent} absent), "
            f"{self.definitely_failed} definitely failed",
            f"lost {self.lost}"
            + (f" (absent {self.lost_absent}, stuck {self.lost_stuck})" if self.lost else ""),
            f"unexpected {self.unexpected}",
            f"acked-twice {self.acked_twice}",
            f"stale-acks-accepted {self.stale_acks_accepted} (rejected {self.acks_rejected})",
            f"lease-overlaps {self.lease_overlaps}",
            f"cid-duplicates {self.cid_duplicates}",
            f"redeliveries {self.redeliveries} (stalls {self.stalls})",
            f"duplicate side effects {self.duplicate_side_effects}",
            f"events missing {missing}, duplicated {duplicated}"
            + (f" (per subscriber {per})" if per else " (no subscriber)"),
            f"dlq {self.dlq_found} (expected {self.dlq_expected}"
            + (f", mismatch {self.dlq_mismatch}" if self.dlq_mismatch else "")
            + (f", early retries {self.backoff_early}" if self.backoff_early else "")
            + ")",
            f"max recovery {_seconds(self.max_recovery_s)}",
            f"max event delay {_seconds(self.max_event_delay_s)}",
            f"valid: {'yes' if self.valid else 'NO'}",
        ]
        return " | ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "faults": dict(self.faults),
            "admitted": self.admitted,
            "indeterminate": self.indeterminate,
            "recovered": self.recovered,
            "absent": self.absent,
            "lost": self.lost,
            "lost_absent": self.lost_absent,
            "lost_stuck": self.lost_stuck,
            "unexpected": self.unexpected,
            "acked_twice": self.acked_twice,
            "stale_acks_accepted": self.stale_acks_accepted,
            "acks_rejected": self.acks_rejected,
            "acks_seen_ok_not_applied": self.acks_seen_ok_not_applied,
            "lease_overlaps": self.lease_overlaps,
            "cid_duplicates": self.cid_duplicates,
            "redeliveries": self.redeliveries,
            "stalls": self.stalls,
            "duplicate_side_effects": self.duplicate_side_effects,
            "events_missing": self.events_missing,
            "events_duplicated": self.events_duplicated,
            "dlq_expected": self.dlq_expected,
            "dlq_found": self.dlq_found,
            "dlq_mismatch": self.dlq_mismatch,
            "backoff_early": self.backoff_early,
            "backoff_late": self.backoff_late,
            "max_recovery_s": self.max_recovery_s,
            "max_event_delay_s": self.max_event_delay_s,
            "examples": dict(self.examples),
            "valid": self.valid,
        }


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} s"


@dataclass
class _Pushes:
    attempted: int = 0
    ok_ids: set[str] = field(default_factory=set)
    info: int = 0
    failed: int = 0
    poison: bool = False


@dataclass
class _Subscriber:
    queue: str = ""
    ready_t: float | None = None
    end_t: float | None = None
    upto: int | None = None
    seqs: Counter[int] = field(default_factory=Counter)


class _History:
    """The history folded into dictionaries (one pass)."""

    def __init__(self, records: Iterable[Record]) -> None:
        self.pushes: dict[str, _Pushes] = defaultdict(_Pushes)
        self.executions: dict[str, list[tuple[int | None, str]]] = defaultdict(list)
        self.exec_fence: dict[str, tuple[str, int | None]] = {}
        self.acks_ok: dict[str, list[str]] = defaultdict(list)
        self.acks_rejected = 0
        self.subscribers: dict[str, _Subscriber] = defaultdict(_Subscriber)
        self.delays: list[float] = []
        self.faults: Counter[str] = Counter()
        self.fault_times: list[float] = []
        self._open_faults: dict[tuple[str, str], float] = {}
        for record in records:
            self._fold(record)
        self.fault_times.extend(self._open_faults.values())

    def _fold(self, r: Record) -> None:
        kind = r.get("kind")
        if kind == "enqueue":
            pushes = self.pushes[str(r.get("cid"))]
            kind_of = r.get("type")
            if kind_of == "invoke":
                pushes.attempted += 1
                pushes.poison = pushes.poison or bool(r.get("poison"))
            elif kind_of == "ok":
                pushes.ok_ids.add(str(r.get("job_id")))
            elif kind_of == "info":
                pushes.info += 1
            elif kind_of == "fail":
                pushes.failed += 1
        elif kind == "exec":
            job_id, execution = str(r.get("job_id")), str(r.get("exec"))
            fence = r.get("fence")
            self.executions[job_id].append((fence, execution))
            self.exec_fence[execution] = (job_id, fence)
        elif kind == "ack":
            if r.get("type") == "ok":
                self.acks_ok[str(r.get("job_id"))].append(str(r.get("exec")))
            elif r.get("type") == "rejected":
                self.acks_rejected += 1
        elif kind in ("subscribed", "unsubscribed", "event"):
            sub = self.subscribers[str(r.get("subscriber"))]
            sub.queue = str(r.get("queue"))
            if kind == "subscribed" and sub.ready_t is None:
                sub.ready_t = float(r["t"])
            elif kind == "unsubscribed":
                sub.end_t = float(r["t"])
                if isinstance(r.get("upto"), int):
                    sub.upto = int(r["upto"])
            elif isinstance(r.get("seq"), int):
                sub.seqs[int(r["seq"])] += 1
                if isinstance(r.get("ts"), int | float):
                    self.delays.append(float(r["t"]) - float(r["ts"]) / 1000)
        elif kind == "nemesis":
            key = (str(r.get("f")), str(r.get("target")))
            if r.get("phase", "start") == "start":
                self.faults[key[0]] += 1
                self._open_faults[key] = float(r["t"])
            else:
                self._open_faults.pop(key, None)
                self.fault_times.append(float(r["t"]))


def check(
    records: Iterable[Record],
    snapshot: Snapshot,
    *,
    require_drained: bool = True,
    backoff_ms: float | None = None,
    subscriber_grace_s: float = 0.05,
    label: str = "",
) -> Report:
    """Compare a history with the database (see the module docstring)."""
    h = _History(records)
    report = Report(faults=h.faults, acks_rejected=h.acks_rejected, label=label)
    run_jobs = _jobs_of_run(h, snapshot, report)
    _check_admissions(h, run_jobs, report, require_drained)
    events_by_job = _events_by_job(snapshot.events)
    _check_completions(h, run_jobs, events_by_job, report)
    _check_events(h, snapshot.events, report, subscriber_grace_s)
    _check_dlq(h, run_jobs, snapshot.dlq, report, backoff_ms)
    _check_recovery(h, snapshot.events, report)
    return report


def _jobs_of_run(h: _History, snapshot: Snapshot, report: Report) -> dict[str, list[JobRow]]:
    """Job rows by custom id; rows nobody tried to push are unexpected."""
    by_cid: dict[str, list[JobRow]] = defaultdict(list)
    for row in snapshot.jobs:
        if row.custom_id is None or row.custom_id not in h.pushes:
            report.unexpected += 1
            report.note("unexpected", f"{row.id} (custom id {row.custom_id!r} never pushed)")
            continue
        by_cid[row.custom_id].append(row)
    for cid, rows in by_cid.items():
        if len({row.id for row in rows}) > 1:
            report.cid_duplicates += 1
            report.note("cid_duplicates", f"{cid}: {sorted({row.id for row in rows})}")
    return by_cid


def _check_admissions(
    h: _History, by_cid: dict[str, list[JobRow]], report: Report, require_drained: bool
) -> None:
    for cid, pushes in h.pushes.items():
        rows = by_cid.get(cid, [])
        if pushes.ok_ids:
            report.admitted += 1
            if not rows:
                report.lost_absent += 1
                report.note("lost", f"{cid} (admitted as {sorted(pushes.ok_ids)}, no job)")
            elif require_drained and all(row.live for row in rows):
                report.lost_stuck += 1
                report.note("stuck", f"{cid} still {rows[0].state} after the drain")
        if pushes.info:
            report.indeterminate += 1
            if rows:
                report.recovered += 1
            else:
                report.absent += 1
        if not pushes.ok_ids and not pushes.info and pushes.failed:
            report.definitely_failed += 1
            if rows:
                report.unexpected += 1
                report.note("unexpected", f"{cid}: every push refused, yet job {rows[0].id}")


def _events_by_job(events: Sequence[EventRow]) -> dict[str, list[EventRow]]:
    by_job: dict[str, list[EventRow]] = defaultdict(list)
    for event in events:
        if event.job_id:
            by_job[event.job_id].append(event)
    return by_job


def _result_of(row: JobRow) -> dict[str, Any] | None:
    if row.result is None:
        return None
    try:
        value = json.loads(row.result)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _check_completions(
    h: _History,
    by_cid: dict[str, list[JobRow]],
    events_by_job: dict[str, list[EventRow]],
    report: Report,
) -> None:
    recorded = bool(h.exec_fence)
    for rows in by_cid.values():
        for row in rows:
            events = events_by_job.get(row.id, [])
            actives = retries = terminal = 0
            leased = False
            for event in events:
                if event.type == "active":
                    actives += 1
                    if leased:
                        report.lease_overlaps += 1
                        report.note("lease_overlaps", f"{row.id}: claimed again, event {event.id}")
                    leased = True
                elif event.type in LEASE_ENDS:
                    leased = False
                if event.type == "stalled":
                    report.stalls += 1
                if event.type == "failed" and not event.payload.get("terminal"):
                    retries += 1
                if event.type == "completed" or (
                    event.type == "failed" and event.payload.get("terminal")
                ):
                    terminal += 1
            if terminal > 1:
                report.acked_twice += 1
                report.note("acked_twice", f"{row.id}: {terminal} terminal events")
            report.redeliveries += max(0, actives - 1 - retries)
            executions = {fence for fence, _ in h.executions.get(row.id, [])}
            report.duplicate_side_effects += max(0, len(executions) - 1 - retries)
            if row.live or row.state != "completed" or not recorded:
                continue
            result = _result_of(row)
            execution = str(result.get("exec")) if result else None
            origin = h.exec_fence.get(execution) if execution else None
            if origin is None or origin[1] != row.fence:
                report.stale_acks_accepted += 1
                report.note(
                    "stale_acks_accepted",
                    f"{row.id}: fence {row.fence}, result from "
                    + (f"fence {origin[1]}" if origin else f"no execution ({row.result})"),
                )
            for seen in h.acks_ok.get(row.id, []):
                if seen != execution:
                    report.acks_seen_ok_not_applied += 1


def _check_events(h: _History, events: Sequence[EventRow], report: Report, grace_s: float) -> None:
    for name, sub in h.subscribers.items():
        if sub.ready_t is None:
            continue
        start_ms = (sub.ready_t + grace_s) * 1000
        end_ms = float("inf")
        if sub.end_t is not None and sub.upto is None:
            end_ms = (sub.end_t - CLOSING_MARGIN_S) * 1000
        upto = sub.upto if sub.upto is not None else float("inf")
        expected = {
            e.id
            for e in events
            if e.queue == sub.queue
            and e.type not in SKIPPED_ON_THE_WIRE
            and start_ms <= e.ts_ms <= end_ms
            and e.id <= upto
        }
        missing = expected - set(sub.seqs)
        report.events_missing[name] = len(missing)
        if missing:
            report.note("events_missing", f"{name}: {sorted(missing)[:10]}")
        report.events_duplicated[name] = sum(n - 1 for n in sub.seqs.values() if n > 1)
    if h.delays:
        report.max_event_delay_s = max(0.0, max(h.delays))


def _check_dlq(
    h: _History,
    by_cid: dict[str, list[JobRow]],
    dlq: Sequence[DlqRow],
    report: Report,
    backoff_ms: float | None,
) -> None:
    entries = {entry.job_id: entry for entry in dlq}
    for cid, rows in by_cid.items():
        poison = h.pushes[cid].poison
        in_dlq = [entries[row.id] for row in rows if row.id in entries]
        report.dlq_expected += int(poison)
        report.dlq_found += len(in_dlq)
        if poison and not in_dlq:
            report.dlq_mismatch += 1
            report.note("dlq_mismatch", f"{cid}: poison job not dead-lettered")
        elif not poison and any(entry.reason != "stalled" for entry in in_dlq):
            report.dlq_mismatch += 1
            report.note("dlq_mismatch", f"{cid}: dead-lettered ({in_dlq[0].reason})")
        if backoff_ms is None or not poison:
            continue
        for entry in in_dlq:
            _check_backoff(cid, entry, backoff_ms, report)


def _check_backoff(cid: str, entry: DlqRow, backoff_ms: float, report: Report) -> None:
    """After each explicit failure that was retried, the next attempt started no
    sooner than ``backoff_ms * 2^(attempt-1)`` (database clock)."""
    log = list(zip(entry.attempts, entry.reasons, entry.started_ms, entry.failed_ms, strict=False))
    for (attempt, reason, _, failed), (_, _, started, _) in itertools.pairwise(log):
        if reason != "retry":
            continue  # a stall is requeued at once
        gap = started - failed
        least = backoff_ms * 2 ** (attempt - 1)
        if gap < least - BACKOFF_TOLERANCE_MS:
            report.backoff_early += 1
            report.note(
                "backoff_early", f"{cid}: attempt {attempt + 1} after {gap:.0f} ms < {least}"
            )
        elif gap > least + 2_000:
            report.backoff_late += 1


def _check_recovery(h: _History, events: Sequence[EventRow], report: Report) -> None:
    completions = sorted(e.ts_ms / 1000 for e in events if e.type == "completed")
    worst: float | None = None
    for t in h.fault_times:
        later = next((c for c in completions if c >= t), None)
        if later is not None:
            worst = max(worst or 0.0, later - t)
    report.max_recovery_s = worst


async def read_snapshot(dsn: str, namespace: str, queues: Sequence[str]) -> Snapshot:
    """Read the run's jobs, DLQ entries and events from the database."""
    import asyncpg

    from pgqueue.db.queries import Q

    conn = await asyncpg.connect(dsn)
    try:
        names = list(queues)
        live = await conn.fetch(Q.history_live_jobs.sql, namespace, names)
        finished = await conn.fetch(Q.history_finished_jobs.sql, namespace, names)
        dlq = await conn.fetch(Q.history_dlq_entries.sql, namespace, names)
        events = await conn.fetch(Q.history_events.sql, namespace, names)
    finally:
        await conn.close()
    jobs = [
        JobRow(r["id"], r["queue"], r["custom_id"], r["state"], r["fence"], True) for r in live
    ] + [
        JobRow(
            r["id"],
            r["queue"],
            r["custom_id"],
            r["state"],
            r["fence"],
            False,
            r["result"],
            r["failed_reason"],
        )
        for r in finished
    ]
    return Snapshot(
        jobs,
        [
            DlqRow(
                r["job_id"],
                r["reason"],
                tuple(r["attempt"]),
                tuple(r["reasons"]),
                tuple(r["started"]),
                tuple(r["failed"]),
            )
            for r in dlq
        ],
        [
            EventRow(r["id"], r["queue"], r["job_id"], r["type"], r["ts"], _payload(r["payload"]))
            for r in events
        ],
    )


def _payload(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


async def check_run(
    dsn: str,
    namespace: str,
    queues: Sequence[str],
    history: Iterable[str | Path],
    **options: Any,
) -> Report:
    """Read the history files and the database, then :func:`check`."""
    records = read_history(history)
    snapshot = await read_snapshot(dsn, namespace, queues)
    return check(records, snapshot, **options)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pgqueue.testing.checker")
    parser.add_argument("--dsn", required=True, help="the deployment's PostgreSQL URL")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--queue", action="append", required=True, help="repeatable")
    parser.add_argument("--history", action="append", required=True, help="files or dirs")
    parser.add_argument("--backoff-ms", type=float, default=None)
    parser.add_argument("--not-drained", action="store_true", help="live jobs are not stuck")
    parser.add_argument("--json", help="also write the full report here")
    args = parser.parse_args(argv)
    report = asyncio.run(
        check_run(
            args.dsn,
            args.namespace,
            args.queue,
            args.history,
            require_drained=not args.not_drained,
            backoff_ms=args.backoff_ms,
        )
    )
    print(report.headline())
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2))
    sys.exit(0 if report.valid else 1)


if __name__ == "__main__":
    main()
