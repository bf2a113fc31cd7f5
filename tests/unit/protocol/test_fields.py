from __future__ import annotations

import math
from typing import Any

import pytest

from pgqueue.errors import ValidationError
from pgqueue.protocol import UNDEFINED, Fields, json_value_error


def refusal(msg: dict[str, Any], read: Any, *, prefix: str = "") -> ValidationError:
    """The error ``read(Fields(msg, prefix))`` raises."""
    with pytest.raises(ValidationError) as caught:
        read(Fields(msg, prefix))
    return caught.value


def message(msg: dict[str, Any], read: Any, *, prefix: str = "") -> str:
    return refusal(msg, read, prefix=prefix).message


# ---------------------------------------------------------------- presence


def test_absent_and_nil_are_both_not_set() -> None:
    fields = Fields({"a": None})
    assert not fields.has("a")
    assert not fields.has("b")
    assert fields.opt_int("a") is None
    assert fields.opt_str("b") is None
    assert fields.get("a") is None


def test_a_required_field_that_is_not_set_names_itself() -> None:
    error = refusal({"timeout": None}, lambda f: f.int_("timeout"))
    assert error.message == "timeout is required"
    assert error.field == "timeout"
    assert message({}, lambda f: f.str_("token")) == "token is required"


def test_defaults_apply_only_when_not_set() -> None:
    fields = Fields({"timeout": 0, "detach": False, "owner": ""})
    assert fields.opt_int("timeout", default=30000) == 0
    assert fields.opt_int("missing", default=30000) == 30000
    assert fields.opt_bool("detach", default=True) is False
    assert fields.opt_bool("missing", default=True) is True
    assert fields.opt_str("owner", default="x") == ""
    assert fields.opt_number("missing", default=1.5) == 1.5


def test_the_prefix_starts_every_message_but_not_the_field() -> None:
    error = refusal({"delay": "5"}, lambda f: f.int_("delay"), prefix="jobs[3]: ")
    assert error.message == "jobs[3]: delay must be a number"
    assert error.field == "delay"


# ---------------------------------------------------------------- strings


def test_a_string_is_returned_as_sent() -> None:
    assert Fields({"token": "abc"}).str_("token") == "abc"


@pytest.mark.parametrize("value", [1, 1.5, True, ["a"], {"a": 1}, b"abc"])
def test_a_non_string_is_refused(value: object) -> None:
    assert message({"token": value}, lambda f: f.str_("token")) == "token must be a string"


def test_string_length_and_emptiness_limits() -> None:
    assert message({"s": "abcd"}, lambda f: f.str_("s", max_len=3)) == (
        "s must be at most 3 characters long"
    )
    assert Fields({"s": "abc"}).str_("s", max_len=3) == "abc"
    assert message({"s": ""}, lambda f: f.str_("s", non_empty=True)) == (
        "s must be a non-empty string"
    )


def test_string_length_counts_like_javascript() -> None:
    assert message({"s": "😀😀"}, lambda f: f.str_("s", max_len=3)) == (
        "s must be at most 3 characters long"
    )
    assert Fields({"s": "éé"}).str_("s", max_len=2) == "éé"


def test_a_nul_character_is_refused_in_a_string() -> None:
    assert message({"owner": "a\x00b"}, lambda f: f.str_("owner")) == (
        "owner must not contain NUL characters"
    )


# ---------------------------------------------------------------- integers


def test_an_integer_is_returned_as_sent() -> None:
    assert Fields({"count": 10}).int_("count", minimum=1, maximum=1000) == 10


def test_an_integral_float_from_a_js_client_is_an_integer() -> None:
    value = Fields({"timestamp": 1796008590454.0}).int_("timestamp")
    assert value == 1796008590454
    assert type(value) is int


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("5", "must be a number"),
        ("true", "must be a number"),
        (True, "must be a number"),
        ([1], "must be a number"),
        ({"n": 1}, "must be a number"),
        (math.nan, "must be a finite number"),
        (math.inf, "must be a finite number"),
        (-math.inf, "must be a finite number"),
        (1.5, "must be an integer"),
    ],
    ids=repr,
)
def test_integer_refusals(value: object, text: str) -> None:
    assert message({"count": value}, lambda f: f.int_("count")) == f"count {text}"


def test_integer_bounds_use_bunqueues_words() -> None:
    read = lambda f: f.int_("count", minimum=1, maximum=1000)  # noqa: E731
    assert message({"count": 1001}, read) == "count must be at most 1000"
    assert message({"count": 0}, read) == "count must be at least 1"
    assert message({"count": 1000.5}, read) == "count must be an integer"


def test_integers_are_bounded_to_js_safe_integers_by_default() -> None:
    assert Fields({"n": 2**53 - 1}).int_("n") == 2**53 - 1
    assert message({"n": 2**53}, lambda f: f.int_("n")) == "n must be at most 9007199254740991"
    assert message({"n": 1e300}, lambda f: f.int_("n")) == "n must be at most 9007199254740991"
    assert message({"n": -(2**53)}, lambda f: f.int_("n")) == (
        "n must be at least -9007199254740991"
    )


def test_optional_integers_are_checked_when_set() -> None:
    assert message({"timeout": 60001}, lambda f: f.opt_int("timeout", maximum=60000)) == (
        "timeout must be at most 60000"
    )


# ---------------------------------------------------------------- numbers


def test_a_number_may_be_an_int_or_a_float() -> None:
    fields = Fields({"a": 3, "b": 2.5})
    assert fields.number("a") == 3
    assert fields.number("b") == 2.5


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("1.5", "must be a number"),
        (False, "must be a number"),
        (None, "is required"),
        (math.nan, "must be a finite number"),
        (math.inf, "must be a finite number"),
    ],
    ids=repr,
)
def test_number_refusals(value: object, text: str) -> None:
    assert message({"progress": value}, lambda f: f.number("progress")) == f"progress {text}"


def test_number_bounds_print_like_javascript() -> None:
    read = lambda f: f.opt_number("delay", minimum=0.0, maximum=86400000.0)  # noqa: E731
    assert message({"delay": -0.5}, read) == "delay must be at least 0"
    assert message({"delay": 9e10}, read) == "delay must be at most 86400000"
    assert message({"x": 2}, lambda f: f.number("x", maximum=1.5)) == "x must be at most 1.5"


# ---------------------------------------------------------------- booleans


def test_a_boolean_is_returned_as_sent() -> None:
    assert Fields({"lifo": True}).bool_("lifo") is True


@pytest.mark.parametrize("value", ["true", "false", 1, 0, 1.0, [True]], ids=repr)
def test_only_real_booleans_are_booleans(value: object) -> None:
    assert message({"lifo": value}, lambda f: f.bool_("lifo")) == "lifo must be a boolean"
    assert message({"lifo": value}, lambda f: f.opt_bool("lifo")) == "lifo must be a boolean"


# ---------------------------------------------------------------- arrays


def test_a_string_array_is_returned_as_a_list() -> None:
    assert Fields({"tags": ("a", "b")}).str_list("tags") == ["a", "b"]


def test_string_array_refusals_name_the_item() -> None:
    assert message({"tags": "a"}, lambda f: f.str_list("tags")) == "tags must be an array"
    assert message({"tags": {"a": 1}}, lambda f: f.str_list("tags")) == "tags must be an array"
    error = refusal({"tags": ["a", 2]}, lambda f: f.str_list("tags"))
    assert error.message == "tags[1] must be a string"
    assert error.field == "tags[1]"
    assert message({"tags": ["a", None]}, lambda f: f.str_list("tags")) == (
        "tags[1] must be a string"
    )
    assert message({"tags": ["a", "b"]}, lambda f: f.str_list("tags", max_items=1)) == (
        "tags must have at most 1 items"
    )


def test_optional_string_arrays() -> None:
    assert Fields({}).opt_str_list("tags") is None
    assert Fields({"tags": []}).opt_str_list("tags") == []


def test_job_id_arrays_check_every_id() -> None:
    assert Fields({"ids": ["a", "b"]}).job_id_list("ids") == ["a", "b"]
    assert message({"ids": ["a", ""]}, lambda f: f.job_id_list("ids")) == (
        "ids[1] must be a non-empty string of at most 256 characters"
    )
    assert message({"ids": ["a", {"id": "b"}]}, lambda f: f.opt_job_id_list("ids")) == (
        "ids[1] must be a non-empty string of at most 256 characters"
    )


# ---------------------------------------------------------------- maps


def test_a_map_is_returned_as_sent() -> None:
    dedup = {"ttl": 1000}
    assert Fields({"dedup": dedup}).opt_map("dedup") is dedup
    assert Fields({}).opt_map("dedup") is None


@pytest.mark.parametrize("value", [[1], "x", 3, True])
def test_a_non_map_is_refused(value: object) -> None:
    assert message({"repeat": value}, lambda f: f.opt_map("repeat")) == ("repeat must be an object")
    assert message({"repeat": value}, lambda f: f.map_("repeat")) == "repeat must be an object"


def test_a_nested_map_names_its_fields_with_a_dotted_path() -> None:
    error = refusal({"dedup": {"ttl": "1"}}, lambda f: f.nested("dedup").opt_int("ttl"))
    assert error.message == "dedup.ttl must be a number"
    assert error.field == "dedup.ttl"
    assert Fields({}).opt_nested("dedup") is None


def test_each_job_of_a_batch_prefixes_its_messages() -> None:
    msg = {"jobs": [{"name": "a"}, {"name": "b", "delay": "soon"}]}
    jobs = Fields(msg).nested_list("jobs", max_items=10)
    assert jobs[0].opt_job_name() == "a"
    with pytest.raises(ValidationError) as caught:
        jobs[1].opt_int("delay")
    assert caught.value.message == "jobs[1]: delay must be a number"
    assert caught.value.field == "delay"


def test_a_batch_entry_that_is_not_a_map_is_refused() -> None:
    error = refusal({"jobs": [{}, "job"]}, lambda f: f.nested_list("jobs"))
    assert error.message == "jobs[1] must be an object"
    assert message({"jobs": [{}, {}]}, lambda f: f.nested_list("jobs", max_items=1)) == (
        "jobs must have at most 1 items"
    )


# ---------------------------------------------------------------- JSON values


@pytest.mark.parametrize(
    "value",
    [None, True, 0, -5, 2**40, 1.5, "x", [], {}, {"a": [1, {"b": None}], "__proto__": "x"}],
    ids=repr,
)
def test_json_values_are_returned_as_sent(value: object) -> None:
    assert Fields({"data": value}).json_value("data") is value


def test_a_json_value_must_be_present_but_may_be_nil() -> None:
    assert Fields({"data": None}).json_value("data") is None
    assert message({}, lambda f: f.json_value("data")) == "data is required"
    assert Fields({}).opt_json_value("result") is None


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"\x00", "binary values are not allowed"),
        ({"a": [bytearray(b"x")]}, "binary values are not allowed"),
        (math.nan, "NaN and Infinity are not allowed"),
        ([1, {"x": math.inf}], "NaN and Infinity are not allowed"),
        ({"a": UNDEFINED}, "Undefined values are not allowed"),
        ({1: "a"}, "object keys must be strings"),
        ({"a": "b\x00"}, "strings must not contain NUL (\\u0000)"),
        ({"a\x00": "b"}, "strings must not contain NUL (\\u0000)"),
        ({"at": object()}, "object values are not allowed"),
    ],
    ids=repr,
)
def test_values_json_cannot_hold_are_refused(value: object, reason: str) -> None:
    assert message({"data": value}, lambda f: f.json_value("data")) == (
        f"data must be JSON serializable: {reason}"
    )


def test_json_nesting_is_limited() -> None:
    assert json_value_error([[[]]], max_depth=3) is None
    assert json_value_error([[[]]], max_depth=2) == "nested deeper than 2 levels"
    assert json_value_error({"a": 1, "b": {"c": [1]}}, max_depth=3) is None
    assert json_value_error({"a": 1, "b": {"c": [[]]}}, max_depth=3) == (
        "nested deeper than 3 levels"
    )
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    assert json_value_error(deep) == "nested deeper than 100 levels"


# ---------------------------------------------------------------- queue names


def test_a_valid_queue_name_is_returned() -> None:
    assert Fields({"queue": "emails.high:v2_x-y"}).queue() == "emails.high:v2_x-y"
    assert Fields({"q": "a" * 256}).queue("q") == "a" * 256


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "Queue name is required"),
        ("", "Queue name is required"),
        ("a" * 257, "Queue name too long (max 256 characters)"),
        ("has space", "Queue name contains invalid characters"),
        ("émails", "Queue name contains invalid characters"),
        ("line\n", "Queue name contains invalid characters"),
        (["emails"], "Queue name must be a string"),
        (5, "Queue name must be a string"),
    ],
    ids=repr,
)
def test_queue_name_refusals_use_bunqueues_messages(value: object, expected: str) -> None:
    error = refusal({"queue": value}, lambda f: f.queue(), prefix="jobs[0]: ")
    assert error.message == f"jobs[0]: {expected}"
    assert error.field == "queue"


def test_an_absent_queue_is_required() -> None:
    assert message({}, lambda f: f.queue()) == "Queue name is required"


# ---------------------------------------------------------------- job ids and names


def test_a_valid_job_id_is_returned() -> None:
    assert Fields({"id": "0190f3a2-7abc"}).job_id() == "0190f3a2-7abc"
    assert Fields({"jobId": "é" * 256}).opt_job_id("jobId") == "é" * 256
    assert Fields({}).opt_job_id("jobId") is None


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"id": "x"}, "must be a non-empty string of at most 256 characters"),
        (["x"], "must be a non-empty string of at most 256 characters"),
        (12, "must be a non-empty string of at most 256 characters"),
        ("", "must be a non-empty string of at most 256 characters"),
        ("x" * 257, "must be a non-empty string of at most 256 characters"),
        ("a\x00b", "must not contain control characters"),
        ("a\nb", "must not contain control characters"),
        ("a\x85b", "must not contain control characters"),
    ],
    ids=repr,
)
def test_job_id_refusals(value: object, text: str) -> None:
    assert message({"id": value}, lambda f: f.job_id()) == f"id {text}"


def test_a_missing_job_id_is_required() -> None:
    assert message({}, lambda f: f.job_id()) == "id is required"


def test_a_valid_job_name_is_returned() -> None:
    assert Fields({"name": "send-email"}).job_name() == "send-email"
    assert Fields({}).opt_job_name() is None


@pytest.mark.parametrize("value", ["", "x" * 257, "😀" * 129, 5, ["a"], {"a": 1}], ids=repr)
def test_job_name_refusals_use_bunqueues_message(value: object) -> None:
    assert message({"name": value}, lambda f: f.opt_job_name()) == (
        "Job name must be a non-empty string of at most 256 characters"
    )
