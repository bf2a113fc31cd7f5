"""HTTP job bodies: an unknown field is a typo, refused as the SDK refuses it (400).

The TCP protocol stays lenient (official clients may send fields a broker version does
not know); the HTTP API is typed by hand and a misspelt option (``atempts``) silently
ignored would push a job with the wrong settings.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.acceptance.http_support import JSON, http_client
from tests.helpers import count_rows

# One valid value for every documented job option (bunqueue reference §2.1).
EVERY_OPTION: dict[str, Any] = {
    "name": "n",
    "data": {"x": 1},
    "priority": 1,
    "delay": 0,
    "maxAttempts": 3,
    "attempts": 3,
    "backoff": {"type": "fixed", "delay": 10},
    "ttl": 60_000,
    "timeout": 60_000,
    "jobId": "every-option",
    "uniqueKey": "k",
    "dedup": {"ttl": 1000},
    "debounceId": "d",
    "debounceTtl": 10,
    "dependsOn": [],
    "childrenIds": [],
    "failParentOnFailure": False,
    "removeDependencyOnFailure": False,
    "ignoreDependencyOnFailure": False,
    "continueParentOnFailure": False,
    "groupId": "g",
    "groupMaxSize": 10,
    "lifo": False,
    "removeOnComplete": {"age": 10, "count": 5},
    "removeOnFail": False,
    "stallTimeout": 1000,
    "tags": ["t"],
    "durable": True,
    "stackTraceLimit": 5,
    "keepLogs": 5,
    "sizeLimit": 100,
    "timestamp": 1_796_000_000_000,
}


@pytest.fixture
def broker(brokers: BrokerFactory) -> BrokerProcess:
    return brokers.start("a")


@pytest.fixture
async def http(broker: BrokerProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with http_client(broker) as client:
        yield client


async def test_a_misspelt_option_in_an_http_push_is_refused_and_nothing_is_written(
    http: httpx.AsyncClient, db_dsn: str, namespace: str
) -> None:
    response = await http.post("/queues/q/jobs", json={"data": 1, "atempts": 5}, headers=JSON)
    assert response.status_code == 400
    assert "unknown job option: atempts" in response.json()["error"]
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0


async def test_a_misspelt_option_in_one_entry_of_an_http_bulk_push_refuses_the_batch(
    http: httpx.AsyncClient, db_dsn: str, namespace: str
) -> None:
    jobs = [{"data": 0}, {"data": 1, "prioroty": 5}]
    response = await http.post("/queues/q/jobs/bulk", json={"jobs": jobs}, headers=JSON)
    assert response.status_code == 400
    assert response.json()["error"] == "jobs[1]: unknown job option: prioroty"
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0


async def test_every_documented_option_is_accepted_in_http_job_bodies(
    http: httpx.AsyncClient, db_dsn: str, namespace: str
) -> None:
    response = await http.post("/queues/q/jobs", json=EVERY_OPTION, headers=JSON)
    assert response.status_code == 200, response.json()
    entry = {k: v for k, v in EVERY_OPTION.items() if k != "jobId"}
    entry = {**entry, "customId": "every-option-bulk", "uniqueKey": "k2"}
    response = await http.post("/queues/q/jobs/bulk", json={"jobs": [entry]}, headers=JSON)
    assert response.status_code == 200, response.json()
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 2
