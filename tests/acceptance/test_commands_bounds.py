"""Documented numeric fields at their extremes, over TCP through a real broker (G10).

A value the engine's columns cannot hold is refused up front with an error naming the
field, and nothing is written; it never reaches PostgreSQL as a data exception that
comes back as ``Internal server error``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pgqueue.client.connection import Connection
from tests.acceptance import command_support as support

pair = support.pair
clients = support.clients

INT32 = 2**31
INT64 = 2**63
SAFE = 2**53 - 1
JOB = {"name": "n", "data": {}}

# (command, fields, the field the error must name); the queue is filled in per test.
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("PUSH", {**JOB, "priority": INT32}, "priority"),
    ("PUSH", {**JOB, "priority": -INT64}, "priority"),
    ("PUSH", {**JOB, "delay": SAFE}, "delay"),
    ("PUSH", {**JOB, "maxAttempts": INT32}, "maxAttempts"),
    ("PUSH", {**JOB, "attempts": INT64}, "maxAttempts"),  # its wire name
    ("PUSH", {**JOB, "backoff": 1e300}, "backoff"),
    ("PUSH", {**JOB, "backoff": {"type": "fixed", "delay": INT64}}, "backoff"),
    ("PUSH", {**JOB, "ttl": INT64}, "ttl"),
    ("PUSH", {**JOB, "timeout": INT64}, "timeout"),
    ("PUSH", {**JOB, "timestamp": 1e300}, "timestamp"),
    ("PULL", {"lockTtl": SAFE}, "lockTtl"),
    ("PULLB", {"count": INT64}, "count"),
    ("GetJobs", {"offset": SAFE}, "offset"),
    ("GetJobs", {"limit": INT64}, "limit"),
    ("RetryCompleted", {"timestamp": 1e300}, "timestamp"),
    ("RetryCompleted", {"timestamp": INT64}, "timestamp"),
    ("Heartbeat", {"activeJobs": INT32}, "activeJobs"),
    ("Heartbeat", {"activeJobs": SAFE}, "activeJobs"),
]


@pytest.mark.parametrize(("cmd", "fields", "field"), CASES)
async def test_a_value_out_of_the_columns_range_is_refused_naming_its_field(
    pair: support.Pair,
    clients: tuple[Connection, Connection],
    cmd: str,
    fields: dict[str, Any],
    field: str,
) -> None:
    a, b = clients
    queue = support.new_queue()
    if cmd == "Heartbeat":
        registered = await a.call("RegisterWorker", {"name": "w", "queues": [queue]})
        fields = {**fields, "id": registered["data"]["workerId"]}
    else:
        fields = {**fields, "queue": queue}
    before = await support.snapshot(pair.dsn, pair.namespace)
    answer = await a.request({"cmd": cmd, **fields})
    assert answer["ok"] is False, f"accepted: {answer}"
    assert answer["error"].startswith(f"{field} must be"), answer["error"]
    after = await support.snapshot(pair.dsn, pair.namespace)
    assert after == before, f"{cmd} changed stored rows"
    assert (await b.call("Ping"))["data"]["pong"] is True
