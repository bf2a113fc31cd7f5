"""bunqueue's Prometheus names beside pgqueue's, on /prometheus, /metrics and TCP Prometheus."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from pgqueue.client.connection import Connection
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory
from tests.acceptance.http_support import http_client


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition (the parser refuses a malformed one)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_bunqueues_names_are_served_beside_pgqueues(brokers: BrokerFactory) -> None:
    a, b = brokers.start("a"), brokers.start("b")
    async with http_client(a) as on_a, http_client(b) as on_b:
        for priority in (0, 0, 3):
            await on_a.post("/queues/emails/jobs", json={"data": 1, "priority": priority})
        await on_a.post("/queues/later/jobs", json={"data": 1, "delay": 600_000})
        pulled = (await on_a.get("/queues/emails/jobs", params={"owner": "w"})).json()
        await on_a.post(f"/jobs/{pulled['job']['id']}/ack", json={"token": pulled["token"]})
        await on_a.post("/workers", json={"name": "w1", "queues": ["emails"], "concurrency": 8})

        async def scraped() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
            found = samples((await on_b.get("/prometheus")).text)
            done = found.get(("bunqueue_jobs_completed_total", ()), 0)
            gauge = found.get(("bunqueue_jobs_completed", ()), 0)
            pushed = found[("bunqueue_jobs_pushed_total", ())]
            return found if (done, gauge, pushed) == (1, 1, 4) else None

        found = await eventually(scraped, timeout=20, message="broker b saw the events")
    assert found[("bunqueue_jobs_waiting", ())] == 2  # the prioritized job ran first
    assert found[("bunqueue_jobs_prioritized", ())] == 0
    assert found[("bunqueue_jobs_delayed", ())] == 1
    assert found[("bunqueue_jobs_active", ())] == 0
    assert found[("bunqueue_jobs_completed", ())] == 1
    assert found[("bunqueue_jobs_dlq", ())] == 0
    assert found[("bunqueue_jobs_pulled_total", ())] == 1
    assert found[("bunqueue_jobs_failed_total", ())] == 0
    assert found[("bunqueue_queue_jobs_waiting", (("queue", "emails"),))] == 2
    assert found[("bunqueue_queue_jobs_delayed", (("queue", "later"),))] == 1
    assert found[("bunqueue_queue_metrics_exported", ())] == 2
    assert found[("bunqueue_workers_registered", ())] == 1
    assert found[("bunqueue_worker_concurrency_slots", ())] == 8
    assert found[("bunqueue_cron_jobs_registered", ())] == 0
    assert found[("bunqueue_uptime_seconds", ())] >= 0
    assert found[("bunqueue_process_resident_memory_bytes", ())] > 0
    assert found[("bunqueue_connections", (("transport", "tcp"),))] == 0
    assert found[("bunqueue_storage_degraded", ())] == 0
    assert [key for key in found if key[0] == "bunqueue_build_info"] == [
        ("bunqueue_build_info", (("python_version", key[1][0][1]), ("version", "0.1.0")))
        for key in found
        if key[0] == "bunqueue_build_info"
    ]
    assert ("bunqueue_push_duration_seconds_count", ()) in found
    assert ("pgqueue_up", ()) in found  # pgqueue's own names stay


async def test_the_tcp_prometheus_command_carries_both_names(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    conn = await Connection.open("127.0.0.1", broker.tcp_port)
    try:
        await conn.call("PUSH", {"queue": "q", "name": "n", "data": 1})
        text = (await conn.call("Prometheus"))["data"]["metrics"]
    finally:
        await conn.close()
    found = samples(text)
    assert found[("bunqueue_jobs_waiting", ())] == 1
    assert found[("bunqueue_connections", (("transport", "tcp"),))] == 1
    assert ("pgqueue_commands_total", (("command", "PUSH"), ("outcome", "ok"))) in found
