"""The failure reasons are one closed vocabulary: the Literal, the DLQ filter and the schema."""

from __future__ import annotations

from pathlib import Path

from pgqueue.manager.dlq.policy import DLQ_REASONS
from pgqueue.manager.policy import FAILURE_REASONS

ROOT = Path(__file__).resolve().parents[2]


def test_the_failure_reason_literal_is_the_dlq_reason_list() -> None:
    assert FAILURE_REASONS == DLQ_REASONS


def test_the_schema_check_of_dlq_reasons_names_every_reason() -> None:
    schema = (ROOT / "migrations" / "schema.sql").read_text("utf-8")
    for reason in FAILURE_REASONS:
        assert f"'{reason}'" in schema, reason
