"""Bad input and authentication on the HTTP API: clear 4xx answers, nothing written."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.acceptance.http_support import JSON, http_client
from tests.helpers import count_rows, sql

BODY_LIMIT = 64 * 1024


@pytest.fixture
def broker(brokers: BrokerFactory) -> BrokerProcess:
    return brokers.start("a", "--max-http-body-bytes", str(BODY_LIMIT))


@pytest.fixture
async def http(broker: BrokerProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with http_client(broker) as client:
        yield client


BAD_REQUESTS: list[tuple[str, str, dict[str, Any], int, str]] = [
    (
        "POST",
        "/queues/q/jobs",
        {"content": b"{not json", "headers": JSON},
        400,
        "Invalid JSON body",
    ),
    (
        "POST",
        "/queues/q/jobs",
        {"content": b"[1, 2]", "headers": JSON},
        400,
        "Request body must be a JSON object",
    ),
    (
        "POST",
        "/queues/q/jobs",
        {"content": b'"text"', "headers": JSON},
        400,
        "Request body must be a JSON object",
    ),
    ("POST", "/queues/q/jobs", {"content": b"\xff\xfe", "headers": JSON}, 400, "Invalid JSON body"),
    ("POST", "/queues/q/jobs", {"json": {"data": 1, "priority": "high"}}, 400, "priority must be"),
    ("POST", "/queues/q/jobs", {"json": {"data": 1, "lifo": "true"}}, 400, "lifo"),
    ("POST", "/queues/q/jobs", {"json": {"data": 1, "jobId": {"a": 1}}}, 400, "jobId"),
    ("POST", "/queues/q/jobs", {"json": {"data": 1, "delay": -5}}, 400, "delay"),
    ("POST", "/queues/bad%20queue!/jobs", {"json": {"data": 1}}, 400, "invalid characters"),
    (
        "POST",
        "/queues/q/jobs",
        {"content": b"data=1", "headers": {"content-type": "application/x-www-form-urlencoded"}},
        415,
        "must be JSON",
    ),
    ("POST", "/queues/q/jobs/bulk", {"json": {"jobs": "many"}}, 400, "jobs"),
    (
        "POST",
        "/queues/q/jobs/bulk",
        {"json": {"jobs": [{"name": "ok", "data": 1}, {"name": "bad", "data": 1, "delay": "x"}]}},
        400,
        "jobs[1]: delay",
    ),
    (
        "POST",
        "/queues/q/jobs/pull-batch",
        {"json": {"count": 5000}},
        400,
        "count must be at most 1000",
    ),
    ("GET", "/queues/q/jobs?timeout=soon", {}, 400, "timeout must be"),
    ("GET", "/queues/q/jobs?timeout=600000", {}, 400, "timeout must be at most 60000"),
    (
        "POST",
        "/jobs/ack-batch",
        {"json": {"ids": ["a", "b"], "tokens": ["x"]}},
        400,
        "ACKB tokens length must match ids length",
    ),
    (
        "POST",
        "/queues/q/pause",
        {"content": b"<form/>", "headers": {"content-type": "text/xml"}},
        415,
        "must be JSON",
    ),
]


@pytest.mark.parametrize(("method", "path", "request_args", "status", "error"), BAD_REQUESTS)
async def test_bad_requests_get_a_clear_4xx_and_write_nothing(
    http: httpx.AsyncClient,
    db_dsn: str,
    namespace: str,
    method: str,
    path: str,
    request_args: dict[str, Any],
    status: int,
    error: str,
) -> None:
    answer = await http.request(method, path, **request_args)
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["ok"] is False and error in body["error"]
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0
    assert await count_rows(db_dsn, "pgqueue_queues", namespace) == 0
    assert await count_rows(db_dsn, "pgqueue_events", namespace) == 0
    assert (await http.get("/ping")).json()["data"]["pong"] is True


async def test_an_oversized_body_is_refused_with_413_and_the_broker_serves_on(
    http: httpx.AsyncClient, db_dsn: str, namespace: str
) -> None:
    big = {"data": "x" * (BODY_LIMIT + 1)}
    answer = await http.post("/queues/q/jobs", json=big)
    assert answer.status_code == 413
    assert answer.json() == {
        "ok": False,
        "error": f"Request body too large (limit {BODY_LIMIT} bytes)",
    }

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: read up to the limit
        yield b'{"data": "'
        for _ in range(BODY_LIMIT // 1024 + 1):
            yield b"y" * 1024
        yield b'"}'

    streamed = await http.post("/queues/q/jobs", content=chunks(), headers=JSON)
    assert streamed.status_code == 413
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0
    fits = await http.post("/queues/q/jobs", json={"data": "x" * (BODY_LIMIT - 100)})
    assert fits.status_code == 200, fits.text


@pytest.fixture
def guarded(brokers: BrokerFactory) -> BrokerProcess:
    return brokers.start("guarded", "--auth-token", "ops=secret")


async def test_a_broker_with_tokens_requires_a_bearer_token(
    guarded: BrokerProcess, db_dsn: str, namespace: str
) -> None:
    async with http_client(guarded) as anonymous, http_client(guarded, "wrong") as wrong:
        for client in (anonymous, wrong):
            refused = await client.post("/queues/q/jobs", json={"data": 1})
            assert refused.status_code == 401
            assert refused.json() == {"ok": False, "error": "Unauthorized"}
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert (await client.get("/queues/q/events")).status_code == 401
            assert (await client.get("/metrics")).status_code == 401
        assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0
        for open_path in ("/healthz", "/readyz", "/openapi.json", "/docs"):
            assert (await anonymous.get(open_path)).status_code == 200, open_path

    async with http_client(guarded, "secret") as allowed:
        pushed = await allowed.post("/queues/q/jobs", json={"data": 1, "maxAttempts": 1})
        assert pushed.status_code == 200, pushed.text
        assert (await allowed.get("/metrics")).status_code == 200
        job_id = pushed.json()["id"]
        token = (await allowed.get("/queues/q/jobs", params={"owner": "w"})).json()["token"]
        await allowed.post(f"/jobs/{job_id}/fail", json={"token": token, "error": "x"})
        purged = await allowed.post("/queues/q/dlq/purge", json={"why": "cleanup"})
        assert purged.json()["count"] == 1
    audit = await sql(
        db_dsn, "SELECT actor, reason FROM pgqueue_dlq_audit WHERE namespace = $1", namespace
    )
    assert [(row["actor"], row["reason"]) for row in audit] == [("ops", "cleanup")], (
        "the token's name is the actor"
    )


async def test_a_broker_without_tokens_serves_metrics_openly(http: httpx.AsyncClient) -> None:
    answer = await http.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
