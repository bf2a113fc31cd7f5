"""bunqueue's dashboard routes: /dashboard*, /queues/summary, /stats, /health, DLQ pages,
/gc, /heapstats, and the Dashboard* commands over TCP (two brokers, one namespace)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from pgqueue.client.connection import Connection
from tests.acceptance.conftest import BrokerFactory
from tests.acceptance.http_support import http_client

OVERVIEW_KEYS = {
    "ok", "stats", "throughput", "latency", "memory", "collections", "workers", "crons",
    "storage", "timestamp",
}  # fmt: skip
MEMORY_KEYS = {"heapUsed", "heapTotal", "rss"}


@pytest.fixture
async def two(brokers: BrokerFactory) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    a, b = brokers.start("a"), brokers.start("b")
    async with http_client(a) as one, http_client(b) as other:
        yield one, other


async def push(http: httpx.AsyncClient, queue: str, **job: Any) -> str:
    answer = await http.post(f"/queues/{queue}/jobs", json={"data": job.pop("data", None), **job})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


async def pull(http: httpx.AsyncClient, queue: str) -> tuple[str, str]:
    answer = (await http.get(f"/queues/{queue}/jobs", params={"owner": "w"})).json()
    return str(answer["job"]["id"]), str(answer["token"])


async def dead_letter(http: httpx.AsyncClient, queue: str) -> str:
    job_id = await push(http, queue, maxAttempts=1)
    pulled, token = await pull(http, queue)
    assert pulled == job_id
    answer = await http.post(f"/jobs/{job_id}/fail", json={"token": token, "error": "boom"})
    assert answer.status_code == 200, answer.text
    return job_id


async def fill(http: httpx.AsyncClient) -> None:
    """emails: 2 waiting, 1 prioritized, 1 delayed, 1 active, 1 completed;
    reports: 1 dead-lettered (failed), 1 waiting; idle: paused, empty."""
    done = await push(http, "emails")
    pulled, token = await pull(http, "emails")
    assert pulled == done
    assert (await http.post(f"/jobs/{done}/ack", json={"token": token})).status_code == 200
    await push(http, "emails")
    await pull(http, "emails")
    await push(http, "emails")
    await push(http, "emails")
    await push(http, "emails", priority=5)
    await push(http, "emails", delay=600_000)
    await dead_letter(http, "reports")
    await push(http, "reports")
    assert (await http.post("/queues/idle/pause")).status_code == 200


async def test_the_overview_has_bunqueues_keys_and_the_namespace_counts(two: Any) -> None:
    a, b = two
    await fill(a)
    worker = {"name": "w1", "queues": ["emails"], "concurrency": 4}
    assert (await a.post("/workers", json=worker)).status_code == 200
    answer = await b.get("/dashboard")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body) == OVERVIEW_KEYS
    assert body["ok"] is True
    stats = body["stats"]
    assert {k: stats[k] for k in ("waiting", "active", "delayed", "completed", "dlq")} == {
        "waiting": 3,
        "active": 1,
        "delayed": 1,
        "completed": 1,
        "dlq": 1,
    }
    assert stats["totalPushed"] == 8 and stats["totalCompleted"] == 1
    assert stats["totalFailed"] == 1 and stats["uptime"] > 0
    assert set(body["throughput"]) == {"pushPerSec", "pullPerSec", "completePerSec", "failPerSec"}
    assert set(body["latency"]["averages"]) == {"pushMs", "pullMs", "ackMs"}
    assert set(body["latency"]["percentiles"]["push"]) == {"p50", "p95", "p99"}
    assert set(body["memory"]) == MEMORY_KEYS and body["memory"]["rss"] > 0
    workers = body["workers"]
    assert (workers["total"], workers["active"], workers["truncated"]) == (1, 1, False)
    assert workers["list"][0]["name"] == "w1" and workers["list"][0]["queues"] == ["emails"]
    assert body["crons"] == {"total": 0, "list": [], "truncated": False}
    assert body["storage"] == {"diskFull": False, "error": None, "since": None}


async def test_dashboard_queues_pages_the_queues_by_name_with_the_total(two: Any) -> None:
    a, b = two
    await fill(a)
    answer = (await b.get("/dashboard/queues", params={"limit": 2, "offset": 1})).json()
    assert (answer["total"], answer["limit"], answer["offset"]) == (3, 2, 1)
    assert [q["name"] for q in answer["queues"]] == ["idle", "reports"]
    idle, reports = answer["queues"]
    assert {"name", "waiting", "prioritized", "delayed", "active", "dlq", "paused"} <= set(idle)
    assert idle["paused"] is True and reports["paused"] is False
    assert (reports["waiting"], reports["dlq"]) == (1, 1)
    every = (await b.get("/dashboard/queues", params={"limit": 10_000})).json()
    assert every["limit"] == 500 and len(every["queues"]) == 3


async def test_dashboard_queue_shows_counts_previews_and_the_first_jobs(two: Any) -> None:
    a, b = two
    await fill(a)
    detail = (await b.get("/dashboard/queues/emails", params={"includeJobs": "true"})).json()
    assert detail["name"] == "emails" and detail["paused"] is False
    counts = detail["counts"]
    assert (counts["waiting"], counts["prioritized"], counts["delayed"]) == (2, 1, 1)
    assert (counts["active"], counts["completed"], counts["paused"]) == (1, 1, 0)
    assert detail["priorityCounts"] == {"0": 3, "5": 1}
    jobs = detail["jobs"]
    assert set(jobs) == {"waiting", "active", "delayed", "paused"}
    assert (len(jobs["waiting"]), len(jobs["active"]), len(jobs["delayed"])) == (3, 1, 1)
    assert set(jobs["waiting"][0]) == {"id", "priority", "createdAt", "runAt", "attempts",
                                       "progress"}  # fmt: skip
    plain = (await b.get("/dashboard/queues/emails", params={"includeJobs": "false"})).json()
    assert "jobs" not in plain
    reports = (await b.get("/dashboard/queues/reports")).json()
    [entry] = reports["dlqPreview"]
    assert set(entry) == {"id", "data", "attempts", "createdAt"} and entry["attempts"] == 1
    await a.post("/queues/emails/pause")
    paused = (await b.get("/dashboard/queues/emails", params={"includeJobs": "true"})).json()
    assert paused["paused"] is True
    assert (paused["counts"]["waiting"], paused["counts"]["paused"]) == (0, 3)
    assert (len(paused["jobs"]["waiting"]), len(paused["jobs"]["paused"])) == (0, 3)
    assert (await b.get("/dashboard/queues/bad%20name")).status_code == 400


async def test_queues_summary_is_a_bare_array_of_every_queue(two: Any) -> None:
    a, b = two
    await fill(a)
    answer = (await b.get("/queues/summary")).json()
    assert isinstance(answer, list)
    by_name = {q["name"]: q for q in answer}
    assert set(by_name) == {"emails", "reports", "idle"}
    assert by_name["idle"]["paused"] is True
    assert by_name["emails"]["counts"] == {
        "waiting": 2,
        "prioritized": 1,
        "active": 1,
        "completed": 1,
        "failed": 0,
        "delayed": 1,
    }
    assert by_name["reports"]["counts"]["failed"] == 1


async def test_stats_spell_bunqueues_fields(two: Any) -> None:
    a, b = two
    await fill(a)
    body = (await b.get("/stats")).json()
    stats = body["stats"]
    assert stats["waiting-children"] == 0 and stats["cronJobs"] == 0
    assert (stats["totalPushed"], stats["totalPulled"]) == (8, 3)
    assert (stats["totalCompleted"], stats["totalFailed"]) == (1, 1)
    for key in ("pushPerSec", "pullPerSec", "completePerSec", "failPerSec"):
        assert isinstance(stats[key], float)
    assert set(body["memory"]) >= MEMORY_KEYS and body["memory"]["rss"] > 0


async def test_health_carries_bunqueues_fields_beside_readiness(two: Any) -> None:
    a, b = two
    await fill(a)
    answer = await b.get("/health")
    assert answer.status_code == 200
    body = answer.json()
    assert (body["ok"], body["status"], body["ready"]) == (True, "healthy", True)
    assert body["version"] == "0.1.0" and isinstance(body["uptime"], int)
    assert body["queues"] == {"waiting": 3, "active": 1, "delayed": 1, "completed": 1, "dlq": 1}
    assert body["connections"] == {"tcp": 0, "ws": 0, "sse": 0}
    assert set(body["memory"]) == MEMORY_KEYS
    assert "checks" in body


async def test_the_dlq_routes_answer_ok_stats_and_a_total(two: Any) -> None:
    a, b = two
    for _ in range(3):
        await dead_letter(a, "dead")
    stats = (await b.get("/queues/dead/dlq/stats")).json()
    assert set(stats) == {"ok", "stats"}
    assert stats["stats"]["total"] == 3 and stats["stats"]["byQueue"] == {"dead": 3}
    page = (await b.get("/queues/dead/dlq", params={"limit": 2, "offset": 0})).json()
    assert (len(page["entries"]), page["total"]) == (2, 3)
    unmatched = (await b.get("/queues/dead/dlq", params={"reason": "stalled"})).json()
    assert (unmatched["entries"], unmatched["total"]) == ([], 0)


async def test_the_job_list_takes_bunqueues_paused_state(two: Any) -> None:
    a, b = two
    ready = await push(a, "p")
    delayed = await push(a, "p", delay=600_000)
    states = {"states": "waiting,delayed,paused"}
    running = (await b.get("/queues/p/jobs/list", params={"states": "paused"})).json()
    assert running == {"ok": True, "jobs": []}
    await a.post("/queues/p/pause")
    paused = (await b.get("/queues/p/jobs/list", params={"states": "paused"})).json()
    assert [job["id"] for job in paused["jobs"]] == [ready]
    mixed = (await b.get("/queues/p/jobs/list", params=states)).json()
    assert sorted(job["id"] for job in mixed["jobs"]) == sorted([ready, delayed])


async def test_gc_and_heapstats_report_the_python_process(two: Any) -> None:
    a, _ = two
    collected = (await a.post("/gc", json={})).json()
    assert collected["ok"] is True
    assert set(collected["before"]) == MEMORY_KEYS == set(collected["after"])
    assert isinstance(collected["collected"], int)
    assert collected["tracemalloc"] == {"tracing": False}
    traced = (await a.post("/gc", json={"tracemalloc": True})).json()
    assert traced["tracemalloc"]["tracing"] is True
    heap = (await a.get("/heapstats")).json()
    assert heap["heap"]["objectCount"] > 1000
    assert {"type", "count"} == set(heap["topObjectTypes"][0])
    assert heap["tracemalloc"]["tracing"] is True and heap["tracemalloc"]["top"]
    assert {"projectionEntries", "claimBook", "tcpConnections"} <= set(heap["collections"])
    off = (await a.post("/gc", json={"tracemalloc": False})).json()
    assert off["tracemalloc"] == {"tracing": False}
    refused = await a.post("/gc", json={"tracemalloc": "yes"})
    assert refused.status_code == 400


async def test_the_dashboard_commands_answer_over_tcp(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http:
        await fill(http)
    conn = await Connection.open("127.0.0.1", broker.tcp_port)
    try:
        overview = (await conn.call("DashboardOverview"))["data"]
        assert set(overview) == OVERVIEW_KEYS - {"ok"}
        assert overview["crons"] == [] and overview["stats"]["waiting"] == 3
        queues = (await conn.call("DashboardQueues"))["data"]
        assert [q["name"] for q in queues["queues"]] == ["emails", "idle", "reports"]
        one = await conn.call("DashboardQueue", {"queue": "emails", "includeJobs": True})
        assert one["data"]["name"] == "emails" and len(one["data"]["jobs"]["active"]) == 1
        limited = await conn.call(
            "DashboardQueue", {"queue": "emails", "includeJobs": True, "jobsLimit": 1}
        )
        assert len(limited["data"]["jobs"]["waiting"]) == 1
        bad = await conn.request({"cmd": "DashboardQueue", "queue": "emails", "jobsLimit": 0})
        assert bad["ok"] is False
    finally:
        await conn.close()


async def test_the_debug_and_dashboard_routes_need_the_token(brokers: BrokerFactory) -> None:
    broker = brokers.start("a", "--auth-token", "ops=s3cret")
    async with http_client(broker) as anonymous, http_client(broker, "s3cret") as ops:
        for method, path in (("POST", "/gc"), ("GET", "/heapstats"), ("GET", "/dashboard")):
            assert (await anonymous.request(method, path)).status_code == 401
            answer = await ops.request(method, path, json={} if method == "POST" else None)
            assert answer.status_code == 200, answer.text
        assert (await anonymous.get("/health")).status_code == 200


async def test_a_jobs_timeline_lists_its_states_in_bunqueues_shape(two: Any) -> None:
    a, b = two
    job_id = await push(a, "t", maxAttempts=2, backoff=0)
    pulled, token = await pull(a, "t")
    assert pulled == job_id
    assert (await a.post(f"/jobs/{job_id}/fail", json={"token": token, "error": "boom"})).is_success
    pulled, token = await pull(a, "t")
    assert pulled == job_id
    assert (await a.post(f"/jobs/{job_id}/ack", json={"token": token})).is_success
    job = (await b.get(f"/jobs/{job_id}")).json()["job"]
    timeline = job["timeline"]
    assert [(e["state"], e.get("attempt")) for e in timeline] == [
        ("waiting", None),
        ("active", 1),
        ("failed", 1),
        ("active", 2),
        ("completed", 2),
    ]
    assert timeline[2]["error"] == "boom"
    assert timeline[0]["timestamp"] == job["createdAt"]
    assert timeline[-1]["timestamp"] == job["completedAt"]
    stamps = [e["timestamp"] for e in timeline]
    assert stamps == sorted(stamps) and all(isinstance(t, float) for t in stamps)
    assert all(set(e) <= {"state", "timestamp", "worker", "error", "attempt"} for e in timeline)


async def test_a_dead_lettered_jobs_timeline_ends_with_its_one_failure(two: Any) -> None:
    a, b = two
    job_id = await dead_letter(a, "t2")
    timeline = (await b.get(f"/jobs/{job_id}")).json()["job"]["timeline"]
    assert [(e["state"], e.get("attempt"), e.get("error")) for e in timeline] == [
        ("waiting", None, None),
        ("active", 1, None),
        ("failed", 1, "boom"),
    ]
