"""Every documented field of the wrong type is refused, naming the field (G10).

One table over the job options of bunqueue's job model (reference §2.1, read
from their declarations in pgqueue/vocabulary/job_options.py) and the
fields of the commands the broker serves (§1.6), also those it stores or ignores
(``durable`` has no effect in PostgreSQL, but ``durable: "yes"`` is still a wrong
type).  Each case is sent over TCP and, where a route carries the field, over HTTP;
each must be refused with an error that names the field, and change nothing.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pgqueue.client.connection import Connection
from pgqueue.server.http.binding import Endpoint, path_params
from pgqueue.server.http.routes import ENDPOINTS
from pgqueue.vocabulary.job_options import Kind, wire_options
from tests.acceptance.command_support import TABLES, snapshot
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.acceptance.http_support import JSON, http_client

JOB = "strict-job"
TOKEN = "1:strict-token"

# A value of the wrong type for each kind of job option.
WRONG: dict[Kind, Any] = {
    "integer": "5",
    "number": "5",
    "boolean": "yes",
    "text": 5,
    "id": 5,
    "ids": "x",
    "texts": "x",
    "backoff": "1000",
    "dedup": "x",
    "deduplication": "x",
    "removal": "yes",
    "group": ["g"],
    "object": "x",
}

# (option, a value of the wrong type): every job option the wire takes, from its
# declaration (so a new option is covered by declaring it), the job's name and the
# members of the map options.
JOB_OPTIONS: list[tuple[str, Any]] = [
    ("name", 5),
    *((name, WRONG[o.kind]) for o in wire_options() for name in (o.wire, *o.wire_aliases)),
    ("backoff.type", 5),
    ("backoff.delay", "5"),
    ("dedup.ttl", "5"),
    ("dedup.extend", "yes"),
    ("dedup.replace", "yes"),
    ("removeOnComplete.age", "5"),
    ("removeOnFail.count", "5"),
]

# (command, valid fields, field, a value of the wrong type): the command fields.
COMMANDS: list[tuple[str, dict[str, Any], str, Any]] = [
    ("PULL", {"queue": "q"}, "owner", 5),
    ("PULL", {"queue": "q"}, "lockTtl", "5"),
    ("PULL", {"queue": "q"}, "timeout", "5"),
    ("PULL", {"queue": "q"}, "detach", "yes"),
    ("PULL", {"queue": "q"}, "group", "x"),
    ("PULLB", {"queue": "q", "count": 1}, "count", "1"),
    ("PULLB", {"queue": "q", "count": 1}, "group", "x"),
    ("ACK", {"id": JOB, "token": TOKEN}, "token", 5),
    ("ACK", {"id": JOB, "token": TOKEN}, "removeOnComplete", "yes"),
    ("ACKB", {"ids": [JOB], "tokens": [TOKEN]}, "ids", "x"),
    ("ACKB", {"ids": [JOB], "tokens": [TOKEN]}, "tokens", "x"),
    ("ACKB", {"ids": [JOB], "tokens": [TOKEN]}, "results", "x"),
    ("ACKB", {"ids": [JOB], "tokens": [TOKEN]}, "removeOnCompletes", "x"),
    ("FAIL", {"id": JOB, "token": TOKEN}, "error", 5),
    ("FAIL", {"id": JOB, "token": TOKEN}, "stack", "x"),
    ("FAIL", {"id": JOB, "token": TOKEN}, "unrecoverable", "yes"),
    ("FAIL", {"id": JOB, "token": TOKEN}, "removeOnFail", "yes"),
    ("JobHeartbeat", {"id": JOB, "token": TOKEN}, "duration", "5"),
    ("JobHeartbeatB", {"ids": [JOB], "tokens": [TOKEN]}, "tokens", "x"),
    ("ExtendLock", {"id": JOB, "token": TOKEN, "duration": 5}, "duration", "5"),
    ("ExtendLocks", {"ids": [JOB], "tokens": [TOKEN], "durations": [5]}, "durations", "5"),
    ("Progress", {"id": JOB, "progress": 5}, "progress", "5"),
    ("Progress", {"id": JOB, "progress": 5}, "message", 5),
    ("AddLog", {"id": JOB, "message": "m"}, "message", 5),
    ("AddLog", {"id": JOB, "message": "m"}, "level", 5),
    ("Heartbeat", {"id": "w"}, "activeJobs", "5"),
    ("Heartbeat", {"id": "w"}, "processed", "5"),
    ("Heartbeat", {"id": "w"}, "failed", "5"),
    ("RegisterWorker", {"name": "w", "queues": ["q"]}, "queues", "q"),
    ("RegisterWorker", {"name": "w", "queues": ["q"]}, "concurrency", "5"),
    ("RegisterWorker", {"name": "w", "queues": ["q"]}, "workerId", 5),
    ("RegisterWorker", {"name": "w", "queues": ["q"]}, "hostname", 5),
    ("RegisterWorker", {"name": "w", "queues": ["q"]}, "pid", "5"),
    ("RegisterWorker", {"name": "w", "queues": ["q"]}, "startedAt", "5"),
    ("GetJobs", {"queue": "q"}, "offset", "5"),
    ("GetJobs", {"queue": "q"}, "limit", "5"),
    ("GetJobs", {"queue": "q"}, "asc", "yes"),
    ("WaitJob", {"id": JOB}, "timeout", "5"),
    ("GetLogs", {"id": JOB}, "start", "5"),
    ("GetLogs", {"id": JOB}, "end", "5"),
    ("ChangePriority", {"id": JOB, "priority": 1}, "priority", "1"),
    ("ChangePriority", {"id": JOB, "priority": 1}, "lifo", "yes"),
    ("PromoteJobs", {"queue": "q"}, "count", "5"),
    ("MoveToDelayed", {"id": JOB, "delay": 5}, "delay", "5"),
    ("MoveToDelayed", {"id": JOB, "delay": 5}, "token", 5),
    ("ChangeDelay", {"id": JOB, "delay": 5}, "delay", "5"),
    ("MoveToWait", {"id": JOB}, "token", 5),
    ("Discard", {"id": JOB}, "token", 5),
    ("ClearLogs", {"id": JOB}, "keepLogs", "5"),
    ("Obliterate", {"queue": "q"}, "force", "yes"),
    ("Clean", {"queue": "q", "grace": 0}, "grace", "0"),
    ("Clean", {"queue": "q", "grace": 0}, "state", 5),
    ("Clean", {"queue": "q", "grace": 0}, "limit", "5"),
    ("RetryCompleted", {"queue": "q"}, "id", 5),
    ("RetryCompleted", {"queue": "q"}, "count", "5"),
    ("RetryCompleted", {"queue": "q"}, "timestamp", "5"),
    ("Dlq", {"queue": "q"}, "count", "5"),
    ("Dlq", {"queue": "q"}, "filter", "x"),
    ("RetryDlq", {"queue": "q"}, "jobId", 5),
    ("RetryDlq", {"queue": "q"}, "count", "5"),
    ("RetryDlq", {"queue": "q"}, "filter", "x"),
    ("RemoveDlqJob", {"queue": "q", "jobId": JOB}, "jobId", 5),
    ("SetDlqConfig", {"queue": "q", "config": {}}, "config", "x"),
    ("SetStallConfig", {"queue": "q", "config": {}}, "config", "x"),
    ("AddWebhook", {"url": "https://example.com/h", "events": ["job.pushed"]}, "url", 5),
    ("AddWebhook", {"url": "https://example.com/h", "events": ["job.pushed"]}, "events", "x"),
    ("AddWebhook", {"url": "https://example.com/h", "events": ["job.pushed"]}, "queue", 5),
    ("AddWebhook", {"url": "https://example.com/h", "events": ["job.pushed"]}, "secret", 5),
    ("SetWebhookEnabled", {"id": "wh", "enabled": True}, "enabled", "yes"),
    ("TrimEvents", {"queue": "q", "maxLength": 5}, "maxLength", "5"),
    ("Dlq", {"queue": "q"}, "filter.reason", 5),
    ("Dlq", {"queue": "q"}, "filter.queue", 5),
    ("Dlq", {"queue": "q"}, "filter.olderThan", "5"),
    ("Dlq", {"queue": "q"}, "filter.newerThan", "5"),
    ("Dlq", {"queue": "q"}, "filter.retriable", "yes"),
    ("Dlq", {"queue": "q"}, "filter.expired", "yes"),
    ("Dlq", {"queue": "q"}, "filter.limit", "5"),
    ("Dlq", {"queue": "q"}, "filter.offset", "5"),
    ("RetryDlq", {"queue": "q"}, "filter.reason", 5),
    ("SetDlqConfig", {"queue": "q", "config": {}}, "config.autoRetry", "yes"),
    ("SetDlqConfig", {"queue": "q", "config": {}}, "config.autoRetryInterval", "5"),
    ("SetDlqConfig", {"queue": "q", "config": {}}, "config.maxAutoRetries", "5"),
    ("SetDlqConfig", {"queue": "q", "config": {}}, "config.maxAge", "5"),
    ("SetDlqConfig", {"queue": "q", "config": {}}, "config.maxEntries", "5"),
    ("SetStallConfig", {"queue": "q", "config": {}}, "config.enabled", "yes"),
    ("SetStallConfig", {"queue": "q", "config": {}}, "config.stallInterval", "5"),
    ("SetStallConfig", {"queue": "q", "config": {}}, "config.maxStalls", "5"),
    ("SetStallConfig", {"queue": "q", "config": {}}, "config.gracePeriod", "5"),
    ("GetJobs", {"queue": "q"}, "state", 5),
    ("GetJob", {"id": JOB}, "id", 5),
    ("GetJobByCustomId", {"customId": JOB}, "customId", 5),
    ("Update", {"id": JOB, "data": 1}, "id", 5),
    ("UnregisterWorker", {"workerId": "w"}, "workerId", 5),
    ("Heartbeat", {"id": "w"}, "id", 5),
    ("RemoveWebhook", {"webhookId": "wh"}, "webhookId", 5),
    ("SubscribeEvents", {"queue": "q"}, "queue", 5),
    ("Metrics", {"queue": "q", "type": "completed"}, "type", 5),
    ("Metrics", {"queue": "q", "type": "completed"}, "start", "5"),
    ("Metrics", {"queue": "q", "type": "completed"}, "end", "5"),
    ("WaitJob", {"id": JOB}, "id", 5),
    ("Hello", {"protocolVersion": 3}, "protocolVersion", "3"),
    ("Hello", {"protocolVersion": 3}, "capabilities", "pipelining"),
    ("Auth", {"token": "t"}, "token", 5),
    ("PUSHF", {"jobs": [{"id": JOB, "queue": "q", "input": {"data": 1}}]}, "jobs", "x"),
    ("RemoveDeduplicationKey", {"queue": "q", "deduplicationId": "d"}, "deduplicationId", 5),
    ("GetDeduplicationJobId", {"queue": "q", "deduplicationId": "d"}, "deduplicationId", 5),
]


def _with(fields: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``fields`` with ``path`` (``a.b`` for a member of a map option) set to ``value``."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in fields.items()}
    head, _, member = path.partition(".")
    if not member:
        out[head] = value
        return out
    parent = out.setdefault(head, {})
    parent[member] = value
    if head == "dedup":
        out.setdefault("uniqueKey", "k")
    return out


def _cases() -> list[tuple[str, dict[str, Any], str]]:
    cases: list[tuple[str, dict[str, Any], str]] = []
    for option, bad in JOB_OPTIONS:
        job = _with({"name": "n", "data": 1}, option, bad)
        cases.append(("PUSH", {"queue": "strict", **job}, option))
        cases.append(("PUSHB", {"queue": "strict", "jobs": [{"data": 0}, job]}, option))
    for cmd, valid, name, bad in COMMANDS:
        cases.append((cmd, _with(valid, name, bad), name))
    return cases


CASES = _cases()


def _route(cmd: str, name: str) -> Endpoint | None:
    """The route that carries ``name`` of ``cmd`` in its JSON body, if any (a path
    parameter is always text)."""
    top = name.partition(".")[0]
    for endpoint in ENDPOINTS:
        if endpoint.command != cmd or endpoint.method == "GET":
            continue
        if top in path_params(endpoint.path):
            return None
        declared = {p.name for p in endpoint.body or ()}
        if endpoint.open_body or top in declared:
            return endpoint
        if endpoint.config_body and top == "config":
            return endpoint
    return None


@pytest.fixture(scope="module")
def broker(db_dsn: str) -> Iterator[tuple[BrokerProcess, str]]:
    namespace = f"s{uuid.uuid4().hex[:10]}"
    factory = BrokerFactory(db_dsn, namespace, Path(tempfile.mkdtemp(prefix="pgqueue-strict-")))
    try:
        yield factory.start("strict"), namespace
    finally:
        factory.stop_all()


@pytest.fixture
async def conn(broker: tuple[BrokerProcess, str]) -> AsyncIterator[Connection]:
    connection = await Connection.open("127.0.0.1", broker[0].tcp_port)
    try:
        yield connection
    finally:
        await connection.close()


def _names_the_field(error: str, name: str) -> bool:
    error = error.lower()
    return name.lower() in error or name.rpartition(".")[2].lower() in error


@pytest.mark.parametrize(("cmd", "fields", "name"), CASES, ids=[f"{c}-{n}" for c, _, n in CASES])
async def test_a_documented_field_of_the_wrong_type_is_refused_naming_it_on_tcp_and_http(
    broker: tuple[BrokerProcess, str],
    conn: Connection,
    db_dsn: str,
    cmd: str,
    fields: dict[str, Any],
    name: str,
) -> None:
    process, namespace = broker
    before = await snapshot(db_dsn, namespace)
    answer = await conn.request({"cmd": cmd, **fields})
    assert answer["ok"] is False, f"TCP {cmd} accepted {name}={fields}: {answer}"
    assert _names_the_field(answer["error"], name), f"TCP error {answer['error']!r}"
    endpoint = _route(cmd, name)
    if endpoint is not None:
        path = endpoint.path
        body = dict(fields)
        for param in path_params(endpoint.path):
            value = body.pop(param, None)
            value = value if isinstance(value, str) else ("strict" if param == "queue" else JOB)
            path = path.replace("{" + param + "}", value)
        if endpoint.config_body:
            body = {"config": body.get("config")}
        async with http_client(process) as http:
            response = await http.request(endpoint.method, path, json=body, headers=JSON)
        assert response.status_code == 400, f"HTTP {cmd} {name}: {response.status_code}"
        assert _names_the_field(response.json()["error"], name), response.json()
    after = await snapshot(db_dsn, namespace)
    assert [t for t in TABLES if after[t] != before[t]] == []
