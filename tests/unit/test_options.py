"""Job options: every option, its bounds and bunqueue's messages, before anything is written."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from pgqueue.errors import ValidationError
from pgqueue.manager.options import (
    DEFAULT_BACKOFF_MAX_MS,
    DEFAULT_MAX_ATTEMPTS,
    JOB_OPTIONS,
    Backoff,
    JobSpec,
    build_job_spec,
    encode_json,
)
from pgqueue.vocabulary.names import validate_job_id, validate_job_name, validate_queue_name

LIMIT = 1024 * 1024
DAY = 86_400_000
YEAR = 365 * DAY


def spec(options: dict[str, Any] | None = None, **kwargs: Any) -> JobSpec:
    return build_job_spec("q", "n", {"a": 1}, options, max_payload_bytes=LIMIT, **kwargs)


def refused(options: dict[str, Any], **kwargs: Any) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        spec(options, **kwargs)
    return info.value


# -- defaults and each option ------------------------------------------------


def test_no_options_give_the_defaults() -> None:
    job = spec()
    assert job == JobSpec(queue="q", name="n", data_json='{"a":1}')
    assert (job.priority, job.max_attempts, job.backoff) == (0, DEFAULT_MAX_ATTEMPTS, Backoff())
    assert (job.id, job.delay_ms, job.dedup_mode, job.opts_json) == (None, 0, "reject", "{}")


def test_every_option_is_carried_into_the_spec() -> None:
    job = spec(
        {
            "priority": 5,
            "lifo": True,
            "delay": 1500,
            "attempts": 7,
            "backoff": {"type": "fixed", "delay": 300, "maxDelay": 900},
            "timeout": 2000,
            "ttl": 60_000,
            "stall_timeout": 4000,
            "job_id": "order-1",
            "remove_on_complete": True,
            "remove_on_fail": True,
            "unique_key": "k",
            "dedup": {"ttl": 5000, "extend": True},
            "depends_on": ["a", "b"],
            "parent_id": "p",
            "parent_queue": "pq",
            "group_id": "g",
            "tags": ["x", "y"],
            "stack_trace_limit": 3,
            "keep_logs": 10,
            "timestamp": 1_700_000_000_000,
            "fail_parent_on_failure": True,
            "ignore_dependency_on_failure": True,
            "remove_dependency_on_failure": True,
            "continue_parent_on_failure": True,
        }
    )
    assert job == JobSpec(
        queue="q",
        name="n",
        data_json='{"a":1}',
        id="order-1",
        custom_id="order-1",
        priority=5,
        lifo=True,
        delay_ms=1500,
        max_attempts=7,
        backoff=Backoff("fixed", 300, 900),
        timeout_ms=2000,
        ttl_ms=60_000,
        stall_timeout_ms=4000,
        remove_on_complete=True,
        remove_on_fail=True,
        unique_key="k",
        dedup_mode="extend",
        unique_ttl_ms=5000,
        group_id="g",
        parent_id="p",
        parent_queue="pq",
        depends_on=("a", "b"),
        created_at_ms=1_700_000_000_000.0,
        opts_json=job.opts_json,
    )
    extras = {
        "tags": ["x", "y"],
        "stack_trace_limit": 3,
        "keep_logs": 10,
        "fail_parent_on_failure": True,
        "ignore_dependency_on_failure": True,
        "remove_dependency_on_failure": True,
        "continue_parent_on_failure": True,
    }
    carried = json.loads(job.opts_json)
    assert {name: carried.get(name) for name in extras} == extras


def test_the_option_list_is_what_build_job_spec_reads() -> None:
    assert {
        "priority",
        "lifo",
        "delay",
        "attempts",
        "max_attempts",
        "backoff",
        "job_id",
        "custom_id",
        "unique_key",
        "dedup",
        "depends_on",
        "group_id",
    } <= JOB_OPTIONS


def test_custom_id_is_an_alias_of_job_id_and_job_id_wins() -> None:
    assert spec({"custom_id": "c"}).id == "c"
    assert spec({"job_id": "j", "custom_id": "c"}).custom_id == "j"


def test_max_attempts_wins_over_attempts_and_names_itself_in_errors() -> None:
    assert spec({"attempts": 2, "max_attempts": 9}).max_attempts == 9
    assert refused({"attempts": 2, "max_attempts": 0}).message == "max_attempts must be at least 1"
    assert refused({"attempts": 1001}).message == "attempts must be at most 1000"


def test_zero_timeout_and_ttl_mean_none() -> None:
    job = spec({"timeout": 0, "ttl": 0, "stall_timeout": 0})
    assert (job.timeout_ms, job.ttl_ms, job.stall_timeout_ms) == (None, None, None)


def test_a_numeric_backoff_is_exponential_with_that_base() -> None:
    assert spec({"backoff": 250}).backoff == Backoff("exponential", 250, DEFAULT_BACKOFF_MAX_MS)
    assert spec({"backoff": {"delay": 10}}).backoff == Backoff("exponential", 10)
    assert spec({"backoff": {"type": "fixed", "max_delay": 5}}).backoff.max_delay_ms == 5


def test_integral_floats_are_accepted_as_integers() -> None:
    assert spec({"priority": 3.0, "delay": 1e3}).priority == 3
    assert spec({"delay": 1e3}).delay_ms == 1000


def test_explicit_none_means_the_default() -> None:
    assert spec({"priority": None, "lifo": None, "backoff": None, "dedup": None}) == spec()


# -- bounds with exact messages ----------------------------------------------

NON_EMPTY = "must be a non-empty string of at most 256 printable characters"
BOUNDS = [
    ({"priority": 1_000_001}, "priority must be at most 1000000"),
    ({"priority": -1_000_001}, "priority must be at least -1000000"),
    ({"delay": -1}, "delay must be at least 0"),
    ({"delay": YEAR + 1}, f"delay must be at most {YEAR}"),
    ({"attempts": 0}, "attempts must be at least 1"),
    ({"timeout": DAY + 1}, f"timeout must be at most {DAY}"),
    ({"timeout": -1}, "timeout must be at least 0"),
    ({"ttl": YEAR + 1}, f"ttl must be at most {YEAR}"),
    ({"stall_timeout": DAY + 1}, f"stall_timeout must be at most {DAY}"),
    ({"backoff": DAY + 1}, f"backoff must be at most {DAY}"),
    ({"backoff": -1}, "backoff must be at least 0"),
    ({"backoff": {"delay": DAY + 1}}, f"backoff must be at most {DAY}"),
    ({"backoff": {"maxDelay": -5}}, "backoff must be at least 0"),
    ({"stack_trace_limit": 1_000_001}, "stack_trace_limit must be at most 1000000"),
    ({"keep_logs": -1}, "keep_logs must be at least 0"),
    ({"timestamp": -1}, "timestamp must be at least 0"),
    ({"timestamp": 8_640_000_000_000_001}, "timestamp must be at most 8640000000000000"),
    ({"priority": "1"}, "priority must be a number"),
    ({"priority": True}, "priority must be a number"),
    ({"delay": math.nan}, "delay must be a finite number"),
    ({"delay": math.inf}, "delay must be a finite number"),
    ({"delay": 1.5}, "delay must be an integer"),
    ({"lifo": 1}, "lifo must be a boolean"),
    (
        {"remove_on_complete": "yes"},
        "remove_on_complete must be a boolean, a count or {age, count}",
    ),
    ({"remove_on_fail": -1}, "remove_on_fail must be at least 0"),
    ({"job_id": 5}, "job_id must be a string"),
    ({"job_id": ""}, f"job_id {NON_EMPTY}"),
    ({"group_id": "g\n"}, f"group_id {NON_EMPTY}"),
    ({"unique_key": "k" * 257}, f"unique_key {NON_EMPTY}"),
    ({"depends_on": "a"}, "depends_on must be a list of at most 1000 strings"),
    ({"depends_on": ["a"] * 1001}, "depends_on must be a list of at most 1000 strings"),
    ({"depends_on": ["a", ""]}, "depends_on must be a list of non-empty strings"),
    ({"tags": ["t"] * 101}, "tags must be a list of at most 100 strings"),
    ({"backoff": "fast"}, "backoff must be a number or {type, delay}"),
    ({"backoff": {"type": "linear"}}, "backoff.type must be 'exponential' or 'fixed'"),
    ({"backoff": {"delay": 1, "jitter": 1}}, "backoff has unknown keys: jitter"),
]


@pytest.mark.parametrize(("options", "message"), BOUNDS)
def test_an_option_out_of_bounds_is_refused_with_bunqueues_message(
    options: dict[str, Any], message: str
) -> None:
    error = refused(options)
    assert error.message == message
    assert error.field == next(iter(options))


@pytest.mark.parametrize(
    "options",
    [
        {"priority": 1_000_000},
        {"priority": -1_000_000},
        {"delay": YEAR},
        {"attempts": 1000},
        {"timeout": DAY},
        {"ttl": YEAR},
        {"backoff": DAY},
        {"timestamp": 8_640_000_000_000_000},
        {"depends_on": ["a"] * 1000},
        {"job_id": "j" * 256},
    ],
)
def test_the_bounds_themselves_are_accepted(options: dict[str, Any]) -> None:
    spec(options)


def test_a_grouped_job_has_priority_bounds_0_to_2097151() -> None:
    assert spec({"group_id": "g", "priority": 2_097_151}).priority == 2_097_151
    assert refused({"group_id": "g", "priority": 2_097_152}).message == (
        "priority must be at most 2097151"
    )
    assert refused({"group_id": "g", "priority": -1}).message == "priority must be at least 0"
    assert spec({"priority": -5}).priority == -5


# -- unknown options, labels and prefixes ---------------------------------


def test_unknown_options_are_refused_by_name_in_sorted_order() -> None:
    error = refused({"priorty": 1, "delya": 2, "priority": 3})
    assert error.message == "unknown job option: delya, priorty"
    assert error.field == "delya"


def test_labels_render_the_callers_field_names_while_field_keeps_the_key() -> None:
    error = refused({"remove_on_complete": "1"}, labels={"remove_on_complete": "removeOnComplete"})
    assert error.message == "removeOnComplete must be a boolean, a count or {age, count}"
    assert error.field == "remove_on_complete"


def test_a_prefix_goes_before_every_message() -> None:
    assert refused({"priority": 2e6}, prefix="jobs[3]: ").message == (
        "jobs[3]: priority must be at most 1000000"
    )
    assert refused({"nope": 1}, prefix="jobs[0]: ").message == "jobs[0]: unknown job option: nope"
    assert refused({"backoff": {"type": "x"}}, prefix="p: ").message == (
        "p: backoff.type must be 'exponential' or 'fixed'"
    )
    with pytest.raises(ValidationError, match=r"^jobs\[1\]: Job name must be"):
        build_job_spec("q", "", None, max_payload_bytes=LIMIT, prefix="jobs[1]: ")
    with pytest.raises(ValidationError, match=r"^jobs\[2\]: Job data must be JSON serializable: "):
        build_job_spec("q", "n", {1, 2}, max_payload_bytes=LIMIT, prefix="jobs[2]: ")


def test_dedup_messages_use_the_label_of_the_dedup_field() -> None:
    error = refused({"unique_key": "k", "dedup": {"ttl": 0}}, labels={"dedup": "deduplication"})
    assert error.message == "deduplication.ttl must be at least 1"


# -- dedup modes -------------------------------------------------------------


@pytest.mark.parametrize(
    ("dedup", "mode", "ttl"),
    [
        (None, "reject", None),
        ({}, "reject", None),
        ({"ttl": 1000}, "reject", 1000),
        ({"ttl": 1000, "extend": True}, "extend", 1000),
        ({"replace": True}, "replace", None),
        ({"ttl": 5, "extend": True, "replace": True}, "replace", 5),
    ],
)
def test_dedup_modes(dedup: dict[str, Any] | None, mode: str, ttl: int | None) -> None:
    job = spec({"unique_key": "k", "dedup": dedup})
    assert (job.dedup_mode, job.unique_ttl_ms) == (mode, ttl)


def test_dedup_without_a_unique_key_changes_nothing() -> None:
    job = spec({"dedup": {"ttl": 1000, "replace": True}})
    assert (job.unique_key, job.dedup_mode, job.unique_ttl_ms) == (None, "reject", None)


def test_dedup_refuses_extend_without_a_ttl_unknown_keys_and_non_maps() -> None:
    assert refused({"unique_key": "k", "dedup": {"extend": True}}).message == (
        "dedup extend needs a ttl"
    )
    assert refused({"unique_key": "k", "dedup": {"ttl": 1, "mode": "x"}}).message == (
        "dedup has unknown keys: mode"
    )
    assert refused({"unique_key": "k", "dedup": True}).message == (
        "dedup must be a map {ttl?, extend?, replace?}"
    )
    assert refused({"unique_key": "k", "dedup": {"ttl": YEAR + 1}}).message == (
        f"dedup.ttl must be at most {YEAR}"
    )
    assert refused({"unique_key": "k", "dedup": {"replace": "yes"}}).message == (
        "dedup.replace must be a boolean"
    )


# -- names and ids -----------------------------------------------------------


@pytest.mark.parametrize(
    ("queue", "message"),
    [
        ("", "Queue name is required"),
        (None, "Queue name is required"),
        ("q" * 257, "Queue name too long (max 256 characters)"),
        ("a b", "Queue name contains invalid characters"),
        ("a/b", "Queue name contains invalid characters"),
        ("é", "Queue name contains invalid characters"),
        (5, "queue must be a string"),
    ],
)
def test_queue_names_follow_bunqueues_rules(queue: object, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        validate_queue_name(queue)
    assert (info.value.message, info.value.field) == (message, "queue")


def test_a_valid_queue_name_uses_letters_digits_and_punctuation() -> None:
    assert validate_queue_name("billing:invoices.v2_-x") == "billing:invoices.v2_-x"
    assert validate_queue_name("q" * 256) == "q" * 256


def test_build_job_spec_checks_the_queue_unless_told_it_was_checked() -> None:
    with pytest.raises(ValidationError, match=r"^Queue name contains invalid characters$"):
        build_job_spec("a b", "n", None, max_payload_bytes=LIMIT)
    assert build_job_spec("a b", "n", None, max_payload_bytes=LIMIT, queue_checked=True).queue


@pytest.mark.parametrize("name", ["", None, 5, "x" * 257, "tab\there"])
def test_job_names_must_be_short_printable_strings(name: object) -> None:
    with pytest.raises(ValidationError) as info:
        validate_job_name(name)
    assert info.value.message == (
        "Job name must be a non-empty string of at most 256 characters without control characters"
    )


def test_job_ids_must_be_short_printable_strings() -> None:
    assert validate_job_id("id-1") == "id-1"
    with pytest.raises(ValidationError, match=r"^jobId must be a string$"):
        validate_job_id(5)
    with pytest.raises(ValidationError, match=r"^id must be a non-empty string of at most 256"):
        validate_job_id("\x00", "id")


# -- encode_json ---------------------------------------------------------------


def test_encode_json_is_compact_and_keeps_unicode() -> None:
    assert encode_json({"a": [1, "é"]}, label="data", limit=100) == '{"a":[1,"é"]}'


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, {"x": [math.nan]}])
def test_encode_json_refuses_nan_and_infinity(value: Any) -> None:
    with pytest.raises(ValidationError, match=r"^Job data must be JSON serializable: ") as info:
        encode_json(value, label="data", limit=100)
    assert info.value.field == "data"


@pytest.mark.parametrize("value", [{1, 2}, object(), b"bytes", {"k": (lambda: 1)}])
def test_encode_json_refuses_what_json_cannot_hold(value: Any) -> None:
    with pytest.raises(ValidationError, match=r"^Job data must be JSON serializable: "):
        encode_json(value, label="data", limit=100)


def test_encode_json_refuses_nesting_deeper_than_the_encoder_can_walk() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValidationError, match=r"^Job data must be JSON serializable: "):
        encode_json(deep, label="data", limit=10**9)


@pytest.mark.parametrize("value", ["\x00", "a\x00b", {"k\x00": 1}, ["\\\x00"]])
def test_encode_json_refuses_nul_characters_which_jsonb_cannot_store(value: Any) -> None:
    with pytest.raises(ValidationError, match=r"^Job data must not contain NUL characters$"):
        encode_json(value, label="data", limit=100)


@pytest.mark.parametrize("value", ["\\u0000", "\\\\u0000", "C:\\u0000dir"])
def test_encode_json_accepts_text_that_only_looks_like_a_nul_escape(value: str) -> None:
    text = encode_json(value, label="data", limit=100)
    assert json.loads(text) == value


@pytest.mark.parametrize("value", ["\ud800", {"k": "x\udfffy"}, ["\udc00"]])
def test_encode_json_refuses_lone_surrogates(value: Any) -> None:
    with pytest.raises(ValidationError, match=r"^Job data must be valid Unicode$"):
        encode_json(value, label="data", limit=100)


def test_encode_json_counts_the_limit_in_utf8_bytes() -> None:
    assert encode_json("é" * 4, label="data", limit=10) == '"éééé"'
    with pytest.raises(ValidationError) as info:
        encode_json("é" * 5, label="data", limit=10)
    assert info.value.message == "Job data too large (12 bytes, max 10)"


def test_encode_json_names_what_it_encodes() -> None:
    with pytest.raises(ValidationError, match=r"^Result too large \(7 bytes, max 5\)$") as info:
        encode_json("abcde", label="returnvalue", limit=5, what="Result")
    assert info.value.field == "returnvalue"


def test_build_job_spec_enforces_the_payload_limit_on_data() -> None:
    build_job_spec("q", "n", "x" * 8, max_payload_bytes=10)
    with pytest.raises(ValidationError) as info:
        build_job_spec("q", "n", "x" * 9, max_payload_bytes=10, labels={"data": "payload"})
    assert info.value.message == "Job data too large (11 bytes, max 10)"
    assert info.value.field == "payload"


def test_messages_never_mention_python_types() -> None:
    for options, _ in BOUNDS:
        message = refused(options).message
        assert not re.search(r"\b(int|float|str|dict|NoneType)\b", message), message
