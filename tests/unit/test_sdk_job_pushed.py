"""``Job.pushed``: the jobs a push returns, made without ``__init__``, are the jobs
``Job(transport, id, name, data, queue, opts=..., waiter=...)`` makes."""

from __future__ import annotations

from typing import Any

import pytest

from pgqueue.client.job import Job
from pgqueue.client.transport import JobInput, PlainInputs
from pgqueue.manager.options import plain_specs

OPTS: list[dict[str, Any]] = [
    {},
    {"attempts": 5, "priority": 3, "timeout": 100, "stall_timeout": 7, "delay": 10},
    {"priority": 0, "job_id": "custom"},
]


def _state(job: Job) -> dict[str, Any]:
    names = [name for name in Job.__slots__ if name not in ("_raw", "_view", "_stacktrace")]
    return {name: getattr(job, name) for name in [*names, "stacktrace", "raw"]}


async def _waiter(job_id: str, timeout: float | None) -> Any:  # pragma: no cover - not called
    return None


@pytest.mark.parametrize("opts", OPTS)
def test_a_pushed_job_is_the_job_the_constructor_makes(opts: dict[str, Any]) -> None:
    transport: Any = object()
    data = {"i": 1}
    [made] = Job.pushed(transport, ["id-1"], [("n", data, opts)], "q", _waiter)
    built = Job(transport, "id-1", "n", data, "q", opts=opts, waiter=_waiter)
    assert _state(made) == _state(built)
    assert made.data is data and made.opts is not opts and made.opts == opts
    assert made.raw == built.raw == {}
    assert repr(made) == repr(built)


def test_each_pushed_job_owns_its_mutable_attributes() -> None:
    opts = {"priority": 1}
    one, two = Job.pushed(object(), ["a", "b"], [("n", 1, opts), ("n", 2, opts)], "q", None)  # type: ignore[arg-type]
    one.raw["x"] = 1
    one.opts["y"] = 2
    one.stacktrace.append("z")
    assert two.raw == {} and two.opts == opts == {"priority": 1} and two.stacktrace == []
    assert one.raw == {"x": 1} and one.raw is one.raw
    one.raw = {"w": 3}
    assert one.raw == {"w": 3}


def test_plain_inputs_are_the_inputs_queue_made_for_each_job() -> None:
    datas: list[Any] = [{"i": 1}, None, "x"]
    specs = plain_specs("q", ["a", "b", "a"], datas, max_payload_bytes=1024)
    assert specs is not None
    inputs = PlainInputs(specs, datas)
    expected = [JobInput(s.name, d, {}, s) for s, d in zip(specs, datas, strict=True)]
    assert len(inputs) == 3 and list(inputs) == expected
    assert [inputs[i] for i in range(3)] == expected
    assert [i.spec for i in inputs] == list(specs)  # (spec does not take part in ==)
    tail = inputs[1:]
    assert type(tail) is PlainInputs and list(tail) == expected[1:]
    assert inputs[0].data is datas[0] and inputs[0].opts == {}
