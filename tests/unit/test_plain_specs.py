"""The batch check of jobs without options (``plain_specs``, ``flat_values_ok``) gives
what the per-job check gives, and hands every doubtful batch back to it."""

from __future__ import annotations

import datetime
import enum
import math
import uuid
from typing import Any

import pytest

from pgqueue.errors import ValidationError
from pgqueue.jsontext import flat_values_ok, value_error
from pgqueue.manager.bulk import bulk_specs
from pgqueue.manager.options import PlainSpecs, build_job_spec, plain_specs


class Colour(enum.Enum):
    RED = 1


class Text(str):
    pass


_ACCEPTED: list[Any] = [
    None,
    0,
    -1,
    2**70,
    1.5,
    True,
    "",
    "é\u2028",
    {},
    {"i": 1, "t": 1_700_000_000.123},
    {"a": None, "b": False, "c": "x", "d": 2**64},
]
_REFUSED: list[Any] = [
    float("nan"),
    math.inf,
    {"x": -math.inf},
    "a\x00b",
    {"k": "a\x00"},
    {"a\x00": 1},
    {1: "int key"},
    Colour.RED,
    {"c": Colour.RED},
    datetime.datetime(2026, 1, 1),
    {"u": uuid.uuid4()},
    b"bytes",
]
_OTHER_SHAPES: list[Any] = [[1, 2], {"nested": {"a": 1}}, {"list": [1]}, Text("x"), {Text("k"): 1}]


@pytest.mark.parametrize("value", _ACCEPTED)
def test_a_scalar_or_flat_map_value_error_accepts_is_accepted(value: Any) -> None:
    assert value_error(value) is None
    assert flat_values_ok([value]) and flat_values_ok([1, value, {"z": "y"}])


@pytest.mark.parametrize("value", _REFUSED)
def test_a_value_value_error_refuses_is_not_accepted(value: Any) -> None:
    assert value_error(value) is not None
    assert not flat_values_ok([value]) and not flat_values_ok([{"i": 1}, value])


@pytest.mark.parametrize("value", _OTHER_SHAPES)
def test_other_shapes_are_left_to_the_per_value_check(value: Any) -> None:
    assert not flat_values_ok([value])


def test_integers_beyond_64_bits_are_refused_where_they_are_not_carried() -> None:
    assert flat_values_ok([{"i": 2**64 - 1}, -(2**63)], wide_ints=False)
    assert not flat_values_ok([{"i": 2**64}], wide_ints=False)
    assert not flat_values_ok([-(2**63) - 1], wide_ints=False)


def test_plain_specs_are_the_specs_build_job_spec_makes() -> None:
    names = ["a", "b", "a"]
    datas: list[Any] = [{"i": 1, "t": 2.5}, None, "é"]
    specs = plain_specs("q", names, datas, max_payload_bytes=1024)
    built = [
        build_job_spec("q", name, data, {}, max_payload_bytes=1024)
        for name, data in zip(names, datas, strict=True)
    ]
    assert specs is not None and len(specs) == 3
    assert list(specs) == built
    assert [specs[i] for i in range(3)] == built and specs[-1] == built[-1]
    assert list(specs[1:]) == built[1:] and specs[1:].queue == "q"
    assert not specs.uniform and specs.longest == len('{"i":1,"t":2.5}')


def test_plain_specs_of_one_name_say_so() -> None:
    specs = plain_specs("q", ["a", "a"], [1, 22], max_payload_bytes=1024)
    assert specs is not None and specs.uniform and specs.names == ["a", "a"]
    assert specs.texts == ["1", "22"] and specs.within(8) and not specs.within(7)


@pytest.mark.parametrize(
    ("names", "datas"),
    [
        (["ok", ""], [1, 2]),  # an empty name
        (["ok", "a\x00"], [1, 2]),  # a control character
        (["ok", 7], [1, 2]),  # not a string
        (["ok", ["unhashable"]], [1, 2]),
        (["ok", "ok"], [1, {"nested": {}}]),  # a shape judged job by job
        (["ok", "ok"], [1, float("nan")]),
        (["ok"], ["x" * 300]),  # may be over the limit: checked job by job
    ],
)
def test_a_batch_with_a_doubtful_job_is_left_to_the_per_job_check(
    names: list[Any], datas: list[Any]
) -> None:
    assert plain_specs("q", names, datas, max_payload_bytes=1024) is None


def test_a_bulk_push_of_jobs_without_options_is_checked_as_one_batch() -> None:
    jobs: list[dict[str, Any]] = [{"name": "a", "data": 1}, {"data": {"k": "v"}}]
    specs = bulk_specs("q", jobs, max_payload_bytes=1024)
    assert type(specs) is PlainSpecs
    assert list(specs) == [
        build_job_spec("q", "a", 1, {}, max_payload_bytes=1024),
        build_job_spec("q", "default", {"k": "v"}, {}, max_payload_bytes=1024),
    ]
    with_options = bulk_specs(
        "q", [{"name": "a", "data": 1, "priority": 2}], max_payload_bytes=1024
    )
    assert type(with_options) is list and with_options[0].priority == 2
    with pytest.raises(ValidationError, match=r"jobs\[1\]"):
        bulk_specs("q", [{"name": "a"}, {"name": ""}], max_payload_bytes=1024)
