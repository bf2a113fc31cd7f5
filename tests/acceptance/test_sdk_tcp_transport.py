"""The TCP transport against two real brokers: every Transport method, and the
same answers as the embedded transport gives for the same story."""

from __future__ import annotations

import asyncio
import inspect
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pgqueue.client.embedded import EmbeddedTransport
from pgqueue.client.tcp import TcpTransport
from pgqueue.client.transport import (
    AckRequest,
    FailRequest,
    JobInput,
    Transport,
    TransportEvent,
)
from pgqueue.errors import (
    DependencyNotFound,
    InvalidState,
    JobNotFound,
    LeaseLost,
    ValidationError,
)
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory, BrokerProcess

TTL = 30_000


class Pair:
    def __init__(self, a: BrokerProcess, b: BrokerProcess, dsn: str, namespace: str) -> None:
        self.a, self.b, self.dsn, self.namespace = a, b, dsn, namespace

    @property
    def url(self) -> str:
        return f"pgqueue://{self.a.address},{self.b.address}"


@pytest.fixture(scope="module")
def pair(db_dsn: str) -> Iterator[Pair]:
    namespace = f"s{uuid.uuid4().hex[:10]}"
    factory = BrokerFactory(db_dsn, namespace, Path(tempfile.mkdtemp(prefix="pgqueue-sdk-")))
    try:
        yield Pair(
            factory.start("a", http=False), factory.start("b", http=False), db_dsn, namespace
        )
    finally:
        factory.stop_all()


@pytest.fixture
async def tcp(pair: Pair) -> AsyncIterator[TcpTransport]:
    transport = TcpTransport.from_url(pair.url, timeout=10)
    await transport.start()
    try:
        yield transport
    finally:
        await transport.close()


@pytest.fixture
async def embedded(pair: Pair) -> AsyncIterator[EmbeddedTransport]:
    transport = EmbeddedTransport(
        pair.dsn,
        namespace=pair.namespace,
        run_maintenance=False,
        pool_min_size=1,
        pool_max_size=2,
        broker_id=f"emb-{uuid.uuid4().hex[:6]}",
    )
    await transport.start()
    try:
        yield transport
    finally:
        await transport.close()


def new_queue() -> str:
    return f"q-{uuid.uuid4().hex[:10]}"


async def pull_all(t: Transport, queue: str, count: int = 10) -> list[Any]:
    return await t.pull(queue, count, owner="w", lock_ttl_ms=TTL, timeout_ms=0)


def test_the_tcp_transport_implements_every_transport_method_with_its_signature() -> None:
    wanted = {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(Transport, inspect.isfunction)
        if not name.startswith("_")
    }
    for name, signature in wanted.items():
        mine = inspect.signature(getattr(TcpTransport, name))
        assert list(mine.parameters) == list(signature.parameters), name
    assert inspect.isasyncgenfunction(TcpTransport.events) is False  # returns the stream


async def test_the_pool_spreads_its_connections_over_both_brokers(
    tcp: TcpTransport, pair: Pair
) -> None:
    await eventually(lambda: len(tcp.pool.connections) == 4)
    addresses = sorted(c.address for c in tcp.pool.connections)
    assert addresses == sorted([pair.a.address, pair.b.address] * 2)


async def story(t: Transport, queue: str) -> list[Any]:
    """One producer/worker story told through a transport; its observable answers."""
    seen: list[Any] = []
    a = await t.push(queue, JobInput("a", {"n": 1}, {"attempts": 1}))
    b, c = await t.push_bulk(
        queue, [JobInput("b", [2], {"priority": 5}), JobInput("c", None, {"delay": 60_000})]
    )
    seen.append(await t.get_counts(queue))
    leases = await pull_all(t, queue)
    seen.append([(lease.job["name"], lease.fence) for lease in leases])
    first, second = leases
    seen.append(await t.get_state(a))
    seen.append(await t.extend([(b, first.token), (a, second.token), (a, "0:stale")], 10_000))
    seen.append(await t.update_progress(b, first.token, 40, "almost"))
    seen.append(await t.add_log(b, "line one", "info"))
    seen.append(await t.ack([AckRequest(b, first.token, {"ok": 1}), AckRequest(a, "9:stale")]))
    seen.append(await t.fail(FailRequest(a, second.token, "boom", ["at x", "at y"])))
    seen.append(await t.fail(FailRequest(a, second.token, "again")))
    seen.append([await t.get_result(b), await t.get_result(a), await t.get_result("nope")])
    seen.append([await t.get_state(j) for j in (a, b, c, "nope")])
    seen.append(await t.get_job("nope"))
    job = await t.get_job(b)
    assert job is not None
    seen.append(sorted(job))
    seen.append({k: job[k] for k in ("name", "data", "state", "returnvalue", "progress")})
    seen.append([log["message"] for log in await t.get_logs(b, 0, -1)])
    seen.append(await t.get_counts(queue))
    listed = await t.get_jobs(queue, ["completed", "failed", "delayed"], 0, 10, True)
    seen.append(sorted((j["name"], j["state"]) for j in listed))
    dlq = await t.get_dlq(queue, 10, 0)
    seen.append([(e["job"]["name"], e["reason"]) for e in dlq])
    await t.promote(c)
    await t.retry_job(a)
    seen.append([await t.get_state(a), await t.get_state(c)])
    await t.pause(queue)
    seen.append([await t.is_paused(queue), await t.get_counts(queue)])
    await t.resume(queue)
    seen.append(await t.is_paused(queue))
    for error_call in (
        t.promote("nope"),
        t.push(queue, JobInput("x", 1, {"priority": "high"})),
        t.push(queue, JobInput("x", 1, {"depends_on": ["nope"]})),
        t.push_bulk(queue, [JobInput("x"), JobInput("y", 1, {"delay": -1})]),
    ):
        try:
            await error_call
        except Exception as exc:  # the types and texts are what is compared
            seen.append((type(exc).__name__, str(exc)))
    return seen


async def test_a_story_gets_the_same_answers_over_tcp_as_embedded(
    tcp: TcpTransport, embedded: EmbeddedTransport
) -> None:
    over_tcp = await story(tcp, new_queue())
    in_process = await story(embedded, new_queue())
    assert over_tcp == in_process
    assert over_tcp[1] == [("b", 1), ("a", 1)]
    assert over_tcp[3] == ["renewed", "renewed", "lost"]
    assert over_tcp[6] == [True, False]
    assert over_tcp[7:9] == [True, False]
    assert over_tcp[9] == [(True, {"ok": 1}), (False, None), (False, None)]
    assert over_tcp[10] == ["failed", "completed", "delayed", "unknown"]
    assert over_tcp[-4][0] == "JobNotFound"
    assert over_tcp[-3] == ("ValidationError", "priority must be a number")
    assert over_tcp[-2] == ("DependencyNotFound", "Dependency job not found: nope")
    assert over_tcp[-1] == ("ValidationError", "jobs[1]: delay must be at least 0")


async def test_a_job_pushed_through_one_broker_is_pulled_and_acked_through_the_other(
    pair: Pair,
) -> None:
    queue = new_queue()
    only_a = TcpTransport.from_url(f"pgqueue://{pair.a.address}", pool=1)
    only_b = TcpTransport.from_url(f"pgqueue://{pair.b.address}", pool=1)
    await only_a.start()
    await only_b.start()
    try:
        job_id = await only_a.push(queue, JobInput("n", {"x": 1}))
        [lease] = await only_b.pull(queue, 5, owner="w", lock_ttl_ms=TTL, timeout_ms=2000)
        assert lease.job["id"] == job_id and lease.job["data"] == {"x": 1}
        assert await only_a.ack([AckRequest(job_id, lease.token, "done")]) == [True]
        assert await only_b.get_result(job_id) == (True, "done")
    finally:
        await only_a.close()
        await only_b.close()


async def test_extend_tells_exactly_which_leases_it_renewed(tcp: TcpTransport) -> None:
    queue = new_queue()
    ids = await tcp.push_bulk(queue, [JobInput("n", i) for i in range(3)])
    leases = await pull_all(tcp, queue)
    items = [(lease.job["id"], lease.token) for lease in leases]
    items[1] = (items[1][0], "1:not-the-token")
    assert await tcp.extend(items, 60_000) == ["renewed", "lost", "renewed"]
    assert await tcp.extend([(ids[0], "x")], 60_000) == ["lost"]
    assert tcp.frames_sent["ExtendLock"] == 3


async def test_a_released_job_goes_back_to_waiting_and_a_stale_release_changes_nothing(
    tcp: TcpTransport,
) -> None:
    queue = new_queue()
    job_id = await tcp.push(queue, JobInput("n", 1))
    [lease] = await pull_all(tcp, queue)
    await tcp.release([(job_id, "2:stale"), ("nope", "3:x")])
    assert await tcp.get_state(job_id) == "active"
    await tcp.release([(job_id, lease.token)])
    assert await tcp.get_state(job_id) == "waiting"
    [again] = await pull_all(tcp, queue)
    assert again.job["id"] == job_id and again.job["attempts"] == 0


async def test_a_stale_progress_update_is_lease_lost_and_an_unknown_job_not_found(
    tcp: TcpTransport,
) -> None:
    queue = new_queue()
    job_id = await tcp.push(queue, JobInput("n", 1))
    await pull_all(tcp, queue)
    with pytest.raises(LeaseLost):
        await tcp.update_progress(job_id, "4:stale", 10, None)
    with pytest.raises(JobNotFound):
        await tcp.add_log("nope", "x", "info")
    with pytest.raises(ValidationError, match="level"):
        await tcp.add_log(job_id, "x", "loud")


async def test_a_flow_runs_its_parent_after_its_children_with_their_values(
    tcp: TcpTransport,
) -> None:
    parents, children = new_queue(), new_queue()
    tree = await tcp.push_flow(
        {
            "name": "parent",
            "queue": parents,
            "data": {"p": 1},
            "children": [
                {"name": "c1", "queue": children, "data": 1},
                {"name": "c2", "queue": children, "data": 2, "opts": {"job_id": "flow-c2"}},
            ],
        }
    )
    assert tree["children"][1]["id"] == "flow-c2"
    assert await tcp.get_state(tree["id"]) == "waiting-children"
    leases = await pull_all(tcp, children)
    assert sorted(lease.job["name"] for lease in leases) == ["c1", "c2"]
    await tcp.ack(
        [AckRequest(lease.job["id"], lease.token, lease.job["data"] * 10) for lease in leases]
    )
    [parent] = await pull_all(tcp, parents)
    assert parent.job["id"] == tree["id"]
    values = await tcp.get_children_values(tree["id"])
    assert sorted(values.values()) == [10, 20]
    with pytest.raises(DependencyNotFound):
        await tcp.push_flow({"name": "p", "queue": parents, "opts": {"parent_id": "nope"}})


async def test_queue_control_drains_cleans_and_obliterates(tcp: TcpTransport) -> None:
    queue = new_queue()
    ids = await tcp.push_bulk(
        queue, [JobInput("n", 1), JobInput("n", 2, {"delay": 60_000}), JobInput("n", 3)]
    )
    assert await tcp.drain(queue, False) == 2
    assert await tcp.get_state(ids[1]) == "delayed"
    await tcp.remove(ids[1])
    assert await tcp.get_state(ids[1]) == "unknown"
    done = await tcp.push(queue, JobInput("n", 4))
    [lease] = await pull_all(tcp, queue)
    await tcp.ack([AckRequest(done, lease.token)])
    assert await tcp.clean(queue, 0, "completed", 10) == [done]
    active = await tcp.push(queue, JobInput("n", 5))
    [lease] = await pull_all(tcp, queue)
    await tcp.remove(active)  # an active job is cancelled: its heartbeat says so
    assert await tcp.get_state(active) == "unknown"
    assert await tcp.extend([(active, lease.token)], 30_000) == ["cancelled"]
    await tcp.push(queue, JobInput("n", 6))
    await pull_all(tcp, queue)
    with pytest.raises(InvalidState, match="use force"):
        await tcp.obliterate(queue, False)
    await tcp.obliterate(queue, True)
    assert await tcp.get_counts(queue) == dict.fromkeys(
        (
            "waiting",
            "prioritized",
            "delayed",
            "active",
            "waiting-children",
            "completed",
            "failed",
            "paused",
        ),
        0,
    )


async def test_the_dlq_is_listed_redriven_and_purged(tcp: TcpTransport) -> None:
    queue = new_queue()
    ids = await tcp.push_bulk(queue, [JobInput("n", i) for i in range(3)])
    for lease in await pull_all(tcp, queue):
        assert await tcp.fail(FailRequest(lease.job["id"], lease.token, "no", unrecoverable=True))
    entries = await tcp.get_dlq(queue, 10, 0)
    assert sorted(e["job"]["id"] for e in entries) == sorted(ids)
    assert len(await tcp.get_dlq(queue, 1, 2)) == 1
    assert await tcp.retry_dlq(queue, ids[0]) == 1
    assert await tcp.get_state(ids[0]) == "waiting"
    await tcp.retry_job(ids[1])
    await tcp.retry_job("not-a-job")
    assert await tcp.get_state(ids[1]) == "waiting"
    assert await tcp.purge_dlq(queue) == 1
    assert await tcp.get_state(ids[2]) == "unknown"
    assert await tcp.retry_dlq(queue, None) == 0


async def test_a_worker_registered_on_a_connection_that_closed_is_registered_again(
    tcp: TcpTransport,
) -> None:
    worker_id = f"w-{uuid.uuid4().hex[:8]}"
    await tcp.register_worker(worker_id, "mailer", ["emails"], 4)
    await tcp.worker_heartbeat(worker_id, 1, 2, 0)
    dropped = tcp.pool.connections
    for conn in dropped:
        conn.abort()  # the broker forgets the registrations made on these connections
    await eventually(lambda: all(conn.closed.is_set() for conn in dropped))

    async def forgotten() -> bool:
        answer = await tcp.pool.request({"cmd": "ListWorkers"})
        return all(w["workerId"] != worker_id for w in answer["data"]["workers"])

    await eventually(forgotten)
    await tcp.worker_heartbeat(worker_id, 3, 4, 1)
    assert tcp.frames_sent["RegisterWorker"] == 2
    await tcp.unregister_worker(worker_id)
    await tcp.unregister_worker(worker_id)
    with pytest.raises(JobNotFound, match="Worker not found"):
        await tcp.worker_heartbeat(worker_id, 0, 0, 0)


async def collect(stream: AsyncIterator[TransportEvent], into: list[TransportEvent]) -> None:
    async for event in stream:
        if event.event_type != "subscribed":  # the marker: the subscription exists
            into.append(event)


async def test_events_arrive_with_the_engines_names_and_resume_after_a_cursor(
    tcp: TcpTransport,
) -> None:
    queue = new_queue()
    events: list[TransportEvent] = []
    stream = tcp.events(queue, None)
    reader = asyncio.create_task(collect(stream, events))
    try:
        await eventually(lambda: tcp.feeds.subscriptions == 1)
        job_id = await tcp.push(queue, JobInput("n", {"x": 1}))
        [lease] = await pull_all(tcp, queue)
        await tcp.update_progress(job_id, lease.token, 50, None)
        await tcp.ack([AckRequest(job_id, lease.token, {"r": 2})])
        await eventually(lambda: [e.event_type for e in events][-1:] == ["completed"])
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        await stream.aclose()  # type: ignore[attr-defined]
    assert [e.event_type for e in events] == ["pushed", "active", "progress", "completed"]
    assert {e.job_id for e in events} == {job_id} and {e.queue for e in events} == {queue}
    assert events[2].body["progress"] == 50
    assert events[3].body["returnvalue"] == {"r": 2}
    replay: list[TransportEvent] = []
    again = tcp.events(queue, events[1].cursor)
    reader = asyncio.create_task(collect(again, replay))
    try:
        await eventually(lambda: len(replay) == 2)
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        await again.aclose()  # type: ignore[attr-defined]
    assert [(e.event_type, e.job_id, e.body) for e in replay] == [
        (e.event_type, e.job_id, e.body) for e in events[2:]
    ]


async def test_a_stream_first_says_it_is_subscribed_like_the_embedded_one(
    tcp: TcpTransport, embedded: EmbeddedTransport
) -> None:
    for transport in (tcp, embedded):
        stream = transport.events(new_queue(), None)
        try:
            marker = await stream.__anext__()
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
        assert (marker.event_type, marker.job_id, marker.body) == ("subscribed", "", {})


async def test_a_bad_event_cursor_is_a_validation_error(tcp: TcpTransport) -> None:
    stream = tcp.events(new_queue(), "not-a-cursor")
    with pytest.raises(ValidationError, match="invalid event cursor"):
        await stream.__anext__()
    with pytest.raises(ValidationError, match="Queue name"):
        tcp.events("bad queue", None)
