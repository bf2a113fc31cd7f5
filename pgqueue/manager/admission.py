"""Admission: push, bulk push and flows, each all-or-nothing in one transaction.

The plain batch is one multi-row statement (jobs + 'pushed' events + queue
registry + one NOTIFY hint); a single fresh job takes its one-row twin, which skips
the registry row when this manager registered the queue already
(:mod:`pgqueue.manager.registry`), and a fresh batch whose jobs differ only in id
and data (a bulk push of plain jobs) takes ``job_insert_uniform``: the ids and the
data as one value each, the events' payload built once and one row back; a batch of
:class:`~pgqueue.manager.options.PlainSpecs` is read from its columns (no spec
object per job).  Conflicts on a custom id or a live unique key
are resolved in that statement (``ON CONFLICT DO NOTHING``); the skipped rows
are then mapped to the live job that holds the id or key, which is what the
caller gets back (G4: one job per custom id, whatever broker the pushes hit).
A custom id whose job finished but is still retained (completed or failed,
not removed; or a removed child whose live parent still reads its result)
also returns that job, as BullMQ does; a new generation starts only once the
job was removed.

Batches with dependencies or parents (flows) take the graph path: dependency
targets outside the batch are locked and flagged first, so that a dependency
completing concurrently cannot miss the new edge.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from typing import Final, cast

import orjson

from pgqueue.db.errormap import NotifyQueueFull, TransientConflict
from pgqueue.db.executor import Executor, Row
from pgqueue.db.queries import Q
from pgqueue.db.retry import in_transaction
from pgqueue.errors import DependencyNotFound, DuplicateJob
from pgqueue.ids import uuid7, uuid7_many
from pgqueue.manager.context import EngineContext
from pgqueue.manager.cron.repeat import schedule_repeats_in
from pgqueue.manager.notifier import hint_payload
from pgqueue.manager.options import JobSpec, PlainSpecs, plain_spec
from pgqueue.manager.registry import remember_registered

__all__ = ["CHUNK_SIZE", "admit", "admit_in", "attach_child"]

log = logging.getLogger("pgqueue.admission")

CHUNK_SIZE = 5_000


@dataclass(slots=True)
class _Plan:
    """A batch with ids assigned and its dependency graph worked out."""

    specs: Sequence[JobSpec]
    ids: list[str]
    pending_deps: list[int]
    has_dependents: list[bool]
    edges: list[tuple[int, str]] = field(default_factory=list)  # (dependent index, target id)
    external_parents: dict[str, int] = field(default_factory=dict)

    @property
    def is_graph(self) -> bool:
        return bool(self.edges) or bool(self.external_parents)


def _plan(specs: Sequence[JobSpec]) -> _Plan:
    if type(specs) is PlainSpecs:  # no options: fresh ids, no graph
        count = len(specs)
        return _Plan(specs, uuid7_many(count), [0] * count, [False] * count)
    if len(specs) == 1:
        only = specs[0]
        if only.id is None and not only.depends_on and only.parent_id is None:
            return _Plan(specs, [uuid7()], [0], [False])  # a sequential push
    fresh = iter(uuid7_many(sum(1 for s in specs if s.id is None)))
    ids = [s.id if s.id is not None else next(fresh) for s in specs]
    plan = _Plan(specs, ids, [0] * len(specs), [False] * len(specs))
    if not any(s.depends_on or s.parent_id for s in specs):
        return plan
    index: dict[str, int] = {}
    for i, job_id in enumerate(ids):
        # A custom id given twice: the first is the one inserted (and flagged).
        index.setdefault(job_id, i)
    for i, spec in enumerate(specs):
        for target in dict.fromkeys(spec.depends_on):
            if target == ids[i]:
                raise DependencyNotFound(f"Job {target} cannot depend on itself", field="dependsOn")
            plan.edges.append((i, target))
        if spec.parent_id is not None:
            parent = index.get(spec.parent_id)
            if parent is None:
                plan.external_parents[spec.parent_id] = (
                    plan.external_parents.get(spec.parent_id, 0) + 1
                )
                plan.has_dependents[i] = True
            else:
                plan.edges.append((parent, ids[i]))
    plan.edges = list(dict.fromkeys(plan.edges))
    for dependent, target in plan.edges:
        plan.pending_deps[dependent] += 1
        if target in index:
            plan.has_dependents[index[target]] = True
    _check_acyclic(ids, plan.edges, index)
    return plan


def _check_acyclic(ids: list[str], edges: list[tuple[int, str]], index: dict[str, int]) -> None:
    graph: dict[int, list[int]] = {}
    for dependent, target in edges:
        if target in index:
            graph.setdefault(dependent, []).append(index[target])
    state: dict[int, int] = {}
    for start in graph:
        stack = [(start, iter(graph.get(start, ())))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                mark = state.get(child, 0)
                if mark == 1:
                    raise DependencyNotFound(
                        f"Dependency cycle through job {ids[child]}", field="dependsOn"
                    )
                if mark == 0:
                    state[child] = 1
                    stack.append((child, iter(graph.get(child, ()))))
                    break
            else:
                state[node] = 2
                stack.pop()


def _column(values: list[object]) -> tuple[list[object] | None, object]:
    """(array, scalar) for one column: a batch-wide value goes as the scalar only."""
    first = values[0]
    if values.count(first) == len(values) and (first is None or type(first) in _UNIFORM):
        return None, first
    return values, None


_UNIFORM = (str, int, float, bool)


# The parameters of ``job_insert_batch`` read from each spec: parameter -> JobSpec
# attribute.  One attrgetter reads a spec's row and zip turns the rows to columns
# (in C: faster than a comprehension per column, also for one job).
_SPEC_COLUMNS: Final[Mapping[str, str]] = {
    "queue": "queue",
    "name": "name",
    "data": "data_json",
    "priority": "priority",
    "lifo": "lifo",
    "delay_ms": "delay_ms",
    "max_attempts": "max_attempts",
    "backoff_type": "backoff.type",
    "backoff_ms": "backoff.delay_ms",
    "backoff_max_ms": "backoff.max_delay_ms",
    "timeout_ms": "timeout_ms",
    "ttl_ms": "ttl_ms",
    "stall_timeout_ms": "stall_timeout_ms",
    "remove_on_complete": "remove_on_complete",
    "remove_on_fail": "remove_on_fail",
    "custom_id": "custom_id",
    "unique_key": "unique_key",
    "unique_ttl_ms": "unique_ttl_ms",
    "group_id": "group_id",
    "parent_id": "parent_id",
    "parent_queue": "parent_queue",
    "opts": "opts_json",
    "created_at_ms": "created_at_ms",
}
_spec_row = attrgetter(*_SPEC_COLUMNS.values())


def _insert_args(ns: str, plan: _Plan, lo: int, hi: int) -> dict[str, object]:
    """The named parameters of ``job_insert_batch`` for specs ``lo:hi``: each
    column as an array (``queue``) or, when batch-wide, a scalar (``queue_batch``)."""
    specs = plan.specs
    if type(specs) is PlainSpecs and specs.uniform:
        return _plain_args(ns, specs, plan.ids, lo, hi)
    rows = map(_spec_row, specs[lo:hi])
    columns: dict[str, list[object]] = dict(
        zip(_SPEC_COLUMNS, map(list, zip(*rows, strict=True)), strict=True)
    )
    columns["pending_deps"] = list(plan.pending_deps[lo:hi])
    columns["has_dependents"] = list(plan.has_dependents[lo:hi])
    args: dict[str, object] = {"namespace": ns, "ids": plan.ids[lo:hi]}
    for name, values in columns.items():
        args[name], args[f"{name}_batch"] = _column(values)
    return args


def _plain_args(ns: str, specs: PlainSpecs, ids: list[str], lo: int, hi: int) -> dict[str, object]:
    """:func:`_insert_args` of jobs ``lo:hi`` of a batch without options and of one name,
    read from its columns: the data an array, every other column the scalar of their
    common spec (no spec object per job; the same parameters)."""
    common = _spec_row(plain_spec(specs.queue, specs.names[0], "null"))
    args: dict[str, object] = {"namespace": ns, "ids": ids[lo:hi]}
    for name, value in zip(_SPEC_COLUMNS, common, strict=True):
        args[name], args[f"{name}_batch"] = None, value
    args["data"], args["data_batch"] = specs.texts[lo:hi], None
    args["pending_deps"], args["pending_deps_batch"] = None, 0
    args["has_dependents"], args["has_dependents_batch"] = None, False
    return args


def _one_args(ns: str, plan: _Plan) -> dict[str, object]:
    """The named parameters of ``job_insert_one``: the plan's only job, column by column."""
    args: dict[str, object] = dict(zip(_SPEC_COLUMNS, _spec_row(plan.specs[0]), strict=True))
    args["namespace"] = ns
    args["id"] = plan.ids[0]
    args["pending_deps"] = plan.pending_deps[0]
    args["has_dependents"] = plan.has_dependents[0]
    return args


_COLUMN_NAMES: Final = (*_SPEC_COLUMNS, "pending_deps", "has_dependents")


def _uniform_args(args: dict[str, object], count: int) -> dict[str, object] | None:
    """The parameters of ``job_insert_uniform`` from ``job_insert_fresh``'s ``args``
    (``count`` jobs), or None when a column other than the data differs between jobs:
    the ids and the data each as one value (one text, one JSON array)."""
    if any(args[name] is not None for name in _COLUMN_NAMES if name != "data"):
        return None
    uniform = {name: args[name] for name in args if name.endswith("_batch")}
    data = args["data"]
    texts = cast("list[str]", data if data is not None else [args["data_batch"]] * count)
    ids = cast("list[str]", args["ids"])
    uniform["namespace"] = args["namespace"]
    uniform["ids"] = ",".join(ids)  # fresh UUIDv7s: no comma in any
    uniform["data"] = f"[{','.join(texts)}]"  # each a JSON text: one JSON array
    del uniform["data_batch"]
    return uniform


async def _insert_chunk(
    ex: Executor,
    ns: str,
    plan: _Plan,
    lo: int,
    hi: int,
    fresh: bool,
    ctx: EngineContext | None,
    *,
    inline: bool,
) -> tuple[set[str], set[str], int | None, int | None, bool]:
    """Insert the plan's jobs ``lo:hi``: (the ids inserted, their queues, the id range
    of their events, whether their NOTIFY went with them: ``inline``, for a lone
    single job only)."""
    if fresh and len(plan.ids) == 1:
        rows, inline = await _insert_one(ex, ns, plan, ctx, inline=inline)
    else:
        inline = False
        args = _insert_args(ns, plan, lo, hi)
        uniform = _uniform_args(args, len(plan.ids[lo:hi])) if fresh else None
        if uniform is not None:
            row = await ex.fetchrow(Q.job_insert_uniform, **uniform)
            assert row is not None  # an aggregate: one row
            ids = plan.ids[lo:hi]
            if row["jobs"] != len(ids):  # pragma: no cover - an INSERT without ON CONFLICT
                raise DuplicateJob("a generated job id collided; retry the push")
            queues = {str(args["queue_batch"])}
            return set(ids), queues, row["hint_first"], row["hint_last"], False
        query = Q.job_insert_fresh if fresh else Q.job_insert_batch
        rows = await ex.fetch(query, **args)
    if not rows:
        return set(), set(), None, None, False
    inserted = {row["id"] for row in rows}
    queues = {row["queue"] for row in rows}
    return inserted, queues, rows[0]["hint_first"], rows[0]["hint_last"], inline


async def _insert(ex: Executor, ns: str, plan: _Plan, ctx: EngineContext | None = None) -> set[str]:
    """Insert the plan's jobs; hint their events after the commit through ``ctx``'s
    notifier (``ex`` autocommits; the queues registered go to ``ctx.registered_queues``),
    or, without ``ctx``, inside ``ex``'s transaction (at its commit)."""
    if ctx is None:
        return await _insert_rows(ex, ns, plan, None, inline=False)
    inline = ctx.notifier.begin_write()
    try:
        return await _insert_rows(ex, ns, plan, ctx, inline=inline)
    finally:
        ctx.notifier.end_write()


async def _insert_rows(
    ex: Executor, ns: str, plan: _Plan, ctx: EngineContext | None, *, inline: bool
) -> set[str]:
    """:func:`_insert`'s statements; ``inline``: a single job's NOTIFY goes in its
    own statement (a lone write, :meth:`Notifier.begin_write`)."""
    inserted: set[str] = set()
    fresh = _all_fresh(plan)
    for lo in range(0, len(plan.ids), CHUNK_SIZE):
        ids, queues, first, last, notified = await _insert_chunk(
            ex, ns, plan, lo, lo + CHUNK_SIZE, fresh, ctx, inline=inline
        )
        if not ids:
            continue
        inserted |= ids
        if ctx is not None:
            remember_registered(ctx, queues)
            if notified:
                ctx.notifier.hinted(queues, jobs=len(ids))
            else:
                ctx.notifier.hint(queues, first, last, jobs=len(ids))
        elif first is not None and last is not None:
            payload = hint_payload(ns, queues, first, last)
            await ex.execute(Q.event_hint_in_transaction, payload=payload)
    return inserted


async def _insert_one(
    ex: Executor, ns: str, plan: _Plan, ctx: EngineContext | None, *, inline: bool
) -> tuple[list[Row], bool]:
    """The plan's one fresh job; returns its row and whether its NOTIFY went with it
    (``inline``, unless the notification queue refused it: then it is pushed again
    without, and hinted after its commit like any other)."""
    args = _one_args(ns, plan)
    known = ctx is not None and plan.specs[0].queue in ctx.registered_queues
    if inline and ctx is not None:
        query = Q.job_insert_one_known_notify if known else Q.job_insert_one_notify
        try:
            return await ex.fetch(query, **args, sender=ctx.notifier.instance), True
        except NotifyQueueFull as exc:  # rolled back at its commit: nothing written
            log.warning("%s; pushing without the hint in the transaction", exc)
    query = Q.job_insert_one_known if known else Q.job_insert_one
    return await ex.fetch(query, **args), False


def _all_fresh(plan: _Plan) -> bool:
    """True when no job of ``plan`` can conflict: every id a generated UUIDv7 and no
    unique key (the insert then needs no ``ON CONFLICT``: ``job_insert_fresh``)."""
    if type(plan.specs) is PlainSpecs:
        return True
    return all(s.id is None and s.unique_key is None for s in plan.specs)


def _needs_transaction(plan: _Plan) -> bool:
    if len(plan.ids) > CHUNK_SIZE or plan.is_graph:
        return True
    if type(plan.specs) is PlainSpecs:
        return False
    return any(s.custom_id is not None or s.unique_key is not None for s in plan.specs)


async def admit(
    ctx: EngineContext, specs: Sequence[JobSpec], now: datetime | None = None
) -> list[str]:
    """Admit ``specs`` atomically; return one id per spec, in order.

    A spec whose custom id or unique key names a live job, or whose custom id
    names a retained finished job, gets that job's id (and nothing is written
    for it but a ``duplicated`` event).  ``now``: the instant unique keys' TTLs
    are judged at (None: the database clock; tests move time with it).
    """
    if not specs:
        return []
    if type(specs) is not PlainSpecs and any(s.repeat is not None for s in specs):
        return await in_transaction(ctx.db, lambda tx: admit_in(ctx, tx, specs, now))
    plan = _plan(specs)
    ns = ctx.namespace
    if not _needs_transaction(plan):
        inserted = await _insert(ctx.db, ns, plan, ctx)
        if len(inserted) != len(plan.ids):  # pragma: no cover - fresh UUIDv7s never collide
            raise DuplicateJob("a generated job id collided; retry the push")
        return plan.ids
    return await in_transaction(ctx.db, lambda tx: _admit_in(tx, ns, plan, now))


async def admit_in(
    ctx: EngineContext, tx: Executor, specs: Sequence[JobSpec], now: datetime | None = None
) -> list[str]:
    """Admit ``specs`` on ``tx``, a transaction the caller owns (it commits them).

    A repeatable job (``repeat``) is admitted as the first run of its
    scheduler, written on ``tx`` too (:mod:`pgqueue.manager.cron.repeat`)."""
    if not specs:
        return []
    if any(s.repeat is not None for s in specs):
        specs = await schedule_repeats_in(ctx, tx, specs)
    return await _admit_in(tx, ctx.namespace, _plan(specs), now)


async def _admit_in(tx: Executor, ns: str, plan: _Plan, now: datetime | None = None) -> list[str]:
    specs = plan.specs
    custom_ids = [s.custom_id for s in specs if s.custom_id is not None]
    retained: set[str] = set()
    if custom_ids:
        rows = await tx.fetch(
            Q.job_retire_finished_generations, namespace=ns, custom_ids=custom_ids
        )
        retained = {row["id"] for row in rows}
    keyed = [i for i, s in enumerate(specs) if s.unique_key is not None]
    held: dict[int, str] = {}
    if keyed:
        await tx.execute(
            Q.job_unique_keys_release_expired,
            namespace=ns,
            queues=[specs[i].queue for i in keyed],
            unique_keys=[specs[i].unique_key for i in keyed],
            now=now,
        )
        held = await _finished_holders(tx, ns, plan, keyed, now)
        for i in keyed:
            if specs[i].dedup_mode == "replace" and i not in held:
                await _replace_owner(tx, ns, specs[i])
    excluded = retained | {plan.ids[i] for i in held}
    if plan.is_graph:
        await _resolve_external_targets(tx, ns, plan)
    inserted = await _insert(tx, ns, _without(plan, excluded) if excluded else plan)
    if custom_ids:
        await _check_no_finished_twin(tx, ns, [i for i in custom_ids if i in inserted])
    if keyed:
        await _check_no_finished_holder(
            tx, ns, plan, [i for i in keyed if plan.ids[i] in inserted], now
        )
    result = list(plan.ids)
    for i, holder in held.items():
        result[i] = holder
    skipped = [i for i, job_id in enumerate(plan.ids) if job_id not in inserted and i not in held]
    if skipped:
        await _resolve_skipped(tx, ns, plan, skipped, result, retained)
    if held:
        await _insert_duplicate_events(
            tx, ns, [(specs[i], holder, "unique_key") for i, holder in held.items()]
        )
    if plan.is_graph:
        await _write_edges(tx, ns, plan, inserted)
    return result


async def _finished_holders(
    tx: Executor, ns: str, plan: _Plan, keyed: list[int], now: datetime | None
) -> dict[int, str]:
    """The specs (index -> holder id) whose unique key a finished job still holds
    (a dedup TTL outlives its job).  An ``extend`` moves the holder's deadline;
    a ``replace`` takes the key from it (the spec is admitted, not in the map)."""
    specs = plan.specs
    rows = await _keys_held_finished(tx, ns, specs, keyed, now)
    held: dict[int, str] = {}
    released: list[str] = []
    for row in rows:
        i = keyed[row["ord"] - 1]
        spec = specs[i]
        if spec.dedup_mode == "replace":
            released.append(row["id"])
            continue
        if spec.dedup_mode == "extend":
            await tx.execute(
                Q.job_unique_key_finished_extend,
                namespace=ns,
                job_id=row["id"],
                unique_ttl_ms=spec.unique_ttl_ms,
            )
        held[i] = row["id"]
    if released:
        await tx.execute(Q.job_unique_key_finished_release, namespace=ns, released=released)
    return held


async def _keys_held_finished(
    tx: Executor,
    ns: str,
    specs: Sequence[JobSpec],
    indices: list[int],
    now: datetime | None,
) -> list[Row]:
    """The finished jobs holding the unique keys of ``specs[i]`` for ``i`` in ``indices``
    (``ord``: the 1-based place in ``indices``), judged at ``now`` (None: the
    database clock)."""
    return await tx.fetch(
        Q.job_unique_keys_held_finished,
        namespace=ns,
        queues=[specs[i].queue for i in indices],
        unique_keys=[specs[i].unique_key for i in indices],
        now=now,
    )


async def _check_no_finished_holder(
    tx: Executor, ns: str, plan: _Plan, inserted: list[int], now: datetime | None
) -> None:
    """A unique key just taken must not be held by a finished job: one is when
    the key's live owner finished (keeping its TTL) while our insert waited for
    its row.  Starting again sees it, and decides by it."""
    if not inserted:
        return
    if await _keys_held_finished(tx, ns, plan.specs, inserted, now):
        raise TransientConflict("the owner of this unique key finished meanwhile")


def _without(plan: _Plan, retained: set[str]) -> _Plan:
    """The part of ``plan`` to insert: not the jobs whose custom id is retained."""
    keep = [i for i, job_id in enumerate(plan.ids) if job_id not in retained]
    return _Plan(
        [plan.specs[i] for i in keep],
        [plan.ids[i] for i in keep],
        [plan.pending_deps[i] for i in keep],
        [plan.has_dependents[i] for i in keep],
    )


async def _check_no_finished_twin(tx: Executor, ns: str, inserted_custom_ids: list[str]) -> None:
    """A custom id just inserted must not also be finished (retained or not).

    It is when the previous generation's final transaction committed while our
    insert waited for its row: our snapshot did not see that finished row.
    Starting again sees it, and decides by it (retained: return that job).
    """
    if inserted_custom_ids and await tx.fetch(
        Q.job_finished_ids, namespace=ns, inserted_custom_ids=inserted_custom_ids
    ):
        raise TransientConflict("the job of this custom id finished meanwhile")


async def _replace_owner(tx: Executor, ns: str, spec: JobSpec) -> None:
    row = await tx.fetchrow(
        Q.job_unique_key_take_over, namespace=ns, queue=spec.queue, unique_key=spec.unique_key
    )
    if row is not None and row["state"] != "active" and row["has_dependents"]:
        raise DuplicateJob(
            f"Cannot replace job {row['id']}: other jobs depend on it",
            existing_id=row["id"],
        )


async def _resolve_external_targets(tx: Executor, ns: str, plan: _Plan) -> None:
    """Lock live dependency targets outside the batch; resolve or refuse the rest."""
    batch_ids = set(plan.ids)
    external = sorted({t for _, t in plan.edges if t not in batch_ids})
    parents = sorted(plan.external_parents)
    wanted = sorted(set(external) | set(parents))
    if not wanted:
        return
    live = {
        row["id"]: row["state"]
        for row in await tx.fetch(Q.job_flag_dependents, namespace=ns, ids=wanted)
    }
    missing_parents = [p for p in parents if p not in live]
    if missing_parents:
        raise DependencyNotFound(f"Parent job not found: {missing_parents[0]}", field="parentId")
    done = {
        row["id"]
        for row in await tx.fetch(
            Q.job_completed_ids, namespace=ns, ids=[t for t in external if t not in live]
        )
    }
    for target in external:
        if target not in live and target not in done:
            raise DependencyNotFound(f"Dependency job not found: {target}", field="dependsOn")
    if done:
        kept = []
        for dependent, target in plan.edges:
            if target in done:
                plan.pending_deps[dependent] -= 1
            else:
                kept.append((dependent, target))
        plan.edges = kept


async def _resolve_skipped(
    tx: Executor, ns: str, plan: _Plan, skipped: list[int], result: list[str], retained: set[str]
) -> None:
    specs = plan.specs
    rows = await tx.fetch(
        Q.job_find_live_owners,
        namespace=ns,
        ids=[plan.ids[i] for i in skipped],
        queues=[specs[i].queue for i in skipped],
        unique_keys=[specs[i].unique_key for i in skipped],
    )
    owners = {skipped[row["ord"] - 1]: (row["id"], row["by"]) for row in rows}
    events: list[tuple[JobSpec, str, str]] = []
    for i in skipped:
        spec = specs[i]
        owner = owners.get(i)
        if owner is None and plan.ids[i] in retained:
            owner = (plan.ids[i], "id")  # the finished job keeps its custom id
        if owner is None:
            # The holder finished between our insert and this read: try again.
            raise TransientConflict("the conflicting job finished meanwhile")
        owner_id, by = owner
        if by == "unique_key" and spec.dedup_mode == "extend":
            extended = await tx.fetchrow(
                Q.job_unique_key_extend,
                namespace=ns,
                queue=spec.queue,
                unique_key=spec.unique_key,
                unique_ttl_ms=spec.unique_ttl_ms,
            )
            if extended is None:
                raise DuplicateJob("Duplicate unique_key (extended TTL)")
        result[i] = owner_id
        events.append((spec, owner_id, by))
    await _insert_duplicate_events(tx, ns, events)


async def _insert_duplicate_events(
    tx: Executor, ns: str, events: Sequence[tuple[JobSpec, str, str]]
) -> None:
    """A ``duplicated`` event on the job each (spec, owner, by) was deduplicated
    against, and a ``debounced`` one too when the key came from ``debounceId``."""
    rows: list[tuple[str, str, str, str]] = []
    for spec, owner, by in events:
        rows.append((spec.queue, owner, "duplicated", orjson.dumps({"by": by}).decode()))
        if spec.debounced and by == "unique_key":
            payload = {"by": by, "debounceId": spec.unique_key}
            rows.append((spec.queue, owner, "debounced", orjson.dumps(payload).decode()))
    await tx.execute(
        Q.event_insert_many,
        namespace=ns,
        queues=[r[0] for r in rows],
        job_ids=[r[1] for r in rows],
        types=[r[2] for r in rows],
        payloads=[r[3] for r in rows],
    )


async def _write_edges(tx: Executor, ns: str, plan: _Plan, inserted: set[str]) -> None:
    edges = [(plan.ids[d], t) for d, t in plan.edges if plan.ids[d] in inserted]
    skipped_targets = sorted({t for _, t in edges if t in set(plan.ids) and t not in inserted})
    if skipped_targets:
        # A dependency inside the batch already existed: it is an outside target now.
        live = {
            row["id"]
            for row in await tx.fetch(Q.job_flag_dependents, namespace=ns, ids=skipped_targets)
        }
        done = [t for t in skipped_targets if t not in live]
        if done:
            completed = {
                row["id"] for row in await tx.fetch(Q.job_completed_ids, namespace=ns, ids=done)
            }
            resolved = [(d, t) for d, t in edges if t in completed]
            counts: dict[str, int] = {}
            for dependent, _ in resolved:
                counts[dependent] = counts.get(dependent, 0) - 1
            if counts:
                await tx.execute(
                    Q.job_add_pending_deps,
                    namespace=ns,
                    ids=list(counts),
                    counts=list(counts.values()),
                )
            edges = [(d, t) for d, t in edges if t not in completed]
    if edges:
        await tx.execute(
            Q.dependency_insert_many,
            namespace=ns,
            job_ids=[d for d, _ in edges],
            depends_on=[t for _, t in edges],
        )
    parents = {p: n for p, n in plan.external_parents.items()}
    if parents:
        children = [
            (plan.specs[i].parent_id, plan.ids[i])
            for i in range(len(plan.ids))
            if plan.ids[i] in inserted and plan.specs[i].parent_id in parents
        ]
        counts = {}
        for parent, _ in children:
            assert parent is not None
            counts[parent] = counts.get(parent, 0) + 1
        if counts:
            await tx.execute(
                Q.job_add_pending_deps, namespace=ns, ids=list(counts), counts=list(counts.values())
            )
            await tx.execute(
                Q.dependency_insert_many,
                namespace=ns,
                job_ids=[p for p, _ in children],
                depends_on=[c for _, c in children],
            )


async def attach_child(ctx: EngineContext, child_id: str, parent_id: str) -> None:
    """Make ``parent_id`` the parent of an existing job (bunqueue's UpdateParent).

    The parent must be live; a live child blocks it until the child completes.
    A child that is already gone (removed, never existed) is refused.
    """
    await in_transaction(
        ctx.db, lambda tx: _attach_child_in(tx, ctx.namespace, child_id, parent_id)
    )


async def _attach_child_in(tx: Executor, ns: str, child_id: str, parent_id: str) -> None:
    for _ in range(2):
        row = await tx.fetchrow(
            Q.job_attach_child, namespace=ns, child_id=child_id, parent_id=parent_id
        )
        assert row is not None
        if not row["parent_found"]:
            raise DependencyNotFound(f"Parent job not found: {parent_id}", field="parentId")
        if row["live"] or row["finished"]:
            return
        # Not found: gone, or it finished while we looked (then look again).
        if await tx.fetchval(Q.job_state_get, namespace=ns, job_id=child_id) is None:
            raise DependencyNotFound(f"Job not found: {child_id}", field="childId")
