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
from pgqueue.manager.flow_policy import flow_failure_mode, lets_dependents_go_on
from pgqueue.manager.models import AckItem, ItemOutcome, OutcomeReason
from pgqueue.manager.notifier import hint_payload
from pgqueue.manager.options import encode_json, removal_policy
from pgqueue.manager.policy import FailureReason, decide_failure
from pgqueue.manager.rows import ms
from pgqueue.manager.write_rows import FinishRow, RequeueRow, column_arrays
from pgqueue.vocabulary.completions import FailItem
from pgqueue.vocabulary.frozen import fast_maker

__all__ = [
    "STACK_INPUT_LIMIT",
    "DeadLetter",
    "FailItem",
    "FinishRow",
    "RequeueRow",
    "ack_batch",
    "complete_in",
    "completion_rows",
    "dead_letter_locked",
    "fail_batch",
    "parse_fence",
    "release_dependents",
    "requeue",
]

STACK_INPUT_LIMIT = 100
STACK_KEEP_DEFAULT = 10

# FinishRow(...) and ItemOutcome(...) per acked job, without the frozen __init__
_finish_row = fast_maker(FinishRow)
_outcome = fast_maker(ItemOutcome)


def parse_fence(token: str) -> int | None:
    """The fence a lock token encodes (``"<fence>:<uuid>"``), or None if malformed."""
    head, sep, _ = token.partition(":")
    if not sep or not head.isdigit() or len(head) > 18:
        return None
    return int(head)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A locked job to move to the DLQ (used by failures and the reaper)."""

    job_id: str
    queue: str
    fence: int
    expected_state: str
    reason: FailureReason
    error: str | None
    attempt_entry: dict[str, Any] | None
    attempts_inc: int
    stacktrace: list[str] | None = None

    @classmethod
    def of_row(
        cls,
        row: Row,
        expected_state: str,
        reason: FailureReason,
        error: str | None,
        attempt_entry: dict[str, Any] | None = None,
        attempts_inc: int = 0,
        stacktrace: list[str] | None = None,
    ) -> DeadLetter:
        """The dead-lettering of a locked row (its ``id``, ``queue`` and ``fence``)."""
        return cls(
            row["id"],
            row["queue"],
            row["fence"],
            expected_state,
            reason,
            error,
            attempt_entry,
            attempts_inc,
            stacktrace,
        )

    def finish_row(self) -> FinishRow:
        return FinishRow(
            self.job_id,
            None,
            self.fence,
            self.expected_state,
            "failed",
            failed_reason=self.reason,
            error=self.error,
            stacktrace=self.stacktrace,
            attempt_entry=self.attempt_entry,
            attempts_inc=self.attempts_inc,
        )


def _completion(job_id: str, token: str, result: str, remove: Any = None) -> FinishRow:
    """An active job, leased by ``token``, completed with the encoded ``result``;
    ``remove`` (the ACK's removeOnComplete) overrides the job's own option."""
    at_once, keep = (None, None) if remove is None else removal_policy(remove, "removeOnComplete")
    return _finish_row(
        job_id,
        token,
        parse_fence(token),
        "active",
        "completed",
        result,
        remove=at_once,
        keep=keep,
    )


async def _finish(
    ex: Executor,
    ctx: EngineContext,
    rows: Sequence[FinishRow],
    *,
    skip_with_dependents: bool,
    autocommit: bool = False,
) -> list[Row]:
    """Run ``job_finish_many`` for ``rows`` and hint its events: after the commit when
    ``ex`` is ``ctx.db`` (``autocommit``), else inside ``ex``'s transaction."""
    done = await ctx.scope(ex).fetch(
        Q.job_finish_many,
        broker_id=ctx.broker_id,
        session_id=ctx.session_id,
        skip_with_dependents=skip_with_dependents,
        **column_arrays(FinishRow, rows),
    )
    if done and done[0]["hint_first"] is not None:
        queues = {row["queue"] for row in done}
        first, last = done[0]["hint_first"], done[0]["hint_last"]
        if autocommit:
            # Jobs finished without releasing dependents make no job claimable: they
            # free a slot only of a limited or grouped queue, whose claims wait for
            # any event of it (Notifier.claim_waiter), not for work.
            work = () if skip_with_dependents else None
            ctx.notifier.hint(queues, first, last, work)
        else:
            payload = hint_payload(ctx.namespace, queues, first, last)
            await ex.execute(Q.event_hint_in_transaction, payload=payload)
    return done


async def _probe(ctx: EngineContext, ex: Executor, ids: list[str], tokens: list[str]) -> list[Row]:
    return await ctx.scope(ex).fetch(
        Q.job_outcome_probe,
        ids=ids,
        tokens=tokens,
        broker_id=ctx.broker_id,
        session_id=ctx.session_id,
    )


def _miss_reason(row: Row) -> OutcomeReason:
    """``already-finalized`` only for a token that was issued for the finished job;
    an unknown or forged token is a stale claim like any other (an error)."""
    if row["finished_state"] is not None and row["live_state"] is None:
        return "already-finalized" if row["token_issued"] else "lease-lost"
    if row["live_state"] is None:
        return "not-found"
    return "lease-lost"


def _result_text(item: AckItem, limit: int) -> str:
    """The stored text of an ack's result; a refusal names the item (``where``)."""
    if item.result is None:
        return "null"  # what encode_json gives it, without the call (most results)
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
    finish_rows = completion_rows(ctx, items)
    done = await _finish(ctx.db, ctx, finish_rows, skip_with_dependents=True, autocommit=True)
    outcomes: list[ItemOutcome | None] = [None] * len(items)
    for row in done:
        outcomes[row["ord"] - 1] = _outcome(row["id"], True)
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


def completion_rows(ctx: EngineContext, items: Sequence[AckItem]) -> list[FinishRow]:
    """The finish rows of ACK items (a result that cannot be stored is refused here)."""
    limit = ctx.config.max_payload_bytes
    return [
        _completion(item.job_id, item.token, _result_text(item, limit), item.remove_on_complete)
        for item in items
    ]


async def _settle_missed_acks(
    ctx: EngineContext,
    items: Sequence[AckItem],
    finish_rows: list[FinishRow],
    missed: list[int],
    outcomes: list[ItemOutcome | None],
) -> None:
    probe = await _probe(
        ctx, ctx.db, [items[i].job_id for i in missed], [items[i].token for i in missed]
    )
    if probe:
        ctx.session.confirm_live(probe[0]["session_live"])
    slow: list[int] = []
    for row in probe:
        index = missed[row["ord"] - 1]
        if row["lease_valid"] and row["has_dependents"]:
            slow.append(index)
        elif outcomes[index] is None:
            outcomes[index] = ItemOutcome(items[index].job_id, False, _miss_reason(row))
    if not slow:
        return
    slow_rows = [finish_rows[i] for i in slow]
    rows = await in_transaction(ctx.db, lambda tx: _complete_with_dependents_in(tx, ctx, slow_rows))
    for row in rows:
        outcomes[slow[row["ord"] - 1]] = ItemOutcome(row["id"], True)
    for index in slow:
        if outcomes[index] is None:
            outcomes[index] = ItemOutcome(items[index].job_id, False, "lease-lost")


async def _complete_with_dependents_in(
    tx: Executor, ctx: EngineContext, rows: Sequence[FinishRow]
) -> list[Row]:
    """Complete jobs and release their dependents, in one transaction."""
    done = await _finish(tx, ctx, rows, skip_with_dependents=False)
    await release_dependents(tx, ctx, [row["id"] for row in done if row["has_dependents"]])
    return done


async def release_dependents(ex: Executor, ctx: EngineContext, job_ids: Sequence[str]) -> None:
    """Jobs ``job_ids`` completed (or count as resolved): release what waited on them."""
    if job_ids:
        await ctx.scope(ex).fetch(Q.dependency_resolve, job_ids=list(job_ids))


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
    outcomes = await in_transaction(ctx.db, lambda tx: _record_failures_in(tx, ctx, items))
    missed = [i for i, outcome in enumerate(outcomes) if outcome is None]
    if missed:
        probe = await _probe(
            ctx, ctx.db, [items[i].job_id for i in missed], [items[i].token for i in missed]
        )
        if probe:
            ctx.session.confirm_live(probe[0]["session_live"])
        for row in probe:
            index = missed[row["ord"] - 1]
            outcomes[index] = ItemOutcome(items[index].job_id, False, _miss_reason(row))
    return [outcome for outcome in outcomes if outcome is not None]


async def _record_failures_in(
    tx: Executor, ctx: EngineContext, items: Sequence[FailItem]
) -> list[ItemOutcome | None]:
    """Lock the failed jobs whose lease holds, then retry or dead-letter each;
    None for an item whose job was not locked."""
    rows = await ctx.scope(tx).fetch(
        Q.job_lock_for_failure,
        ids=[item.job_id for item in items],
        tokens=[item.token for item in items],
        broker_id=ctx.broker_id,
        session_id=ctx.session_id,
    )
    outcomes: list[ItemOutcome | None] = [None] * len(items)
    retries: list[RequeueRow] = []
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
            reason="timeout" if row["timed_out"] else "explicit_fail",
        )
        reason = decision.reason or ("timeout" if row["timed_out"] else "explicit_fail")
        entry = _attempt_entry(row, reason if decision.dead_letter else "retry", item.error)
        if decision.dead_letter:
            dead.append(
                DeadLetter.of_row(
                    row,
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
            if row["timed_out"]:
                payload["reason"] = "timeout"
            retries.append(
                RequeueRow(
                    row["id"],
                    row["fence"],
                    "active",
                    "failed",
                    payload,
                    delay_ms=decision.delay_ms,
                    attempts_inc=1,
                    error=item.error,
                    stacktrace=stack,
                    attempt_entry=entry,
                )
            )
        outcomes[row["ord"] - 1] = ItemOutcome(row["id"], True)
    if retries:
        await requeue(tx, ctx, retries)
    if dead:
        await dead_letter_locked(tx, ctx, dead)
    return outcomes


async def requeue(ex: Executor, ctx: EngineContext, rows: Sequence[RequeueRow]) -> list[Row]:
    """Run ``job_requeue_many`` for ``rows``."""
    return await ctx.scope(ex).fetch(Q.job_requeue_many, **column_arrays(RequeueRow, rows))


async def dead_letter_locked(
    ex: Executor, ctx: EngineContext, jobs: Sequence[DeadLetter]
) -> list[Row]:
    """Move locked jobs to failed + DLQ, then apply their flows' failure policies."""
    rows = await _finish(ex, ctx, [job.finish_row() for job in jobs], skip_with_dependents=False)
    await _propagate_failures(ex, ctx, [row for row in rows if row["has_dependents"]])
    return rows


async def _propagate_failures(ex: Executor, ctx: EngineContext, rows: Sequence[Row]) -> None:
    """Dead-lettered jobs with dependents: apply each one's flow failure policy
    (:mod:`pgqueue.manager.flow_policy`).

    ``fail`` dead-letters the parent (reason ``dependency_failed``), whose own
    policy then applies in turn; ``continue`` releases the parent at once;
    ``continue``, ``ignore`` and ``remove`` count the job as resolved for what
    waits on it.  With no policy, dependents keep waiting (a redrive of the
    failed job can still complete it).  What the parent reads back
    (``GetIgnoredChildrenFailures``, ``GetFailedChildrenValues``) is the
    child's own failed row, told apart by the same policy
    (:func:`pgqueue.manager.reads.get_children_failures`).
    """
    go_on: list[str] = []
    continued: list[str] = []
    failing: dict[str, str] = {}
    for row in rows:
        parent = row["parent_id"]
        mode = flow_failure_mode(orjson.loads(row["opts"]), parent)
        if lets_dependents_go_on(mode):
            go_on.append(row["id"])
        if mode == "continue" and parent is not None:
            continued.append(parent)
        elif mode == "fail" and parent is not None:
            error = row["error"] or row["failed_reason"] or "unknown error"
            failing.setdefault(parent, f"Child job {row['id']} failed: {error}")
    if continued:
        await ctx.scope(ex).fetch(Q.flow_parents_continue, continued=continued)
    if go_on:
        await release_dependents(ex, ctx, go_on)
    if failing:
        locked = await ctx.scope(ex).fetch(Q.job_lock_waiting_parents, failing=list(failing))
        await dead_letter_locked(
            ex,
            ctx,
            [
                DeadLetter.of_row(
                    row,
                    row["state"],
                    "dependency_failed",
                    failing[row["id"]],
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
    limit = ctx.config.max_payload_bytes
    text = encode_json(result, label="result", limit=limit, what="Job result")
    row = _completion(job_id, token, text)
    done = await _finish(tx, ctx, [row], skip_with_dependents=False)
    if done:
        await release_dependents(tx, ctx, [r["id"] for r in done if r["has_dependents"]])
        return
    [probe] = await _probe(ctx, tx, [job_id], [token])
    ctx.session.confirm_live(probe["session_live"])
    reason = _miss_reason(probe)
    if reason == "already-finalized":
        raise AlreadyFinalized(job_id)
    if reason == "not-found":
        raise JobNotFound(job_id)
    raise LeaseLost(job_id)
