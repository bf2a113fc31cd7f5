"""Completion: ack, fail and dead-letter, each a compare-and-set with its outbox event.

Acks take the fast path: one statement moves every acked job without
dependents to ``pgqueue_finished`` (G3: compare-and-set on id, state, fence,
token and an unexpired lease; a stale item is rejected alone).  A job that
has dependents (a flow child, a ``dependsOn`` target) is completed in a
transaction whose *second* statement releases the dependents: its fresh
snapshot sees every edge committed before the job row was locked, and an
admission that comes later finds the job finished.  That is why the fast
statement skips such jobs instead of resolving them itself.  When the second
transaction fails, the fast statement has committed already: its items are
answered applied and only the others get the error (``ItemOutcome.error``, G1).

Failures lock the jobs, let :mod:`pgqueue.manager.policy` decide retry or
dead-letter, and apply both in the same transaction (G5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from pgqueue.db.executor import Executor, Row
from pgqueue.db.queries import Q
from pgqueue.db.retry import in_transaction
from pgqueue.errors import (
    AlreadyFinalized,
    BrokerFenced,
    JobNotFound,
    LeaseLost,
    StorageError,
    ValidationError,
)
from pgqueue.manager.context import EngineContext
from pgqueue.manager.models import AckItem, ItemOutcome
from pgqueue.manager.options import encode_json
from pgqueue.manager.policy import decide_failure
from pgqueue.manager.rows import ms

__all__ = [
    "STACK_INPUT_LIMIT",
    "DeadLetter",
    "FailItem",
    "ack_batch",
    "complete_in",
    "dead_letter_locked",
    "fail_batch",
    "parse_fence",
    "release_dependents",
]

STACK_INPUT_LIMIT = 100
STACK_KEEP_DEFAULT = 10


def parse_fence(token: str) -> int | None:
    """The fence a lock token encodes (``"<fence>:<uuid>"``), or None if malformed."""
    head, sep, _ = token.partition(":")
    if not sep or not head.isdigit() or len(head) > 18:
        return None
    return int(head)


@dataclass(frozen=True, slots=True)
class FailItem:
    """One failed attempt reported by a worker."""

    job_id: str
    token: str
    error: str = ""
    stacktrace: Sequence[str] | None = None
    unrecoverable: bool = False


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A locked job to move to the DLQ (used by failures and the reaper)."""

    job_id: str
    queue: str
    fence: int
    expected_state: str
    reason: str
    error: str | None
    attempt_entry: dict[str, Any] | None
    attempts_inc: int
    stacktrace: list[str] | None = None


def _fenced(ctx: EngineContext) -> BrokerFenced:
    ctx.session.fenced.set()
    return BrokerFenced(f'broker "{ctx.broker_id}" is fenced: its session was taken over')


async def _finish(
    ex: Executor,
    ctx: EngineContext,
    rows: Sequence[tuple[Any, ...]],
    *,
    skip_with_dependents: bool,
) -> list[Row]:
    """Run ``job_finish_many`` for tuples (id, token, fence, expected_state,
    outcome, result, failed_reason, error, stacktrace, attempt_entry,
    attempts_inc, remove)."""
    columns: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) if rows else [()] * 12
    return await ex.fetch(
        Q.job_finish_many,
        ctx.namespace,
        list(columns[0]),
        list(columns[1]),
        list(columns[2]),
        list(columns[3]),
        list(columns[4]),
        list(columns[5]),
        list(columns[6]),
        list(columns[7]),
        list(columns[8]),
        list(columns[9]),
        list(columns[10]),
        ctx.broker_id,
        ctx.session_id,
        list(columns[11]),
        skip_with_dependents,
    )


async def _probe(ctx: EngineContext, ex: Executor, ids: list[str], tokens: list[str]) -> list[Row]:
    return await ex.fetch(
        Q.job_outcome_probe, ctx.namespace, ids, tokens, ctx.broker_id, ctx.session_id
    )


def _miss_reason(row: Row) -> str:
    """``already-finalized`` only for a token that was issued for the finished job;
    an unknown or forged token is a stale claim like any other (an error)."""
    if row["finished_state"] is not None and row["live_state"] is None:
        return "already-finalized" if row["token_issued"] else "lease-lost"
    if row["live_state"] is None:
        return "not-found"
    return "lease-lost"


def _result_text(item: AckItem, limit: int) -> str:
    """The stored text of an ack's result; a refusal names the item (``where``)."""
    try:
        return encode_json(item.result, label="result", limit=limit, what="Job result")
    except ValidationError as exc:
        if item.where is None:
            raise
        raise ValidationError(f"{item.where}: {exc.message}", field=item.where) from exc


async def ack_batch(ctx: EngineContext, items: Sequence[AckItem]) -> list[ItemOutcome]:
    """Complete jobs; one outcome per item, in order."""
    if not items:
        return []
    ctx.session.check()
    limit = ctx.config.max_payload_bytes
    finish_rows = [
        (
            item.job_id,
            item.token,
            parse_fence(item.token),
            "active",
            "completed",
            _result_text(item, limit),
            None,
            None,
            None,
            None,
            0,
            item.remove_on_complete,
        )
        for item in items
    ]
    done = await _finish(ctx.db, ctx, finish_rows, skip_with_dependents=True)
    outcomes: list[ItemOutcome | None] = [None] * len(items)
    for row in done:
        outcomes[row["ord"] - 1] = ItemOutcome(row["id"], True)
    missed = [i for i, outcome in enumerate(outcomes) if outcome is None]
    if missed:
        try:
            await _settle_missed_acks(ctx, items, finish_rows, missed, outcomes)
        except (StorageError, BrokerFenced, ValidationError) as exc:
            if all(outcome is None for outcome in outcomes):
                raise
            # The fast statement committed (G1): its items keep their answer, and
            # only the undecided ones get the error (indeterminate if it was).
            for i in missed:
                if outcomes[i] is None:
                    outcomes[i] = ItemOutcome(items[i].job_id, False, error=exc)
    return [outcome for outcome in outcomes if outcome is not None]


async def _settle_missed_acks(
    ctx: EngineContext,
    items: Sequence[AckItem],
    finish_rows: list[tuple[Any, ...]],
    missed: list[int],
    outcomes: list[ItemOutcome | None],
) -> None:
    probe = await _probe(
        ctx, ctx.db, [items[i].job_id for i in missed], [items[i].token for i in missed]
    )
    if probe and not probe[0]["session_live"]:
        raise _fenced(ctx)
    slow: list[int] = []
    for row in probe:
        index = missed[row["ord"] - 1]
        if row["lease_valid"] and row["has_dependents"]:
            slow.append(index)
        elif outcomes[index] is None:
            outcomes[index] = ItemOutcome(items[index].job_id, False, _miss_reason(row))
    if not slow:
        return

    async def body(tx: Executor) -> list[Row]:
        rows = await _finish(tx, ctx, [finish_rows[i] for i in slow], skip_with_dependents=False)
        await release_dependents(tx, ctx, [row["id"] for row in rows if row["has_dependents"]])
        return rows

    rows = await in_transaction(ctx.db, body)
    for row in rows:
        outcomes[slow[row["ord"] - 1]] = ItemOutcome(row["id"], True)
    for index in slow:
        if outcomes[index] is None:
            outcomes[index] = ItemOutcome(items[index].job_id, False, "lease-lost")


async def release_dependents(ex: Executor, ctx: EngineContext, job_ids: Sequence[str]) -> None:
    """Jobs ``job_ids`` completed (or count as resolved): release what waited on them."""
    if job_ids:
        await ex.fetch(Q.dependency_resolve, ctx.namespace, list(job_ids))


def _stack(stacktrace: Sequence[str] | None, keep: int) -> list[str] | None:
    if not stacktrace:
        return None
    # Right-strip only: a traceback's indentation tells frames from code lines.  Keep the
    # last lines: the innermost frames and the error itself end a Python traceback.
    lines = [line.rstrip() for line in list(stacktrace)[-STACK_INPUT_LIMIT:]]
    kept = [line for line in lines if line.strip()]
    return (kept[-keep:] if keep > 0 else []) or None


def _attempt_entry(row: Row, reason: str, error: str | None) -> dict[str, Any]:
    started = ms(row["started_at"])
    now = ms(row["now"])
    return {
        "attempt": row["attempts"] + 1,
        "startedAt": started,
        "failedAt": now,
        "reason": reason,
        "error": error,
        "duration": None if started is None or now is None else round(now - started, 3),
    }


async def fail_batch(ctx: EngineContext, items: Sequence[FailItem]) -> list[ItemOutcome]:
    """Record failed attempts: retry with backoff, or dead-letter; one outcome per item."""
    if not items:
        return []
    ctx.session.check()

    async def body(tx: Executor) -> list[ItemOutcome | None]:
        rows = await tx.fetch(
            Q.job_lock_for_failure,
            ctx.namespace,
            [item.job_id for item in items],
            [item.token for item in items],
            ctx.broker_id,
            ctx.session_id,
        )
        outcomes: list[ItemOutcome | None] = [None] * len(items)
        retries: list[tuple[Any, ...]] = []
        dead: list[DeadLetter] = []
        for row in rows:
            item = items[row["ord"] - 1]
            opts = orjson.loads(row["opts"])
            keep = int(opts.get("stack_trace_limit", STACK_KEEP_DEFAULT))
            stack = _stack(item.stacktrace, keep)
            decision = decide_failure(
                attempts_before=row["attempts"],
                max_attempts=row["max_attempts"],
                backoff_type=row["backoff_type"],
                backoff_ms=row["backoff_ms"],
                backoff_max_ms=row["backoff_max_ms"],
                unrecoverable=item.unrecoverable,
            )
            reason = decision.reason or "explicit_fail"
            entry = _attempt_entry(row, reason if decision.dead_letter else "retry", item.error)
            if decision.dead_letter:
                dead.append(
                    DeadLetter(
                        row["id"],
                        row["queue"],
                        row["fence"],
                        "active",
                        reason,
                        item.error,
                        entry,
                        1,
                        stack,
                    )
                )
            else:
                payload = {
                    "failedReason": item.error,
                    "attemptsMade": row["attempts"] + 1,
                    "terminal": False,
                    "delay": decision.delay_ms,
                }
                retries.append(
                    (
                        row["id"],
                        row["fence"],
                        "active",
                        decision.delay_ms,
                        1,
                        0,
                        item.error,
                        orjson.dumps(stack).decode() if stack else None,
                        orjson.dumps(entry).decode(),
                        "failed",
                        orjson.dumps(payload).decode(),
                        None,
                    )
                )
            outcomes[row["ord"] - 1] = ItemOutcome(row["id"], True)
        if retries:
            await requeue(tx, ctx, retries)
        if dead:
            await dead_letter_locked(tx, ctx, dead)
        return outcomes

    outcomes = await in_transaction(ctx.db, body)
    missed = [i for i, outcome in enumerate(outcomes) if outcome is None]
    if missed:
        probe = await _probe(
            ctx, ctx.db, [items[i].job_id for i in missed], [items[i].token for i in missed]
        )
        if probe and not probe[0]["session_live"]:
            raise _fenced(ctx)
        for row in probe:
            index = missed[row["ord"] - 1]
            outcomes[index] = ItemOutcome(items[index].job_id, False, _miss_reason(row))
    return [outcome for outcome in outcomes if outcome is not None]


async def requeue(ex: Executor, ctx: EngineContext, rows: Sequence[tuple[Any, ...]]) -> list[Row]:
    """Run ``job_requeue_many`` for tuples (id, fence, expected_state, delay_ms,
    attempts_inc, stall_inc, error, stacktrace, attempt_entry, event_type,
    event_payload, token)."""
    columns = list(zip(*rows, strict=True))
    return await ex.fetch(Q.job_requeue_many, ctx.namespace, *[list(c) for c in columns])


async def dead_letter_locked(
    ex: Executor, ctx: EngineContext, jobs: Sequence[DeadLetter]
) -> list[Row]:
    """Move locked jobs to failed + DLQ, then apply their flows' failure policies."""
    rows = await _finish(
        ex,
        ctx,
        [
            (
                job.job_id,
                None,
                job.fence,
                job.expected_state,
                "failed",
                None,
                job.reason,
                job.error,
                orjson.dumps(job.stacktrace).decode() if job.stacktrace else None,
                orjson.dumps(job.attempt_entry).decode() if job.attempt_entry else None,
                job.attempts_inc,
                None,
            )
            for job in jobs
        ],
        skip_with_dependents=False,
    )
    await _propagate_failures(ex, ctx, [row for row in rows if row["has_dependents"]])
    return rows


async def _propagate_failures(ex: Executor, ctx: EngineContext, rows: Sequence[Row]) -> None:
    """A dead-lettered job with dependents: fail the parent, or let dependents go on.

    ``fail_parent_on_failure`` dead-letters the parent (reason
    ``dependency_failed``); ``ignore_dependency_on_failure``,
    ``remove_dependency_on_failure`` and ``continue_parent_on_failure`` count
    the dependency as resolved.  Otherwise dependents keep waiting (a redrive
    of the failed job can still complete it).
    """
    resolved: list[str] = []
    parents: list[str] = []
    for row in rows:
        opts = orjson.loads(row["opts"])
        if opts.get("fail_parent_on_failure") and row["parent_id"]:
            parents.append(row["parent_id"])
        elif (
            opts.get("ignore_dependency_on_failure")
            or opts.get("remove_dependency_on_failure")
            or opts.get("continue_parent_on_failure")
        ):
            resolved.append(row["id"])
    if resolved:
        await release_dependents(ex, ctx, resolved)
    if parents:
        locked = await ex.fetch(Q.job_lock_waiting_parents, ctx.namespace, parents)
        await dead_letter_locked(
            ex,
            ctx,
            [
                DeadLetter(
                    row["id"],
                    row["queue"],
                    row["fence"],
                    row["state"],
                    "dependency_failed",
                    "a child job failed",
                    None,
                    0,
                )
                for row in locked
            ],
        )


async def complete_in(
    ctx: EngineContext, tx: Executor, job_id: str, token: str, result: Any
) -> None:
    """Complete a job on ``tx``, a transaction the caller owns: the completion
    commits together with the caller's own writes, or not at all."""
    ctx.session.check()
    row = (
        job_id,
        token,
        parse_fence(token),
        "active",
        "completed",
        encode_json(result, label="result", limit=ctx.config.max_payload_bytes, what="Job result"),
        None,
        None,
        None,
        None,
        0,
        None,
    )
    done = await _finish(tx, ctx, [row], skip_with_dependents=False)
    if done:
        await release_dependents(tx, ctx, [r["id"] for r in done if r["has_dependents"]])
        return
    [probe] = await _probe(ctx, tx, [job_id], [token])
    if not probe["session_live"]:
        raise _fenced(ctx)
    reason = _miss_reason(probe)
    if reason == "already-finalized":
        raise AlreadyFinalized(job_id)
    if reason == "not-found":
        raise JobNotFound(job_id)
    raise LeaseLost(job_id)
