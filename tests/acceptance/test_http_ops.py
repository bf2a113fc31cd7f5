"""Operating a broker over HTTP: metrics, liveness, readiness, the API documents."""

from __future__ import annotations

import asyncio
import re
import signal

import asyncpg
import pytest

from pgqueue.client.connection import Connection
from pgqueue.server.http.binding import path_params
from pgqueue.server.http.openapi import openapi_path
from pgqueue.server.http.routes import ENDPOINTS, SYSTEM_ROUTES
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory
from tests.acceptance.http_support import http_client
from tests.helpers import sql


def sample(text: str, name: str, labels: str) -> float | None:
    found = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


async def test_metrics_count_commands_from_both_transports(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http:
        await http.post("/queues/q/jobs", json={"data": 1})
        await http.post("/queues/q/jobs", json={"data": 2, "priority": "high"})
        tcp = await Connection.open("127.0.0.1", broker.tcp_port)
        try:
            await tcp.call("Ping")
        finally:
            await tcp.close()
        answer = await http.get("/metrics")
    assert answer.status_code == 200
    text = answer.text
    assert sample(text, "pgqueue_commands_total", 'command="PUSH",outcome="ok"') == 1
    assert sample(text, "pgqueue_commands_total", 'command="PUSH",outcome="error"') == 1
    assert sample(text, "pgqueue_commands_total", 'command="Ping",outcome="ok"') == 1
    route = 'method="POST",route="/queues/{queue}/jobs",status="400"'
    assert sample(text, "pgqueue_http_requests_total", route) == 1
    assert "# TYPE pgqueue_command_duration_seconds histogram" in text


async def test_liveness_and_readiness_of_a_healthy_broker(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http:
        live = await http.get("/healthz")
        assert (live.status_code, live.json()["ok"]) == (200, True)
        for path in ("/readyz", "/ready", "/health"):
            ready = await http.get(path)
            assert ready.status_code == 200, ready.text
            body = ready.json()
            assert body["ready"] is True and body["degraded"] == []
            assert {"database", "schema", "session", "draining"} <= set(body["checks"])
            assert body["warnings"] == []
            assert body["checks"]["listen"]["ok"] is True
            assert body["checks"]["maintenance"]["leader"] is True
            assert body["checks"]["session"]["brokerId"] == "a"


async def test_readiness_turns_503_when_the_broker_session_is_fenced(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    broker = brokers.start("a", "--session-heartbeat-ms", "100")
    async with http_client(broker) as http:
        assert (await http.get("/readyz")).status_code == 200
        await sql(
            db_dsn,
            "UPDATE pgqueue_brokers SET session_id = gen_random_uuid()"
            " WHERE namespace = $1 AND broker_id = $2",
            namespace,
            "a",
        )

        async def not_ready() -> bool:
            return (await http.get("/readyz")).status_code == 503

        await eventually(not_ready, timeout=20, message="readyz reports the fenced session")
        body = (await http.get("/readyz")).json()
        assert body["ready"] is False and body["degraded"] == ["session"]
        assert body["checks"]["session"]["fenced"] is True
        assert body["checks"]["database"]["ok"] is True
        live = await http.get("/healthz")
        assert live.status_code == 200, "a fenced broker still lives"


async def test_the_openapi_document_lists_every_route(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http:
        answer = await http.get("/openapi.json")
        docs = await http.get("/docs")
    assert answer.status_code == 200
    document = answer.json()
    assert document["openapi"].startswith("3.")
    listed = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    expected = {(e.method, e.path) for e in ENDPOINTS} | {
        (r.method, openapi_path(r.path)) for r in SYSTEM_ROUTES
    }
    assert listed == expected
    for endpoint in ENDPOINTS:
        operation = document["paths"][endpoint.path][endpoint.method.lower()]
        assert operation["summary"] == endpoint.summary
        assert operation["x-command"] == endpoint.command
        declared = [p["name"] for p in operation["parameters"] if p["in"] == "path"]
        assert declared == path_params(endpoint.path)
        assert ("requestBody" in operation) == endpoint.reads_body
    push = document["paths"]["/queues/{queue}/jobs"]["post"]["requestBody"]
    assert "data" in push["content"]["application/json"]["schema"]["properties"]
    paths = document["paths"].values()
    operation_ids = [op["operationId"] for item in paths for op in item.values()]
    assert len(operation_ids) == len(set(operation_ids))

    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    assert "<script" not in docs.text
    for endpoint in ENDPOINTS:
        assert endpoint.path in docs.text


@pytest.mark.parametrize("token", [None, "secret"])
async def test_the_documents_stay_open_when_tokens_are_set(
    brokers: BrokerFactory, token: str | None
) -> None:
    broker = brokers.start("a", "--auth-token", "ops=secret")
    async with http_client(broker, token) as http:
        assert (await http.get("/openapi.json")).status_code == 200
        assert (await http.get("/healthz")).status_code == 200


async def test_a_draining_broker_is_not_ready_and_refuses_new_requests(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("a")
    tcp = await Connection.open("127.0.0.1", broker.tcp_port)
    async with http_client(broker) as http:
        assert (await http.get("/readyz")).status_code == 200  # a kept-alive connection
        # A WaitJob in flight on TCP keeps the drain going while we look (long polls
        # end at once when a broker drains; a WaitJob runs to its timeout).
        job_id = (await tcp.call("PUSH", {"queue": "q", "name": "n", "data": 1}))["id"]
        long_poll = asyncio.create_task(tcp.call("WaitJob", {"id": job_id, "timeout": 3000}))
        await tcp.call("Ping")  # answered after the WaitJob frame was read: it is in flight
        broker.process.send_signal(signal.SIGTERM)

        async def draining() -> bool:
            answer = await http.get("/readyz")
            return answer.status_code == 503 and "draining" in answer.json()["degraded"]

        await eventually(draining, timeout=20, message="readyz reports the drain")
        refused = await http.get("/queues")
        assert refused.status_code == 503
        assert refused.json() == {
            "ok": False,
            "error": "Broker is draining, retry on another broker",
        }
        assert (await long_poll)["completed"] is False
    await tcp.close()
    assert broker.terminate() == 0


async def test_metrics_show_queue_gauges_latencies_and_vacuum_health(
    brokers: BrokerFactory, db_dsn: str
) -> None:
    broker = brokers.start("m")
    tcp = await Connection.open("127.0.0.1", broker.tcp_port)
    holder = None
    try:
        await tcp.call(
            "PUSHB", {"queue": "mq", "jobs": [{"name": "n", "data": i} for i in range(3)]}
        )
        pulled = await tcp.call("PULLB", {"queue": "mq", "count": 2, "owner": "w"})
        await tcp.call("ACKB", {"ids": [pulled["jobs"][0]["id"]], "tokens": [pulled["tokens"][0]]})
        # A transaction left open holds the xmin horizon back: the metrics name it.
        import asyncpg

        holder = await asyncpg.connect(db_dsn)
        await holder.execute("BEGIN")
        await holder.execute("SELECT pg_current_xact_id()")
        holder_pid = holder.get_server_pid()
        async with http_client(broker) as http:

            async def scraped() -> str | None:
                text = (await http.get("/metrics")).text
                waiting = sample(text, "pgqueue_jobs", 'queue="mq",state="waiting"')
                completed = sample(text, "pgqueue_jobs", 'queue="mq",state="completed"')
                pushed = sample(text, "pgqueue_jobs_pushed_total", 'queue="mq"')
                ok = waiting == 1 and completed == 1 and pushed == 3
                ok = ok and f'holder="{holder_pid}"' in text
                return text if ok else None

            text = await eventually(scraped, timeout=20, interval=0.5)
        assert sample(text, "pgqueue_jobs", 'queue="mq",state="active"') == 1
        assert sample(text, "pgqueue_pickup_latency_seconds_count", 'queue="mq"') == 2
        assert sample(text, "pgqueue_broker_sessions", 'status="live"') == 1
        assert re.search(r"^pgqueue_leader 1\.0$", text, re.MULTILINE)
        assert sample(text, "pgqueue_table_dead_tuples", 'table="pgqueue_jobs"') is not None
        assert re.search(r"^pgqueue_oldest_xmin_age_transactions \d", text, re.MULTILINE)
        assert re.search(r"^pgqueue_projection_entries \d", text, re.MULTILINE)
    finally:
        if holder is not None:
            await holder.close()
        await tcp.close()


async def test_readyz_and_metrics_name_a_prepared_transaction_holding_the_horizon(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    """Issue 9 item 4: a forgotten prepared transaction is named (its gid) as a
    readiness warning and in the xmin-holder metric; the broker stays ready."""
    broker = brokers.start("a")
    holder = await asyncpg.connect(db_dsn)
    gid = f"pgqueue-readyz-{namespace}"
    try:
        await holder.execute("BEGIN")
        await holder.execute("SELECT pg_current_xact_id()")
        await holder.execute(f"PREPARE TRANSACTION '{gid}'")
        async with http_client(broker) as http:
            ready = await http.get("/readyz")
            assert ready.status_code == 200, ready.text
            body = ready.json()
            assert "xminHorizon" in body["warnings"]
            check = body["checks"]["xminHorizon"]
            assert check["kind"] == "prepared_xact" and check["holder"] == gid
            metrics = (await http.get("/metrics")).text
            holders = [line for line in metrics.splitlines() if "xmin_holder" in line]
            assert any(f'holder="{gid}"' in h and 'kind="prepared_xact"' in h for h in holders)
    finally:
        await holder.execute(f"ROLLBACK PREPARED '{gid}'")
        await holder.close()
