"""The REST routes of the HTTP API against real brokers: producing, working, reading."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from pgqueue.client.connection import Connection
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.acceptance.http_support import http_client
from tests.helpers import sql


@pytest.fixture
def broker(brokers: BrokerFactory) -> BrokerProcess:
    return brokers.start("a")


@pytest.fixture
async def http(broker: BrokerProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with http_client(broker) as client:
        yield client


async def test_a_job_pushed_over_http_is_pulled_and_acked_over_tcp_on_another_broker(
    brokers: BrokerFactory,
) -> None:
    front = brokers.start("front")
    back = brokers.start("back", http=False)
    async with http_client(front) as http:
        pushed = await http.post(
            "/queues/emails/jobs", json={"name": "welcome", "data": {"to": "a@b.c"}, "priority": 3}
        )
        assert pushed.status_code == 200, pushed.text
        job_id = pushed.json()["id"]

        tcp = await Connection.open("127.0.0.1", back.tcp_port)
        try:
            pulled = await tcp.call("PULL", {"queue": "emails", "owner": "w", "timeout": 5000})
            assert pulled["job"]["id"] == job_id
            assert (pulled["job"]["name"], pulled["job"]["data"]) == ("welcome", {"to": "a@b.c"})
            assert pulled["job"]["priority"] == 3
            await tcp.call("ACK", {"id": job_id, "token": pulled["token"], "result": {"sent": 1}})
        finally:
            await tcp.close()

        job = await http.get(f"/jobs/{job_id}")
        assert job.status_code == 200
        assert job.json()["job"]["state"] == "completed"
        assert job.json()["job"]["returnvalue"] == {"sent": 1}
        result = await http.get(f"/jobs/{job_id}/result")
        assert result.json() == {"ok": True, "id": job_id, "result": {"sent": 1}}
        counts = (await http.get("/queues/emails/counts")).json()["counts"]
        assert counts["completed"] == 1 and counts["waiting"] == 0


async def test_a_worker_pulls_acks_and_fails_over_http(http: httpx.AsyncClient) -> None:
    bulk = await http.post(
        "/queues/work/jobs/bulk",
        json={"jobs": [{"name": "one", "data": 1}, {"name": "two", "data": 2}]},
    )
    assert bulk.status_code == 200, bulk.text
    first_id, second_id = bulk.json()["ids"]

    pulled = await http.get("/queues/work/jobs", params={"owner": "w1", "lockTtl": 60000})
    body = pulled.json()
    assert pulled.status_code == 200 and body["job"]["id"] == first_id and body["token"]
    acked = await http.post(f"/jobs/{first_id}/ack", json={"token": body["token"], "result": 42})
    assert (acked.status_code, acked.json()) == (200, {"ok": True})
    assert (await http.get(f"/jobs/{first_id}/state")).json()["state"] == "completed"
    again = await http.post(f"/jobs/{first_id}/ack", json={"token": body["token"]})
    assert again.status_code == 200
    assert again.json()["data"] == {"applied": False, "reason": "already-finalized"}

    batch = await http.post("/queues/work/jobs/pull-batch", json={"count": 5, "owner": "w2"})
    assert [job["id"] for job in batch.json()["jobs"]] == [second_id]
    token = batch.json()["tokens"][0]
    stale = await http.post(f"/jobs/{second_id}/ack", json={"token": "not-the-token"})
    assert stale.status_code == 409
    error = f"Invalid or expired lock token for job {second_id}"
    assert stale.json() == {"ok": False, "error": error}
    failed = await http.post(
        f"/jobs/{second_id}/fail", json={"token": token, "error": "boom", "unrecoverable": True}
    )
    assert failed.status_code == 200, failed.text
    job = (await http.get(f"/jobs/{second_id}")).json()["job"]
    assert job["state"] == "failed" and job["failedReason"] == "boom"


async def test_deleting_an_active_job_over_http_cancels_it_and_its_heartbeat_says_so(
    http: httpx.AsyncClient,
) -> None:
    pushed = await http.post("/queues/cancel-me/jobs", json={"name": "n", "data": 1})
    job_id = pushed.json()["id"]
    pulled = await http.get("/queues/cancel-me/jobs", params={"owner": "w1", "lockTtl": 60000})
    token = pulled.json()["token"]
    removed = await http.delete(f"/jobs/{job_id}")
    assert removed.status_code == 200, removed.text
    assert (await http.get(f"/jobs/{job_id}/state")).json()["state"] == "unknown"
    beat = await http.post("/jobs/heartbeat-batch", json={"ids": [job_id], "tokens": [token]})
    assert beat.json()["data"] == {"ok": True, "count": 0, "cancelled": [job_id]}
    single = await http.post(f"/jobs/{job_id}/heartbeat", json={"token": token})
    assert single.json() == {"ok": False, "error": f"Job {job_id} was cancelled"}
    late = await http.post(f"/jobs/{job_id}/ack", json={"token": token, "result": 1})
    assert late.json()["data"] == {"applied": False, "reason": "already-finalized"}


async def test_a_pull_over_http_keeps_its_lease_after_the_request(
    http: httpx.AsyncClient,
) -> None:
    job_id = (await http.post("/queues/q/jobs", json={"data": 1})).json()["id"]
    pulled = (await http.get("/queues/q/jobs")).json()
    assert pulled["job"]["id"] == job_id and "token" not in pulled
    assert (await http.get(f"/jobs/{job_id}/state")).json()["state"] == "active"
    # No token in hand: the broker that handed the job out knows it.
    acked = await http.post(f"/jobs/{job_id}/ack", json={"result": "done"})
    assert acked.status_code == 200, acked.text
    assert (await http.get(f"/jobs/{job_id}/result")).json()["result"] == "done"


async def test_an_empty_queue_answers_a_null_job(http: httpx.AsyncClient) -> None:
    answer = await http.get("/queues/empty/jobs", params={"timeout": 0, "owner": "w"})
    assert answer.status_code == 200
    assert answer.json() == {"ok": True, "job": None, "token": None}


async def test_counts_listings_and_queue_control(http: httpx.AsyncClient) -> None:
    await http.post("/queues/q/jobs", json={"name": "a", "data": 1})
    await http.post("/queues/q/jobs", json={"name": "b", "data": 2, "priority": 5})
    delayed = (await http.post("/queues/q/jobs", json={"data": 3, "delay": 3_600_000})).json()

    counts = (await http.get("/queues/q/counts")).json()["counts"]
    assert (counts["waiting"], counts["prioritized"], counts["delayed"]) == (1, 1, 1)
    assert (await http.get("/queues/q/count")).json()["count"] == 3
    by_priority = (await http.get("/queues/q/priority-counts")).json()["counts"]
    assert by_priority == {"0": 2, "5": 1}
    listed = (await http.get("/queues/q/jobs/list", params={"state": "delayed"})).json()
    assert [job["id"] for job in listed["jobs"]] == [delayed["id"]]
    both = (await http.get("/queues/q/jobs/list?status=delayed,prioritized&limit=10")).json()
    assert len(both["jobs"]) == 2
    assert "q" in (await http.get("/queues")).json()["queues"]

    assert (await http.post("/queues/q/pause")).status_code == 200
    assert (await http.get("/queues/q/paused")).json()["paused"] is True
    assert (await http.get("/queues/q/jobs", params={"owner": "w"})).json()["job"] is None
    assert (await http.post("/queues/q/resume")).status_code == 200
    assert (await http.get("/queues/q/paused")).json()["paused"] is False

    promoted = await http.post("/queues/q/promote-jobs", json={"count": 10})
    assert promoted.json()["count"] == 1
    drained = await http.post("/queues/q/drain")
    assert drained.status_code == 200
    assert (await http.get("/queues/q/count")).json()["count"] == 0


async def test_one_job_is_read_and_changed_through_its_routes(http: httpx.AsyncClient) -> None:
    pushed = await http.post(
        "/queues/q/jobs", json={"name": "n", "data": {"v": 1}, "jobId": "order-7", "delay": 60_000}
    )
    job_id = pushed.json()["id"]
    assert job_id == "order-7"
    custom = (await http.get("/jobs/custom/order-7")).json()
    assert custom["job"]["id"] == "order-7"

    assert (await http.put(f"/jobs/{job_id}/data", json={"data": {"v": 2}})).status_code == 200
    assert (await http.put(f"/jobs/{job_id}/priority", json={"priority": 9})).status_code == 200
    assert (await http.post(f"/jobs/{job_id}/promote")).status_code == 200
    job = (await http.get(f"/jobs/{job_id}")).json()["job"]
    assert (job["data"], job["priority"], job["state"]) == ({"v": 2}, 9, "prioritized")

    pulled = (await http.get("/queues/q/jobs", params={"owner": "w"})).json()
    token = pulled["token"]
    progress = await http.post(
        f"/jobs/{job_id}/progress", json={"progress": 50, "message": "half", "token": token}
    )
    assert progress.status_code == 200, progress.text
    assert (await http.get(f"/jobs/{job_id}/progress")).json()["progress"] == 50
    logged = await http.post(f"/jobs/{job_id}/logs", json={"message": "step 1"})
    assert logged.status_code == 200, logged.text
    logs = (await http.get(f"/jobs/{job_id}/logs")).json()["data"]["logs"]
    assert [line["message"] for line in logs] == ["step 1"]
    renewed = await http.post(f"/jobs/{job_id}/heartbeat", json={"token": token})
    assert renewed.json()["data"] == {"ok": True}
    extended = await http.post(
        "/jobs/extend-locks", json={"ids": [job_id], "tokens": [token], "durations": [60_000]}
    )
    assert extended.json()["count"] == 1
    back = await http.post(f"/jobs/{job_id}/move-to-wait", json={"token": token})
    assert back.status_code == 200, back.text
    assert (await http.get(f"/jobs/{job_id}/state")).json()["state"] == "prioritized"
    removed = await http.delete(f"/jobs/{job_id}")
    assert removed.status_code == 200, removed.text
    assert (await http.get(f"/jobs/{job_id}/state")).json()["state"] == "unknown"


async def test_missing_jobs_answer_404_with_the_protocols_text(http: httpx.AsyncClient) -> None:
    for path in ("/jobs/nope", "/jobs/custom/nope"):
        answer = await http.get(path)
        assert (answer.status_code, answer.json()) == (404, {"ok": False, "error": "Job not found"})
    state = await http.get("/jobs/nope/state")
    assert (state.status_code, state.json()["state"]) == (200, "unknown")


async def test_rate_limit_and_concurrency_routes_set_what_the_limits_route_reads(
    http: httpx.AsyncClient,
) -> None:
    assert (await http.put("/queues/q/rate-limit", json={"limit": 5, "duration": 2000})).json()[
        "ok"
    ]
    assert (await http.put("/queues/q/concurrency", json={"limit": 3})).json()["ok"]
    limits = (await http.get("/queues/q/limits")).json()
    assert limits == {
        "ok": True,
        "data": {
            "limits": {
                "rateLimit": {"max": 5, "duration": 2000},
                "rateLimitTtl": 0,
                "concurrencyLimit": 3,
                "maxed": False,
            }
        },
    }
    bad = await http.put("/queues/q/rate-limit", json={"limit": 0})
    assert bad.status_code == 400 and "limit" in bad.json()["error"]
    assert (await http.delete("/queues/q/rate-limit")).json()["ok"]
    assert (await http.delete("/queues/q/concurrency")).json()["ok"]
    cleared = (await http.get("/queues/q/limits")).json()["data"]["limits"]
    assert (cleared["rateLimit"], cleared["concurrencyLimit"]) == (None, None)


async def test_unknown_paths_answer_404_and_wrong_methods_405(http: httpx.AsyncClient) -> None:
    missing = await http.get("/no/such/route")
    assert (missing.status_code, missing.json()) == (404, {"ok": False, "error": "Not found"})
    wrong = await http.delete("/queues")
    assert wrong.status_code == 405 and wrong.json()["ok"] is False


async def test_dead_letters_are_listed_and_redriven_over_http(
    http: httpx.AsyncClient, db_dsn: str, namespace: str
) -> None:
    job_id = (await http.post("/queues/q/jobs", json={"data": 1, "maxAttempts": 1})).json()["id"]
    token = (await http.get("/queues/q/jobs", params={"owner": "w"})).json()["token"]
    failed = await http.post(f"/jobs/{job_id}/fail", json={"token": token, "error": "bad"})
    assert failed.status_code == 200, failed.text

    listed = (await http.get("/queues/q/dlq", params={"limit": 10})).json()
    assert [entry["job"]["id"] for entry in listed["entries"]] == [job_id]
    stats = (await http.get("/queues/q/dlq/stats")).json()
    assert stats["stats"]["total"] == 1  # bunqueue's HTTP shape: {ok, stats}
    retried = await http.post("/queues/q/dlq/retry", json={"jobId": job_id, "why": "fixed"})
    assert retried.json()["count"] == 1
    assert (await http.get(f"/jobs/{job_id}/state")).json()["state"] == "waiting"
    actors = await sql(
        db_dsn, "SELECT actor FROM pgqueue_dlq_audit WHERE namespace = $1", namespace
    )
    assert [row["actor"] for row in actors] == ["anonymous"]


async def test_queue_settings_are_read_and_changed_over_http(http: httpx.AsyncClient) -> None:
    changed = await http.put("/queues/q/stall-config", json={"maxStalls": 5})
    assert changed.status_code == 200, changed.text
    assert (await http.get("/queues/q/stall-config")).json()["config"]["maxStalls"] == 5
    wrapped = await http.put("/queues/q/dlq-config", json={"config": {"maxAutoRetries": 7}})
    assert wrapped.status_code == 200, wrapped.text
    assert (await http.get("/queues/q/dlq-config")).json()["config"]["maxAutoRetries"] == 7
    refused = await http.put("/queues/q/stall-config", json={"maxStalls": "many"})
    assert refused.status_code == 400


async def test_workers_register_over_http_and_are_listed_per_queue(
    http: httpx.AsyncClient,
) -> None:
    registered = await http.post("/workers", json={"name": "w1", "queues": ["q", "r"]})
    assert registered.status_code == 200, registered.text
    worker_id = registered.json()["data"]["workerId"]
    mine = (await http.get("/queues/q/workers")).json()
    assert [w["id"] for w in mine["workers"]] == [worker_id]
    assert (await http.get("/queues/other/workers")).json()["workers"] == []
    beat = await http.post(f"/workers/{worker_id}/heartbeat", json={"processed": 3})
    assert beat.status_code == 200, beat.text
    assert (await http.delete(f"/workers/{worker_id}")).status_code == 200
    assert (await http.get("/workers")).json()["data"]["workers"] == []
    gone = await http.delete(f"/workers/{worker_id}")
    # The engine reports an unknown worker as a validation error (400) for now.
    assert gone.status_code in (400, 404) and gone.json()["error"] == "Worker not found"


async def test_a_head_request_never_runs_a_command(
    http: httpx.AsyncClient, db_dsn: str, namespace: str
) -> None:
    job_id = (await http.post("/queues/q/jobs", json={"data": 1})).json()["id"]
    assert (await http.head("/queues/q/jobs")).status_code == 405
    assert (await http.get(f"/jobs/{job_id}/state")).json()["state"] == "waiting"
    assert (await http.head("/healthz")).status_code == 200
