from __future__ import annotations

import copy
import datetime
import math
import pickle
import struct
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pgqueue.errors import ProtocolError
from pgqueue.protocol.codec import (
    JS_INT_MAX,
    JS_INT_MIN,
    UNDEFINED,
    DecodeLimits,
    pack,
    unpack,
)

EXT0 = b"\xd4\x00\x00"  # what msgpackr writes for JS undefined


def float64(value: float) -> bytes:
    return b"\xcb" + struct.pack(">d", value)


def js_view(value: Any) -> Any:
    """What a peer decodes from pack(value): wide ints as floats, tuples as lists."""
    if isinstance(value, dict):
        return {key: js_view(item) for key, item in value.items() if item is not UNDEFINED}
    if isinstance(value, (list, tuple)):
        return [None if item is UNDEFINED else js_view(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return value if JS_INT_MIN <= value <= JS_INT_MAX else float(value)
    return value


def assert_same(actual: Any, expected: Any) -> None:
    """Equal, and of the same types all the way down (2.0 is not 2 here)."""
    assert type(actual) is type(expected), (actual, expected)
    if isinstance(expected, dict):
        assert list(actual) == list(expected)
        for key in expected:
            assert_same(actual[key], expected[key])
    elif isinstance(expected, list):
        assert len(actual) == len(expected)
        for got, want in zip(actual, expected, strict=True):
            assert_same(got, want)
    else:
        assert actual == expected


json_like = st.recursive(
    st.none()
    | st.just(UNDEFINED)
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


# ---------------------------------------------------------------- the UNDEFINED sentinel


def test_undefined_is_a_falsy_singleton_named_undefined() -> None:
    assert not UNDEFINED
    assert repr(UNDEFINED) == "UNDEFINED"
    assert copy.deepcopy(UNDEFINED) is UNDEFINED
    assert pickle.loads(pickle.dumps(UNDEFINED)) is UNDEFINED


# ---------------------------------------------------------------- pack


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\xff"),
        (2**31 - 1, b"\xce\x7f\xff\xff\xff"),
        (JS_INT_MAX, b"\xce\xff\xff\xff\xff"),
        (JS_INT_MIN, b"\xd2\x80\x00\x00\x00"),
    ],
)
def test_integers_in_the_32_bit_range_stay_integers(value: int, encoded: bytes) -> None:
    assert pack(value) == encoded


@pytest.mark.parametrize(
    "value", [JS_INT_MAX + 1, JS_INT_MIN - 1, 2**40, 1796008590454, -(2**63), 2**64 - 1, 2**70]
)
def test_wider_integers_are_sent_as_float64(value: int) -> None:
    assert pack(value) == float64(float(value))
    assert pack({"createdAt": value}) == b"\x81\xa9createdAt" + float64(float(value))


def test_wide_integers_are_converted_at_any_depth() -> None:
    encoded = pack({"jobs": [{"data": {"n": [1, 2**40]}}]})
    assert float64(2.0**40) in encoded
    assert b"\xcf" not in encoded
    assert_same(msgpack.unpackb(encoded), {"jobs": [{"data": {"n": [1, 2.0**40]}}]})


def test_booleans_are_not_treated_as_integers() -> None:
    assert pack([True, False]) == b"\x92\xc3\xc2"


def test_floats_are_always_float64() -> None:
    assert pack(1.5) == float64(1.5)
    assert pack(0.0) == float64(0.0)


def test_strings_are_str_and_bytes_are_bin() -> None:
    assert pack("é") == b"\xa2\xc3\xa9"
    assert pack(b"\x00\x01") == b"\xc4\x02\x00\x01"


def test_tuples_are_arrays() -> None:
    assert pack((1, (2, 2**40))) == pack([1, [2, 2**40]])
    assert pack((1, 2)) == b"\x92\x01\x02"


def test_an_undefined_map_value_omits_its_key() -> None:
    assert pack({"ok": True, "id": UNDEFINED}) == pack({"ok": True})
    assert pack({"a": {"b": UNDEFINED, "c": 1}}) == pack({"a": {"c": 1}})


def test_an_undefined_array_item_is_nil() -> None:
    assert pack([1, UNDEFINED]) == b"\x92\x01\xc0"


def test_pack_leaves_its_input_unchanged() -> None:
    value = {"id": UNDEFINED, "n": 2**40, "items": (1, UNDEFINED)}
    pack(value)
    assert value == {"id": UNDEFINED, "n": 2**40, "items": (1, UNDEFINED)}


@pytest.mark.parametrize(
    "value",
    [
        {1: "a"},
        {b"key": 1},
        {"ok": [{"nested": {None: 1}}]},
        {"n": 2**40, "data": {1: 2}},  # the key is found on the rewriting path too
    ],
)
def test_non_string_keys_are_refused(value: object) -> None:
    with pytest.raises(TypeError, match="map keys must be str"):
        pack(value)


def test_values_msgpack_cannot_encode_are_a_type_error() -> None:
    with pytest.raises(TypeError):
        pack({"at": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)})


def test_an_integer_beyond_float_range_is_an_overflow() -> None:
    with pytest.raises(OverflowError):
        pack(10**400)


def test_a_reference_cycle_is_refused() -> None:
    cycle: list[object] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="nested deeper than"):
        pack({"loop": cycle})


@given(json_like)
def test_pack_then_unpack_gives_the_js_view_of_any_json_like_value(value: Any) -> None:
    assert_same(unpack(pack({"v": value})), js_view({"v": value}))


@given(json_like)
def test_pack_agrees_with_plain_msgpack_once_wide_ints_are_floats(value: Any) -> None:
    expected = msgpack.packb(js_view({"v": value}), use_bin_type=True)
    assert pack({"v": value}) == expected


# ---------------------------------------------------------------- unpack


def test_an_undefined_map_value_is_dropped() -> None:
    body = b"\x82\xa2ok\xc3\xa2id" + EXT0  # {ok: true, id: undefined}
    assert unpack(body) == {"ok": True}


def test_an_undefined_value_in_a_nested_map_is_dropped() -> None:
    body = b"\x82\xa3cmd\xa8Progress\xa4data\x81\xa7message" + EXT0
    assert unpack(body) == {"cmd": "Progress", "data": {}}


def test_an_undefined_array_item_is_none() -> None:
    body = b"\x81\xa6tokens\x93\xa1a" + EXT0 + b"\xa1b"
    assert unpack(body) == {"tokens": ["a", None, "b"]}


def test_any_ext_type_0_encoding_is_undefined() -> None:
    assert unpack(b"\x81\xa1a\xc7\x00\x00") == {}  # ext 8, zero-length payload


@pytest.mark.parametrize("ext", [b"\xd4\x05\x00", b"\xd4\x7f\x00", b"\xc7\x01\x01\x00"])
def test_other_extension_types_are_refused(ext: bytes) -> None:
    with pytest.raises(ProtocolError, match="unsupported MessagePack extension type"):
        unpack(b"\x81\xa1a" + ext)


def test_a_msgpack_timestamp_is_refused() -> None:
    with pytest.raises(ProtocolError, match="extension type -1"):
        unpack(b"\x81\xa2at\xd6\xff\x00\x00\x00\x01")


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\xc1",  # never used
        b"\x81\xa3cmd",  # truncated
        b"\x81\xa3cmd\xa4Ping\x00",  # trailing byte
        b"\x81\xa3cmd\xa2\xff\xfe",  # invalid UTF-8
        b"\x81\x01\x01",  # int key
    ],
)
def test_undecodable_bodies_are_invalid_command_format(body: bytes) -> None:
    with pytest.raises(ProtocolError) as caught:
        unpack(body)
    assert caught.value.message == "Invalid command format"


def test_every_truncation_of_a_command_is_invalid_command_format() -> None:
    body = pack({"cmd": "PUSH", "queue": "q", "data": {"list": [1, 2.5, "x"]}})
    for end in range(len(body)):
        with pytest.raises(ProtocolError, match=r"^Invalid command format$"):
            unpack(body[:end])


def test_a_bin_map_key_is_refused() -> None:
    with pytest.raises(ProtocolError, match="map keys must be strings"):
        unpack(b"\x81\xa4data\x81\xc4\x01k\x01")


@pytest.mark.parametrize("value", [None, False, 0, 0.0, float("nan"), ""], ids=repr)
def test_a_js_falsy_body_is_invalid_command_format(value: object) -> None:
    with pytest.raises(ProtocolError, match=r"^Invalid command format$"):
        unpack(msgpack.packb(value))


@pytest.mark.parametrize("value", [[], ["cmd"], 1, "PUSH", True, b""], ids=repr)
def test_a_body_that_is_not_a_map_is_invalid_command(value: object) -> None:
    with pytest.raises(ProtocolError, match=r"^Invalid command$"):
        unpack(msgpack.packb(value, use_bin_type=True))


def test_a_top_level_undefined_is_invalid_command_format() -> None:
    with pytest.raises(ProtocolError, match=r"^Invalid command format$"):
        unpack(EXT0)


def test_js_prototype_names_are_ordinary_keys() -> None:
    value = {"__proto__": {"admin": True}, "constructor": 1, "prototype": "x"}
    assert unpack(pack(value)) == value


def test_bin_values_are_kept() -> None:
    assert unpack(b"\x81\xa1b\xc4\x02\x00\x01") == {"b": b"\x00\x01"}


def nested_arrays(levels: int) -> bytes:
    """A map holding ``levels - 1`` arrays nested in each other."""
    return b"\x81\xa1v" + b"\x91" * (levels - 2) + b"\x90"


def test_nesting_up_to_the_limit_is_accepted() -> None:
    decoded = unpack(nested_arrays(128))
    depth, value = 1, decoded["v"]
    while value:
        depth, value = depth + 1, value[0]
    assert depth == 127  # the map is level 1; the innermost (empty) array is level 128


def test_nesting_beyond_the_limit_is_refused() -> None:
    with pytest.raises(ProtocolError, match="nested deeper than 128 levels"):
        unpack(nested_arrays(129))


def test_a_hostile_depth_fails_cleanly_beyond_msgpacks_own_stack() -> None:
    with pytest.raises(ProtocolError, match=r"^Invalid command format"):
        unpack(nested_arrays(5000))


def test_depth_counts_maps_and_arrays_alike() -> None:
    limits = DecodeLimits(max_depth=3)
    assert unpack(pack({"a": {"b": [1]}}), limits) == {"a": {"b": [1]}}
    with pytest.raises(ProtocolError, match="nested deeper than 3 levels"):
        unpack(pack({"a": {"b": [[]]}}), limits)
    with pytest.raises(ProtocolError, match="nested deeper than 3 levels"):
        unpack(pack({"short": [], "a": [{"b": {}}]}), limits)


def test_a_value_discarded_by_a_duplicate_key_does_not_count_towards_depth() -> None:
    # {a: [[[1]]], a: 0, b: [1]}: the first `a` is dropped mid-map, and the list built
    # next may reuse its memory; its height must not be mistaken for b's.
    body = b"\x83\xa1a\x91\x91\x91\x01\xa1a\x00\xa1b\x91\x01"
    assert unpack(body, DecodeLimits(max_depth=3)) == {"a": 0, "b": [1]}


def test_too_many_containers_are_refused_while_decoding() -> None:
    # 1.5 million empty arrays: 1.5 MB on the wire, ~100 MB as Python lists.
    third = b"\xdd" + struct.pack(">I", 500_000) + b"\x90" * 500_000
    flood = b"\x81\xa1v\x93" + third * 3
    with pytest.raises(ProtocolError, match="too many maps and arrays"):
        unpack(flood)
    with pytest.raises(ProtocolError, match="too many maps and arrays"):
        unpack(pack({"v": [[], [], []]}), DecodeLimits(max_containers=3))
    assert unpack(pack({"v": [[], []]}), DecodeLimits(max_containers=4)) == {"v": [[], []]}


def test_a_container_longer_than_the_limit_is_refused() -> None:
    limits = DecodeLimits(max_container_len=3)
    assert unpack(pack({"v": [1, 2, 3]}), limits) == {"v": [1, 2, 3]}
    with pytest.raises(ProtocolError, match=r"^Invalid command format$"):
        unpack(pack({"v": [1, 2, 3, 4]}), limits)


def test_a_string_longer_than_the_limit_is_refused() -> None:
    limits = DecodeLimits(max_string_len=4)
    assert unpack(pack({"s": "abcd"}), limits) == {"s": "abcd"}
    with pytest.raises(ProtocolError, match=r"^Invalid command format$"):
        unpack(pack({"s": "abcde"}), limits)
    with pytest.raises(ProtocolError, match=r"^Invalid command format$"):
        unpack(pack({"b": b"abcde"}), limits)


def test_a_declared_length_beyond_the_body_is_refused_without_allocating_it() -> None:
    with pytest.raises(ProtocolError, match=r"^Invalid command format$"):
        unpack(b"\x81\xa1v\xdd\xff\xff\xff\xff")


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_depth"):
        DecodeLimits(max_depth=0)


def test_non_finite_floats_decode_as_floats() -> None:
    decoded = unpack(pack({"a": math.inf, "b": math.nan}))
    assert decoded["a"] == math.inf
    assert math.isnan(decoded["b"])


@given(st.binary(max_size=64))
def test_arbitrary_bytes_decode_to_a_map_or_a_protocol_error(body: bytes) -> None:
    try:
        decoded = unpack(body)
    except ProtocolError:
        return
    assert isinstance(decoded, dict)
