"""Hostile names and payloads on a real broker: each is refused with a clear error
or stored verbatim and read back exactly; nothing is executed, and the broker
keeps serving (a control job pushed first is still there, as pushed)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from pgqueue.client.connection import Connection
from pgqueue.protocol import encode_frame
from tests.acceptance.conftest import BrokerFactory

SQLISH = [
    "'; DROP TABLE pgqueue_jobs; --",
    'q" OR 1=1; --',
    "q'); DELETE FROM pgqueue_jobs WHERE ('a'='a",
    "$1; SELECT pg_sleep(10)",
    "q\x00nul",
    "%s%s%n",
    "../../etc/passwd",
    "ünïcødé 🎉 队列",
]


@pytest.fixture
async def broker_pair(brokers: BrokerFactory) -> AsyncIterator[tuple[Connection, Connection]]:
    broker = brokers.start("hostile", http=False)
    hostile = await Connection.open("127.0.0.1", broker.tcp_port)
    control = await Connection.open("127.0.0.1", broker.tcp_port)
    yield hostile, control
    await hostile.close()
    await control.close()


def clear_refusal(answer: dict[str, Any]) -> None:
    assert answer["ok"] is False
    assert isinstance(answer["error"], str) and answer["error"]
    assert "Internal server error" not in answer["error"], answer


async def still_serving(control: Connection, control_id: str) -> None:
    assert (await control.call("Ping"))["data"]["pong"] is True
    job = (await control.call("GetJob", {"id": control_id}))["job"]
    assert job is not None and job["data"] == {"control": True}


async def push_control(control: Connection) -> str:
    answer = await control.call(
        "PUSH", {"queue": "control", "name": "n", "data": {"control": True}}
    )
    return str(answer["id"])


@pytest.mark.parametrize("name", SQLISH)
async def test_a_hostile_queue_or_job_name_is_refused_or_stored_verbatim(
    broker_pair: tuple[Connection, Connection], name: str
) -> None:
    hostile, control = broker_pair
    control_id = await push_control(control)
    for queue in (name, "hostile-names"):  # as the queue (the name rule), then as job name
        answer = await hostile.request({"cmd": "PUSH", "queue": queue, "name": name, "data": name})
        if answer["ok"]:
            job = (await hostile.call("GetJob", {"id": answer["id"]}))["job"]
            assert (job["queue"], job["name"], job["data"]) == (queue, name, name)
            assert (await hostile.call("Count", {"queue": queue}))["count"] == 1
            await hostile.call("Obliterate", {"queue": queue, "force": True})
        else:
            clear_refusal(answer)
    await still_serving(control, control_id)


async def test_a_payload_is_read_back_exactly_key_order_integers_and_text(
    broker_pair: tuple[Connection, Connection],
) -> None:
    hostile, control = broker_pair
    control_id = await push_control(control)
    payload = {
        "z": 1,
        "a": "'; DROP TABLE pgqueue_jobs; --",
        "m": {"y": [3, 2, 1], "b": None, "x": True},
        "max": 2**53 - 1,
        "min": -(2**53) + 1,
        "float": 0.1,
        "text": "ünïcødé 🎉 \u2028 \\ \" '",
        "nested": _nest(90),
        "": "empty key",
    }
    answer = await hostile.call("PUSH", {"queue": "exact", "name": "n", "data": payload})
    job = (await hostile.call("GetJob", {"id": answer["id"]}))["job"]
    assert job["data"] == payload
    assert list(job["data"]) == list(payload), "key order"
    assert list(job["data"]["m"]) == list(payload["m"])
    await still_serving(control, control_id)


def _nest(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


async def test_a_nul_byte_in_a_payload_is_refused_clearly_or_kept(
    broker_pair: tuple[Connection, Connection],
) -> None:
    hostile, control = broker_pair
    control_id = await push_control(control)
    data = {"a\x00key": "a\x00value"}
    answer = await hostile.request({"cmd": "PUSH", "queue": "nul", "name": "n", "data": data})
    if answer["ok"]:
        job = (await hostile.call("GetJob", {"id": answer["id"]}))["job"]
        assert job["data"] == data
    else:
        clear_refusal(answer)
    await still_serving(control, control_id)


async def test_a_lone_surrogate_and_invalid_utf8_are_refused_clearly(
    broker_pair: tuple[Connection, Connection],
) -> None:
    hostile, control = broker_pair
    control_id = await push_control(control)
    # {"cmd": "PUSH", "queue": <str of the UTF-8-ish bytes of U+D800>}: no encoder makes it
    body = b"\x82\xa3cmd\xa4PUSH\xa5queue\xa3\xed\xa0\x80"
    hostile.send_raw(encode_frame(body))
    clear_refusal(await hostile.next_raw_answer())
    await still_serving(control, control_id)


async def test_ten_thousand_levels_of_nesting_are_refused_clearly(
    broker_pair: tuple[Connection, Connection],
) -> None:
    hostile, control = broker_pair
    control_id = await push_control(control)
    body = b"\x84\xa3cmd\xa4PUSH\xa5queue\xa1q\xa4name\xa1n\xa4data" + b"\x91" * 10_000 + b"\xc0"
    hostile.send_raw(encode_frame(body))
    clear_refusal(await hostile.next_raw_answer())
    await still_serving(control, control_id)


@pytest.mark.parametrize("depth", [150, 250])
async def test_a_request_nested_past_the_decoder_limit_gets_its_refusal_by_req_id(
    broker_pair: tuple[Connection, Connection], depth: int
) -> None:
    """Deeper than the decoder's 128 levels but encodable (the SDK sends up to 256): the
    refusal must carry the request's reqId, else its client waits out its timeout."""
    hostile, control = broker_pair
    control_id = await push_control(control)
    push = {"cmd": "PUSH", "queue": "deep", "name": "n", "data": _nest(depth)}
    answer = await hostile.request(push, timeout=10)
    clear_refusal(answer)
    assert "nested deeper" in answer["error"]
    await still_serving(control, control_id)


async def test_a_huge_string_is_kept_below_the_payload_limit_and_refused_above(
    broker_pair: tuple[Connection, Connection],
) -> None:
    hostile, control = broker_pair
    control_id = await push_control(control)
    big = "x" * (4 * 1024 * 1024)
    answer = await hostile.call("PUSH", {"queue": "big", "name": "n", "data": big})
    assert (await hostile.call("GetJob", {"id": answer["id"]}))["job"]["data"] == big
    too_big = "y" * (12 * 1024 * 1024)
    clear_refusal(await hostile.request({"cmd": "PUSH", "queue": "big", "data": too_big}))
    assert (await hostile.call("Count", {"queue": "big"}))["count"] == 1
    await still_serving(control, control_id)


async def test_huge_arrays_in_pushb_and_ackb_are_refused_clearly_or_served(
    broker_pair: tuple[Connection, Connection],
) -> None:
    hostile, control = broker_pair
    control_id = await push_control(control)
    jobs = [{"name": "n", "data": i} for i in range(100_000)]
    pushed = await hostile.request({"cmd": "PUSHB", "queue": "many", "jobs": jobs})
    count = (await hostile.call("Count", {"queue": "many"}))["count"]
    if pushed["ok"]:
        assert count == len(jobs)
    else:
        clear_refusal(pushed)
        assert count == 0, "a refused batch wrote nothing"
    ids = [f"{i:032x}" for i in range(100_000)]
    acked = await hostile.request({"cmd": "ACKB", "ids": ids})
    if not acked["ok"]:
        clear_refusal(acked)
    await still_serving(control, control_id)
