"""Data comes back as it was sent (issue 9): key order, integers, one encoding, on both
transports (embedded, and TCP through real broker processes)."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import uuid
from typing import Any

import pytest

from pgqueue.client import Job
from pgqueue.errors import JobFailed, ValidationError
from tests.acceptance.sdk_support import (  # noqa: F401 - fixtures
    SDK,
    connection,
    module_namespace,
    queue_name,
    sdk,
    shared_brokers,
    transport_kind,
)


def text(value: Any) -> str:
    """JSON with the keys in their order (dict equality ignores the order)."""
    return json.dumps(value)


DATA = {"zeta": 1, "alpha": {"y": 2, "b": [3, {"k": 4, "c": 5}]}, "mid": "m"}
RESULT = {"sum": 3, "by": "worker"}
PROGRESS = {"step": 2, "of": 5, "at": "parse"}


async def test_data_results_and_progress_come_back_with_their_keys_in_the_order_sent(
    sdk: SDK,
) -> None:
    queue = sdk.queue()

    async def handler(job: Job) -> dict[str, Any]:
        await job.update_progress(PROGRESS)
        return RESULT

    sdk.worker(handler)
    job = await queue.add("ordered", DATA)
    assert text(await queue.wait_for(job, timeout=15)) == text(RESULT)
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert text(stored.data) == text(DATA)
    assert text(stored.returnvalue) == text(RESULT)
    assert text(stored.progress) == text(PROGRESS)
    assert text(await queue.get_result(job.id)) == text(RESULT)


async def test_a_parent_reads_its_childrens_values_with_their_keys_in_order(sdk: SDK) -> None:
    seen: list[str] = []

    async def handler(job: Job) -> Any:
        if job.name == "child":
            return {"z": job.data["n"], "a": "last"}
        values = await job.get_children_values()
        seen.extend(text(value) for value in values.values())
        return None

    sdk.worker(handler)
    tree = await sdk.flows().add(
        {
            "name": "parent",
            "queue_name": sdk.queue_name,
            "data": {},
            "children": [{"name": "child", "queue_name": sdk.queue_name, "data": {"n": 1}}],
        }
    )
    await sdk.queue().wait_for(tree.job, timeout=15)
    assert seen == [text({"z": 1, "a": "last"})]


async def test_integers_are_kept_exactly_and_never_become_floats(
    sdk: SDK, transport_kind: str
) -> None:
    queue = sdk.queue()
    numbers = {"i32": 7, "wide": 2**53 + 1, "i64min": -(2**63), "u64max": 2**64 - 1}

    async def handler(job: Job) -> dict[str, int]:
        return dict(job.data)

    sdk.worker(handler)
    job = await queue.add("numbers", numbers)
    result = await queue.wait_for(job, timeout=15)
    assert result == numbers
    assert all(type(value) is int for value in result.values())
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.data == numbers
    assert all(type(value) is int for value in stored.data.values())

    huge = {"big": 2**70}
    if transport_kind == "embedded":  # any size in-process
        added = await queue.add("huge", huge)
        assert await queue.wait_for(added, timeout=15) == huge
        back = await queue.get_job(added.id)
        assert back is not None and back.data == huge and type(back.data["big"]) is int
    else:  # msgpack carries 64 bits: refused, naming the field, nothing written
        with pytest.raises(ValidationError) as refused:
            await queue.add("huge", huge)
        assert "data" in str(refused.value) and "64" in str(refused.value)


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int


NOT_JSON = [
    pytest.param(datetime.datetime(2026, 1, 2, 3, 4, 5), "datetime", id="datetime"),
    pytest.param(uuid.UUID(int=1), "UUID", id="uuid"),
    pytest.param(decimal.Decimal("1.5"), "Decimal", id="decimal"),
    pytest.param(Color.RED, "Color", id="enum"),
    pytest.param(Point(1), "Point", id="dataclass"),
]


@pytest.mark.parametrize(("value", "type_name"), NOT_JSON)
async def test_a_value_json_cannot_hold_is_refused_alike_on_both_transports(
    sdk: SDK, value: Any, type_name: str
) -> None:
    queue = sdk.queue()
    with pytest.raises(ValidationError) as refused:
        await queue.add("odd", {"when": value})
    assert str(refused.value) == (
        f"Job data must be JSON serializable: {type_name} values are not allowed"
    )
    assert refused.value.field == "data"
    assert (await queue.get_counts())["waiting"] == 0


async def test_a_handler_result_that_cannot_be_encoded_fails_the_job_at_once(
    sdk: SDK,
) -> None:
    queue = sdk.queue()

    async def handler(job: Job) -> Any:
        return {"at": datetime.datetime(2026, 1, 2)} if job.name == "odd" else "fine"

    sdk.worker(handler, lock_duration_ms=120_000)
    odd = await queue.add("odd", {}, attempts=1)
    fine = await queue.add("fine", {})
    with pytest.raises(JobFailed) as failed:
        await queue.wait_for(odd, timeout=10)  # well within the lease
    assert "Job result must be JSON serializable: datetime values are not allowed" in str(
        failed.value
    )
    assert await queue.wait_for(fine, timeout=10) == "fine"
    stored = await queue.get_job(odd.id)
    assert stored is not None and stored.state == "failed"
