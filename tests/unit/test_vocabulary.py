"""The shared vocabulary: one declaration per option, one rule per name, in sync."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_type_hints

import pytest

from pgqueue.client.options import JobOptions
from pgqueue.errors import ValidationError
from pgqueue.server.http.routes import JOB_OPTIONS as HTTP_JOB_FIELDS
from pgqueue.vocabulary import names
from pgqueue.vocabulary.checks import check_integer, integer_fault, number_fault
from pgqueue.vocabulary.docs import END, START, job_options_table
from pgqueue.vocabulary.job_options import JOB_OPTIONS, sdk_options, wire_options

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_options_table_matches_the_declarations() -> None:
    page = (ROOT / "docs" / "protocol.md").read_text()
    committed = page.split(START, 1)[1].split(END, 1)[0].strip()
    assert committed == job_options_table(), "run scripts/docs_job_options.py"


def test_each_option_is_declared_once() -> None:
    pythons = [n for o in JOB_OPTIONS for n in (o.python, *o.python_aliases) if n]
    wires = [n for o in JOB_OPTIONS for n in (o.wire, *o.wire_aliases) if n]
    assert len(pythons) == len(set(pythons))
    assert len(wires) == len(set(wires))


def test_the_sdk_typed_options_are_the_declared_ones() -> None:
    declared = {o.python for o in sdk_options()}
    assert set(get_type_hints(JobOptions)) == declared


def test_the_http_job_body_lists_every_wire_option() -> None:
    wire = {n for o in wire_options() for n in (o.wire, *o.wire_aliases)}
    assert {p.name for p in HTTP_JOB_FIELDS} == wire | {"name", "data"}


def test_the_vocabulary_imports_no_driver_and_no_layer() -> None:
    for path in sorted((ROOT / "pgqueue" / "vocabulary").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = node.module
            elif isinstance(node, ast.Import):
                module = node.names[0].name
            else:
                continue
            if module.startswith("pgqueue"):
                assert module in ("pgqueue.errors",) or module.startswith("pgqueue.vocabulary"), (
                    f"{path.name} imports {module}"
                )


# -- one rule for names: bunqueue's (UTF-16 length, no control characters) -----------


@pytest.mark.parametrize(
    ("value", "fault"),
    [
        ("é" * 256, None),
        ("😀" * 128, None),
        ("😀" * 129, "length"),
        ("a\nb", "characters"),
        ("a\x85b", "characters"),
        ("lone\ud800", "characters"),
        ("", "empty"),
        (5, "type"),
    ],
    ids=repr,
)
def test_ids_and_job_names_follow_one_rule(value: object, fault: str | None) -> None:
    assert names.id_fault(value) == fault
    assert names.job_name_fault(value) == fault


def test_the_engine_and_the_wire_refuse_the_same_ids() -> None:
    for value in ("ok", "😀" * 129, "tab\there", "", 7):
        wire = names.job_id_error(value, "id") is None
        try:
            names.validate_job_id(value, "id")
            engine = True
        except ValidationError:
            engine = False
        assert wire == engine, value


# -- one integer check ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "fault"),
    [
        (3, None),
        (3.0, None),
        (True, "must be a number"),
        ("3", "must be a number"),
        (float("nan"), "must be a finite number"),
        (1.5, "must be an integer"),
        (-1, "must be at least 0"),
        (11, "must be at most 10"),
    ],
    ids=repr,
)
def test_one_integer_check_with_bunqueues_words(value: object, fault: str | None) -> None:
    assert integer_fault(value, 0, 10) == fault


def test_a_python_only_integer_refuses_floats() -> None:
    assert integer_fault(3.0, 0, 10, floats=False) == "must be an integer"
    with pytest.raises(ValidationError, match=r"^count must be at most 10$"):
        check_integer(11, "count", 1, 10, floats=False)


def test_number_bounds_are_printed_as_javascript_prints_them() -> None:
    assert number_fault(70_000, 0, 60_000.0) == "must be at most 60000"
