"""SDK job options -> wire fields -> the broker's reading: the same job as the engine's."""

from __future__ import annotations

from typing import Any

import pytest

from pgqueue.client.transport import JobInput
from pgqueue.client.wire_options import WIRE_NAMES, flow_entries, job_entry
from pgqueue.errors import ValidationError
from pgqueue.manager.flows import flatten
from pgqueue.manager.options import JOB_OPTIONS, build_job_spec
from pgqueue.protocol import Fields, pack, unpack
from pgqueue.server.wire import WIRE_LABELS, job_input_from_wire
from pgqueue.vocabulary.job_options import JobOption, sdk_options

LIMIT = 1024 * 1024

CASES: list[dict[str, Any]] = [
    {},
    {"attempts": 5},
    {"max_attempts": 4, "attempts": 9},
    {"backoff": 2000},
    {"backoff": {"type": "fixed", "delay": 500, "max_delay": 9000}},
    {"backoff": {"type": "exponential", "delay": 50, "maxDelay": 700}},
    {"priority": 7, "lifo": True, "delay": 1000, "timeout": 5000, "ttl": 60000},
    {"stall_timeout": 3000, "stack_trace_limit": 3, "keep_logs": 10},
    {"job_id": "custom-1"},
    {"custom_id": "custom-2"},
    {"remove_on_complete": True, "remove_on_fail": True},
    {"unique_key": "k", "dedup": {"ttl": 1000, "extend": True}},
    {"unique_key": "k2", "dedup": {"replace": True}},
    {"deduplication": {"id": "k3", "ttl": 5000, "extend": True}},
    {"deduplication": {"id": "k4"}},
    {"debounce_id": "d1", "debounce_ttl": 2000},
    {"depends_on": ["a", "b"], "tags": ["x", "y"]},
    {"parent_id": "p", "children_ids": ["c1", "c2"]},
    {"group_id": "g", "priority": 3},
    {"timestamp": 1_700_000_000_000},
    {"repeat": {"every": 1000, "limit": 3, "immediately": True}},
    {"repeat": {"pattern": "*/5 * * * * *", "tz": "Europe/Rome", "jobId": "series"}},
    {
        "fail_parent_on_failure": True,
        "ignore_dependency_on_failure": True,
        "remove_dependency_on_failure": True,
        "continue_parent_on_failure": True,
    },
]


def _sample(option: JobOption) -> Any:
    """A value of a plain option inside its declared bounds (not its default)."""
    if option.kind == "boolean":
        return True
    if option.kind in ("ids", "texts"):
        return ["a", "b"][: max(1, int(min(option.hi, 2)))]
    value = option.lo + 1 if option.hi >= option.lo + 1 else option.lo
    return int(value) if option.kind == "integer" else float(value)


PLAIN_CASES: list[dict[str, Any]] = [
    {option.name: _sample(option)}
    for option in sdk_options()
    if option.plain and option.python is not None
]
"""One case per plain option the SDK takes, from its declaration: a new one
needs no hand-written case here."""

CASES += PLAIN_CASES


def through_the_wire(opts: dict[str, Any], key: str, data: Any = None) -> Any:
    entry, _ = job_entry("q", JobInput("n", data, opts), custom_id_key=key, max_payload_bytes=LIMIT)
    message = unpack(pack({"cmd": "PUSH", "queue": "q", **entry}))
    name, data, wire_opts = job_input_from_wire(Fields(message), custom_id_key=key)
    return build_job_spec(
        "q", name, data, wire_opts, max_payload_bytes=LIMIT, labels=WIRE_LABELS, queue_checked=True
    )


@pytest.mark.parametrize("key", ["jobId", "customId"])
@pytest.mark.parametrize("opts", CASES)
def test_options_reach_the_broker_as_the_engine_reads_them(opts: dict[str, Any], key: str) -> None:
    direct = build_job_spec("q", "n", {"d": [1, 2]}, opts, max_payload_bytes=LIMIT)
    assert through_the_wire(opts, key, {"d": [1, 2]}) == direct


@pytest.mark.parametrize("opts", [{}, *CASES])
def test_a_pushb_entry_reaches_the_broker_as_the_engine_reads_it(opts: dict[str, Any]) -> None:
    # An entry of a name and data only (no option, no envelope) takes the short path.
    entry, _ = job_entry(
        "q", JobInput("n", {"d": 1}, opts), custom_id_key="customId", max_payload_bytes=LIMIT
    )
    message = unpack(pack({"cmd": "PUSHB", "queue": "q", "jobs": [entry]}))["jobs"][0]
    name, data, wire_opts = job_input_from_wire(Fields(message), custom_id_key="customId")
    assert (name, data) == ("n", {"d": 1})
    spec = build_job_spec(
        "q", name, data, wire_opts, max_payload_bytes=LIMIT, labels=WIRE_LABELS, queue_checked=True
    )
    assert spec == build_job_spec("q", "n", {"d": 1}, opts, max_payload_bytes=LIMIT)


def test_every_engine_option_is_covered_by_a_case() -> None:
    covered = set().union(*CASES)
    assert JOB_OPTIONS - covered == {"parent_queue"}


def test_every_renamed_option_is_an_engine_option() -> None:
    assert set(WIRE_NAMES) <= JOB_OPTIONS


def test_parent_queue_is_validated_and_not_sent() -> None:
    entry, spec = job_entry(
        "q",
        JobInput("n", 1, {"parent_id": "p", "parent_queue": "pq"}),
        custom_id_key="jobId",
        max_payload_bytes=LIMIT,
    )
    assert spec.parent_queue == "pq"
    assert entry == {"name": "n", "data": 1, "parentId": "p"}


def test_a_job_with_data_none_and_a_name_inside_data_keeps_both() -> None:
    assert through_the_wire({}, "jobId").data_json == "null"
    spec = through_the_wire({}, "jobId", {"name": "inner"})
    assert spec.name == "n" and spec.data_json == '{"name":"inner"}'


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({"priority": "high"}, "priority must be a number"),
        ({"atempts": 3}, "unknown job option: atempts"),
        ({"delay": -1}, "delay must be at least 0"),
        ({"backoff": {"type": "linear"}}, "backoff.type must be 'exponential' or 'fixed'"),
    ],
)
def test_a_bad_option_is_refused_with_the_engines_message(
    opts: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError) as engine:
        build_job_spec("q", "n", 1, opts, max_payload_bytes=LIMIT)
    with pytest.raises(ValidationError) as sdk:
        job_entry("q", JobInput("n", 1, opts), custom_id_key="customId", max_payload_bytes=LIMIT)
    assert sdk.value.message == engine.value.message == message


def test_bulk_entries_are_refused_with_the_jobs_prefix() -> None:
    with pytest.raises(ValidationError, match=r"^jobs\[3\]: priority must be a number$"):
        job_entry(
            "q",
            JobInput("n", 1, {"priority": "x"}),
            custom_id_key="customId",
            max_payload_bytes=LIMIT,
            prefix="jobs[3]: ",
        )


def test_a_bad_queue_name_is_refused_before_sending() -> None:
    with pytest.raises(ValidationError, match="Queue name contains invalid characters"):
        job_entry("bad queue", JobInput("n"), custom_id_key="jobId", max_payload_bytes=LIMIT)


def test_a_flow_becomes_pushf_entries_parents_first_with_the_engines_ids() -> None:
    flow = {
        "name": "parent",
        "queue": "p",
        "data": {"x": 1},
        "opts": {"attempts": 2},
        "children": [
            {"name": "a", "queue": "c", "data": 1, "opts": {"job_id": "child-a"}},
            {"name": "b", "queue": "c", "data": 2, "children": [{"name": "g", "queue": "g"}]},
        ],
    }
    entries, tree = flow_entries(flow, max_payload_bytes=LIMIT)
    specs, _ = flatten(flow, max_payload_bytes=LIMIT)
    assert [e["id"] for e in entries][1] == "child-a"
    assert [e["queue"] for e in entries] == [s.queue for s in specs]
    parent_id = tree["id"]
    assert entries[0] == {
        "id": parent_id,
        "queue": "p",
        "input": {"name": "parent", "data": {"x": 1}, "maxAttempts": 2},
    }
    assert entries[1]["input"] == {"name": "a", "data": 1, "parentId": parent_id}
    assert entries[2]["input"]["parentId"] == parent_id
    assert entries[3]["input"]["parentId"] == entries[2]["id"] == tree["children"][1]["id"]


def test_a_bad_flow_is_refused_like_the_engine_refuses_it() -> None:
    with pytest.raises(ValidationError, match=r"flow.children\[0\]: priority must be a number"):
        flow_entries(
            {"name": "p", "queue": "q", "children": [{"queue": "c", "opts": {"priority": "x"}}]},
            max_payload_bytes=LIMIT,
        )
