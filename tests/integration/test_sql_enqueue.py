"""``pgqueue.enqueue`` admits exactly as the engine does: every admission case runs
through both paths (the engine's ``admit`` and the SQL function), each in a
namespace of its own after the same setup, and the resulting rows, events,
dependency edges and NOTIFY hints are compared; a refused job gets the same
message on both and writes nothing.  Also: the SQL function in a rolled-back
transaction leaves nothing, and concurrent calls with one custom id make one job.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import pytest

from pgqueue import jsontext
from pgqueue.errors import DuplicateJob, ValidationError
from pgqueue.manager.models import AckItem
from pgqueue.manager.notifier import PRESENCE_WORDS
from pgqueue.manager.options import build_job_spec
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing.waiting import eventually
from tests.conftest import start_manager
from tests.helpers import sql, sql_value

Setup = Callable[[PostgresQueueManager], Awaitable[dict[str, str]]]


async def push(m: PostgresQueueManager, name: str, **opts: Any) -> str:
    spec = build_job_spec("q", name, {"setup": name}, opts, max_payload_bytes=1 << 20)
    [job_id] = await m.push_specs([spec])
    return job_id


async def complete(m: PostgresQueueManager, job_id: str) -> None:
    [claim] = await m.pull_batch("q", 1, owner="setup", lock_ttl_ms=30_000, timeout_ms=0)
    assert claim.job.id == job_id
    [outcome] = await m.ack_batch([AckItem(job_id, claim.token, {"done": True})])
    assert outcome.applied


def claimed(name: str, **opts: Any) -> Setup:
    async def setup(m: PostgresQueueManager) -> dict[str, str]:
        job_id = await push(m, name, **opts)
        [claim] = await m.pull_batch("q", 1, owner="setup", lock_ttl_ms=30_000, timeout_ms=0)
        assert claim.job.id == job_id
        return {name: job_id}

    return setup


def awaited(name: str, **opts: Any) -> Setup:
    """A job another job depends on."""

    async def setup(m: PostgresQueueManager) -> dict[str, str]:
        job_id = await push(m, name, **opts)
        return {name: job_id, "dependent": await push(m, "dependent", depends_on=[job_id])}

    return setup


async def nothing(m: PostgresQueueManager) -> dict[str, str]:
    return {}


def pushed(name: str, **opts: Any) -> Setup:
    async def setup(m: PostgresQueueManager) -> dict[str, str]:
        return {name: await push(m, name, **opts)}

    return setup


def finished(name: str, **opts: Any) -> Setup:
    async def setup(m: PostgresQueueManager) -> dict[str, str]:
        job_id = await push(m, name, **opts)
        await complete(m, job_id)
        return {name: job_id}

    return setup


@dataclass
class Case:
    id: str
    opts: dict[str, Any] = field(default_factory=dict)
    setup: Setup = nothing
    queue: str = "q"
    name: str = "job"
    data: Any = field(default_factory=lambda: {"b": 1, "a": [1, 2.5], "n": 2**70, "t": "é"})
    refs: tuple[str, ...] = ()  # setup names whose ids the opts use as {name}


CASES = [
    Case("plain"),
    Case("null-data", data=None),
    Case("delay", {"delay": 120_000}),
    Case("priority", {"priority": 7}),
    Case("lifo", {"lifo": True}),
    Case("lifo-priority", {"lifo": True, "priority": 2}),
    Case(
        "retry-and-limits",
        {
            "attempts": 5,
            "backoff": {"type": "fixed", "delay": 200},
            "timeout": 30_000,
            "ttl": 600_000,
            "stall_timeout": 5_000,
            "remove_on_complete": True,
            "remove_on_fail": False,
            "tags": ["a", "b"],
            "fail_parent_on_failure": True,
            "keep_logs": 5,
        },
    ),
    Case("backoff-number", {"backoff": 500, "max_attempts": 2}),
    Case("group", {"group_id": "g1", "priority": 3}),
    Case("timestamp", {"timestamp": 1_700_000_000_000}),
    Case("custom-id", {"job_id": "c1"}),
    Case("custom-id-live", {"job_id": "c1"}, setup=pushed("c1", job_id="c1")),
    Case("custom-id-retained", {"job_id": "c1"}, setup=finished("c1", job_id="c1")),
    Case(
        "custom-id-removed-generation",
        {"job_id": "c1"},
        setup=finished("c1", job_id="c1", remove_on_complete=True),
    ),
    Case("unique-key", {"unique_key": "k"}),
    Case("unique-key-live", {"unique_key": "k"}, setup=pushed("k", unique_key="k")),
    Case(
        "unique-key-ttl-finished-holder",
        {"unique_key": "k"},
        setup=finished("k", unique_key="k", dedup={"ttl": 600_000}),
    ),
    Case(
        "unique-key-extend-live",
        {"unique_key": "k", "dedup": {"ttl": 1_200_000, "extend": True}},
        setup=pushed("k", unique_key="k", dedup={"ttl": 600_000}),
    ),
    Case(
        "unique-key-extend-finished",
        {"unique_key": "k", "dedup": {"ttl": 1_200_000, "extend": True}},
        setup=finished("k", unique_key="k", dedup={"ttl": 600_000}),
    ),
    Case(
        "replace-pending-owner",
        {"unique_key": "k", "dedup": {"replace": True}},
        setup=pushed("k", unique_key="k"),
    ),
    Case(
        "replace-active-owner",
        {"unique_key": "k", "dedup": {"replace": True, "ttl": 60_000}},
        setup=claimed("k", unique_key="k"),
    ),
    Case(
        "replace-finished-holder",
        {"unique_key": "k", "dedup": {"replace": True}},
        setup=finished("k", unique_key="k", dedup={"ttl": 600_000}),
    ),
    Case(
        "replace-owner-with-dependents",
        {"unique_key": "k", "dedup": {"replace": True}},
        setup=awaited("k", unique_key="k"),
    ),
    Case("deduplication", {"deduplication": {"id": "k", "ttl": 600_000}}),
    Case(
        "deduplication-live",
        {"deduplication": {"id": "k", "extend": True, "ttl": 1_200_000}},
        setup=pushed("k", unique_key="k", dedup={"ttl": 600_000}),
    ),
    Case("debounce", {"debounce_id": "d", "debounce_ttl": 600_000}),
    Case(
        "debounce-live",
        {"debounce_id": "d", "debounce_ttl": 600_000},
        setup=pushed("d", debounce_id="d", debounce_ttl=600_000),
    ),
    Case("keep-count", {"remove_on_complete": 5, "remove_on_fail": {"age": 60, "count": 3}}),
    Case("keep-none", {"remove_on_complete": 0, "remove_on_fail": {"count": 0}}),
    Case("keep-age", {"remove_on_fail": {"age": 3600}}),
    Case("depends-on-live", {"depends_on": ["{a}"]}, setup=pushed("a"), refs=("a",)),
    Case("depends-on-completed", {"depends_on": ["{a}"]}, setup=finished("a"), refs=("a",)),
    Case("parent", {"parent_id": "{p}", "parent_queue": "q"}, setup=pushed("p"), refs=("p",)),
    # refused: the same message, nothing written
    Case("bad-priority", {"priority": 2_000_000}),
    Case("bad-priority-type", {"priority": "high"}),
    Case("bad-priority-fraction", {"priority": 1.5}),
    Case("bad-group-priority", {"group_id": "g", "priority": -1}),
    Case("bad-delay", {"delay": -1}),
    Case("bad-attempts", {"attempts": 0}),
    Case("bad-lifo", {"lifo": "yes"}),
    Case("unknown-option", {"atempts": 3, "colour": "red"}),
    Case("bad-queue", queue="a b"),
    Case("bad-name", name=""),
    Case("bad-job-id", {"job_id": ""}),
    Case("bad-backoff-type", {"backoff": {"type": "linear"}}),
    Case("bad-dedup-extend", {"unique_key": "k", "dedup": {"extend": True}}),
    Case("bad-dedup-ttl", {"unique_key": "k", "dedup": {"ttl": 0}}),
    Case("bad-depends-on", {"depends_on": "x"}),
    Case("missing-dependency", {"depends_on": ["nope"]}),
    Case("self-dependency", {"job_id": "me", "depends_on": ["me"]}),
    Case("bad-dedup-key", {"unique_key": "k", "dedup": {"ttl": 5, "colour": 1}}),
    Case("bad-deduplication-both", {"unique_key": "k", "deduplication": {"id": "k"}}),
    Case("bad-deduplication-id", {"deduplication": {"ttl": 5}}),
    Case("bad-deduplication-extend", {"deduplication": {"id": "k", "extend": True}}),
    Case("bad-debounce-ttl", {"debounce_id": "d", "debounce_ttl": 0}),
    Case("bad-keep", {"remove_on_complete": "yes"}),
    Case("bad-keep-count", {"remove_on_complete": -1}),
    Case("bad-keep-age", {"remove_on_fail": {"age": 1.5}}),
    Case("bad-keep-key", {"remove_on_fail": {"days": 1}}),
    Case("missing-parent", {"parent_id": "nope", "parent_queue": "q"}),
]


class Hints:
    """A listener of the hints that answers a notifier's hello with here, as every
    notifier does: a manager that heard no other listener keeps its hints in-process."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.seen: asyncio.Queue[str] = asyncio.Queue()
        self.conn = conn
        self.replies: set[asyncio.Task[object]] = set()

    async def here(self, namespace: str) -> None:
        note = json.dumps({"ns": namespace, "here": "test-listener"})
        await self.conn.execute("SELECT pg_notify('pgqueue_events', $1)", note)

    def on(self, _c: object, _pid: int, _channel: str, payload: str) -> None:
        if payload.startswith("{"):
            note = json.loads(payload)
            if "hello" in note:
                task = asyncio.get_running_loop().create_task(self.here(note["ns"]))
                self.replies.add(task)
                task.add_done_callback(self.replies.discard)
                return
            if any(word in note for word in PRESENCE_WORDS):
                return
        self.seen.put_nowait(payload)

    async def drain(self, dsn: str, namespace: str) -> list[list[str] | None]:
        """The queue lists of the hints of ``namespace`` sent before now."""
        marker = f"marker-{uuid.uuid4().hex}"
        await sql(dsn, "SELECT pg_notify('pgqueue_events', $1)", marker)
        got = []
        async with asyncio.timeout(10):
            while (payload := await self.seen.get()) != marker:
                if payload.startswith("{"):
                    hint = json.loads(payload)
                    if hint["ns"] == namespace:
                        got.append(hint["q"])
        return got


@pytest.fixture
async def hints(db_dsn: str) -> AsyncIterator[Hints]:
    conn = await asyncpg.connect(db_dsn)
    h = Hints(conn)
    await conn.add_listener("pgqueue_events", h.on)
    yield h
    if h.replies:
        await asyncio.wait(set(h.replies))
    await conn.close()


UUID7 = r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def minutes(column: str) -> str:
    """The instant ``column`` (absent from some tables) in whole minutes from now."""
    instant = f"(to_jsonb(j) ->> '{column}')::timestamptz"
    return f"round(extract(epoch FROM {instant} - now()) / 60) AS {column}"


VOLATILE = [
    "namespace",
    "run_at",
    "created_at",
    "expires_at",
    "unique_expires_at",
    "lifo_seq",
    "sort_key",
    "token_salt",
    "finished_at",
    "lease_token",
    "lease_session",
    "lease_broker",
    "lease_until",
    "started_at",
    "last_heartbeat_at",
]


async def snapshot(dsn: str, ns: str, ids: dict[str, str]) -> dict[str, Any]:
    """What the namespace holds, with ids named and instants in minutes from now."""
    state: dict[str, Any] = {}
    for table in ("pgqueue_jobs", "pgqueue_finished"):
        rows = await sql(
            dsn,
            f"""SELECT (to_jsonb(j) - $2::text[])::text AS row, j.data::text AS data_text,
                       {minutes("run_at")},
                       {minutes("expires_at")},
                       {minutes("unique_expires_at")},
                       CASE WHEN j.created_at < now() - interval '1 day'
                            THEN extract(epoch FROM j.created_at) END AS created_at,
                       to_jsonb(j) ->> 'lifo_seq' IS NOT NULL AS lifo_seq
                FROM {table} j WHERE j.namespace = $1 ORDER BY j.name, j.id""",
            ns,
            [c for c in VOLATILE if table == "pgqueue_jobs" or c != "lifo_seq"],
        )
        state[table] = [
            {**json.loads(r["row"]), **{k: v for k, v in r.items() if k != "row"}} for r in rows
        ]
    events = await sql(
        dsn,
        "SELECT queue, job_id, type, payload::text AS payload FROM pgqueue_events "
        "WHERE namespace = $1 ORDER BY id",
        ns,
    )
    state["events"] = [dict(e) for e in events]
    edges = await sql(
        dsn,
        "SELECT job_id, depends_on FROM pgqueue_dependencies WHERE namespace = $1 "
        "ORDER BY job_id, depends_on",
        ns,
    )
    state["edges"] = [dict(e) for e in edges]
    text = json.dumps(state, sort_keys=True, default=str)
    text = re.sub(r'\\"duration\\" : [0-9]+', "<duration>", text)  # of the setup's ack
    for label, job_id in sorted(ids.items(), key=lambda kv: -len(kv[1])):
        text = text.replace(job_id, f"<{label}>")
    text = re.sub(UUID7, "<?>", text)
    result: dict[str, Any] = json.loads(text)
    return result


def substitute(opts: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    text = json.dumps(opts)
    for label, job_id in ids.items():
        text = text.replace("{" + label + "}", job_id)
    loaded: dict[str, Any] = json.loads(text)
    return loaded


async def by_engine(m: PostgresQueueManager, case: Case, opts: dict[str, Any]) -> str:
    spec = build_job_spec(case.queue, case.name, case.data, opts, max_payload_bytes=10 << 20)
    [job_id] = await m.push_specs([spec])
    return job_id


async def by_sql(dsn: str, ns: str, case: Case, opts: dict[str, Any]) -> str:
    data = jsontext.dumps(case.data)
    result: str = await sql_value(
        dsn,
        "SELECT pgqueue.enqueue($1, $2, $3, $4::json, $5::jsonb)",
        ns,
        case.queue,
        case.name,
        data,
        json.dumps(opts),
    )
    return result


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_the_sql_function_admits_as_the_engine_does(
    case: Case, db_dsn: str, hints: Hints
) -> None:
    outcomes: dict[str, tuple[str, Any]] = {}
    for path in ("engine", "sql"):
        ns = f"c{uuid.uuid4().hex[:10]}"
        async with start_manager(db_dsn, ns, broker_id="setup") as m:
            ids = await case.setup(m)
            before = await snapshot(db_dsn, ns, ids)
            await hints.drain(db_dsn, ns)
            opts = substitute(case.opts, ids)
            try:
                if path == "engine":
                    job_id = await by_engine(m, case, opts)
                else:
                    job_id = await by_sql(db_dsn, ns, case, opts)
            except ValidationError as exc:
                outcomes[path] = ("refused", exc.message)
            except asyncpg.InvalidParameterValueError as exc:
                outcomes[path] = ("refused", str(exc))
            except DuplicateJob as exc:
                outcomes[path] = ("duplicate", exc.message)
            except asyncpg.UniqueViolationError as exc:
                outcomes[path] = ("duplicate", str(exc))
            else:
                labels = {**ids, "new": job_id} if job_id not in ids.values() else ids
                outcomes[path] = ("admitted", [job_id in ids.values()])
                state = await snapshot(db_dsn, ns, labels)
                outcomes[path] += (state, await hints.drain(db_dsn, ns))
                if case.data is not None and job_id not in ids.values():
                    stored = await sql_value(
                        db_dsn,
                        "SELECT data::text FROM pgqueue_jobs WHERE namespace = $1 AND id = $2",
                        ns,
                        job_id,
                    )
                    assert stored == jsontext.dumps(case.data)  # as sent, byte for byte
            if outcomes[path][0] in ("refused", "duplicate"):
                message = outcomes[path][1]
                for label, known in ids.items():
                    message = message.replace(known, f"<{label}>")
                outcomes[path] = (outcomes[path][0], message)
                assert await snapshot(db_dsn, ns, ids) == before, "a refused job wrote"
    assert outcomes["sql"] == outcomes["engine"]


BULK = [
    {"name": "first", "data": {"i": 1}, "opts": {"job_id": "b1", "priority": 2}},
    {"name": "second", "data": [2], "opts": {"depends_on": ["b1"], "delay": 60_000}},
    {"name": "third", "data": "3", "opts": {"unique_key": "u", "lifo": True}},
    {"name": "again", "data": None, "opts": {"unique_key": "u"}},
]


async def test_the_bulk_form_admits_as_an_engine_batch_does(db_dsn: str, hints: Hints) -> None:
    states = {}
    for path in ("engine", "sql"):
        ns = f"c{uuid.uuid4().hex[:10]}"
        async with start_manager(db_dsn, ns, broker_id="setup") as m:
            await hints.drain(db_dsn, ns)
            if path == "engine":
                specs = [
                    build_job_spec("q", j["name"], j["data"], j["opts"], max_payload_bytes=1 << 20)
                    for j in BULK
                ]
                ids = await m.push_specs(specs)
            else:
                ids = await sql_value(
                    db_dsn,
                    "SELECT pgqueue.enqueue_bulk($1, 'q', $2::json)",
                    ns,
                    jsontext.dumps(BULK),
                )
            labels = {f"job{i}": job_id for i, job_id in enumerate(ids) if job_id != "b1"}
            hinted = {q for qs in await hints.drain(db_dsn, ns) for q in qs or ()}
            assert ids[3] == ids[2]  # the second job of key u is the first one
            states[path] = (ids[0], await snapshot(db_dsn, ns, labels), hinted)
    for key in states["sql"][1]:
        assert states["sql"][1][key] == states["engine"][1][key], key
    assert states["sql"] == states["engine"]


async def test_the_sql_function_in_a_rolled_back_transaction_leaves_nothing(
    db_dsn: str, namespace: str, hints: Hints
) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        tx = conn.transaction()
        await tx.start()
        await conn.fetchval(
            "SELECT pgqueue.enqueue_bulk($1, 'q', $2::json)",
            namespace,
            '[{"name": "a", "data": {"z": 1, "a": 2}}, {"name": "b", "opts": {"delay": 5}}]',
        )
        await tx.rollback()
        for table in ("pgqueue_jobs", "pgqueue_events"):
            count = f"SELECT count(*) FROM {table} WHERE namespace = $1"
            assert await sql_value(db_dsn, count, namespace) == 0
        assert await hints.drain(db_dsn, namespace) == []
        ids = await conn.fetchval(
            "SELECT pgqueue.enqueue_bulk($1, 'q', $2::json)",
            namespace,
            '[{"name": "a", "data": {"z": 1, "a": 2}}, {"name": "b", "opts": {"delay": 5}}]',
        )
    finally:
        await conn.close()
    assert len(ids) == 2
    rows = await sql(
        db_dsn,
        "SELECT name, data::text AS data FROM pgqueue_jobs WHERE namespace = $1 ORDER BY name",
        namespace,
    )
    assert [(r["name"], r["data"]) for r in rows] == [("a", '{"z": 1, "a": 2}'), ("b", "null")]
    assert await hints.drain(db_dsn, namespace) == [["q"], ["q"]]


async def test_the_bulk_form_names_the_job_it_refuses(db_dsn: str, namespace: str) -> None:
    with pytest.raises(asyncpg.InvalidParameterValueError, match=r"jobs\[1\]: priority"):
        await sql_value(
            db_dsn,
            "SELECT pgqueue.enqueue_bulk($1, 'q', $2::json)",
            namespace,
            '[{"name": "a"}, {"name": "b", "opts": {"priority": "x"}}]',
        )
    count = "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1"
    assert await sql_value(db_dsn, count, namespace) == 0


async def test_concurrent_sql_pushes_of_one_custom_id_make_one_job(
    db_dsn: str, namespace: str
) -> None:
    conns = [await asyncpg.connect(db_dsn) for _ in range(8)]
    try:
        txs = [c.transaction() for c in conns]
        for tx in txs:
            await tx.start()

        async def push_in(conn: asyncpg.Connection) -> str:
            result: str = await conn.fetchval(
                "SELECT pgqueue.enqueue($1, 'q', 'once', '{}'::json, '{\"job_id\": \"one\"}')",
                namespace,
            )
            return result

        calls = [asyncio.ensure_future(push_in(c)) for c in conns]
        await eventually_blocked(db_dsn, len(conns) - 1)  # all wait for the first
        # The first push's reply can still be on its way when the others wait on its row.
        await eventually(
            lambda: any(call.done() for call in calls), message="the first push's reply"
        )
        [first] = [i for i, call in enumerate(calls) if call.done()]
        await txs[first].commit()
        results = await asyncio.gather(*calls)
        for i, tx in enumerate(txs):
            if i != first:
                await tx.commit()
    finally:
        for conn in conns:
            await conn.close()
    assert results == ["one"] * len(conns)
    count = "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1"
    assert await sql_value(db_dsn, count, namespace) == 1
    types = await sql(
        db_dsn, "SELECT type FROM pgqueue_events WHERE namespace = $1 ORDER BY id", namespace
    )
    assert sorted(t["type"] for t in types) == ["duplicated"] * (len(conns) - 1) + ["pushed"]


async def eventually_blocked(dsn: str, count: int) -> None:
    """Wait until ``count`` sessions wait on a lock (the other inserts of the id)."""

    async def blocked() -> bool:
        n = await sql_value(
            dsn,
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database() AND query LIKE '%pgqueue.enqueue%'",
        )
        return bool(n >= count)

    await eventually(blocked, timeout=10, message=f"{count} pushes waiting on the first")
