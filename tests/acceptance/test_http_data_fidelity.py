"""Data comes back as it was sent over the HTTP API (issue 9): key order and integers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.acceptance.conftest import BrokerFactory
from tests.acceptance.http_support import http_client


@pytest.fixture
async def http(brokers: BrokerFactory) -> AsyncIterator[httpx.AsyncClient]:
    async with http_client(brokers.start("a")) as client:
        yield client


def parsed(response: httpx.Response) -> dict:  # type: ignore[type-arg]
    """The body as Python's json reads it: keys in order, integers exact."""
    assert response.status_code == 200, response.text
    return json.loads(response.text)  # type: ignore[no-any-return]


async def test_a_job_read_over_http_has_its_data_and_result_as_pushed(
    http: httpx.AsyncClient,
) -> None:
    data_text = '{"zeta":1,"alpha":{"y":2,"b":3},"big":1180591620717411303424,"f":1e+20}'
    pushed = await http.post(
        "/queues/exact/jobs",
        content=f'{{"name":"n","data":{data_text}}}',
        headers={"content-type": "application/json"},
    )
    job_id = parsed(pushed)["id"]
    pulled = parsed(await http.get("/queues/exact/jobs", params={"owner": "w"}))
    assert json.dumps(pulled["job"]["data"]) == json.dumps(json.loads(data_text))
    acked = await http.post(
        f"/jobs/{job_id}/ack",
        content=f'{{"token":"{pulled["token"]}",'
        '"result":{"sum":3,"by":"w","n":18446744073709551616}}',
        headers={"content-type": "application/json"},
    )
    assert acked.status_code == 200, acked.text
    job = parsed(await http.get(f"/jobs/{job_id}"))["job"]
    data = job["data"]
    assert list(data) == ["zeta", "alpha", "big", "f"] and list(data["alpha"]) == ["y", "b"]
    assert data["big"] == 2**70 and type(data["big"]) is int
    assert data["f"] == 1e20 and type(data["f"]) is float
    result = {"sum": 3, "by": "w", "n": 2**64}
    assert json.dumps(job["returnvalue"]) == json.dumps(result)
    assert json.dumps(parsed(await http.get(f"/jobs/{job_id}/result"))["result"]) == json.dumps(
        result
    )


async def test_progress_read_over_http_keeps_its_key_order(http: httpx.AsyncClient) -> None:
    job_id = parsed(await http.post("/queues/prog/jobs", json={"data": {}}))["id"]
    pulled = parsed(await http.get("/queues/prog/jobs", params={"owner": "w"}))
    reported = await http.post(
        f"/jobs/{job_id}/progress",
        content=f'{{"token":"{pulled["token"]}","progress":{{"step":2,"of":5}}}}',
        headers={"content-type": "application/json"},
    )
    assert reported.status_code == 200, reported.text
    progress = parsed(await http.get(f"/jobs/{job_id}/progress"))
    assert json.dumps(progress["progress"]) == json.dumps({"step": 2, "of": 5})
