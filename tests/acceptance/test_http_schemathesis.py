"""schemathesis against the broker's own OpenAPI document, on a real broker process.

Every operation of ``/openapi.json`` gets requests generated from its schema
(valid and not: wrong types, missing fields, odd strings in paths and queries);
no answer may be a 5xx, and every answer must match what the document says of
that operation (its status codes, its media type, its body schema).

``PGQUEUE_FUZZ_EXAMPLES`` scales the examples per operation (default: 150 spread
over the operations, at least 3 each).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.acceptance.conftest import BrokerFactory, BrokerProcess

# Streams never end (SSE, metrics scrapes are fine); long polls are bounded below.
STREAMS = {"/events", "/events/queues/{queue}", "/queues/{queue}/events", "/pgqueue/events",
           "/pgqueue/events/queues/{queue}"}  # fmt: skip
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def api_broker(db_dsn: str) -> Iterator[BrokerProcess]:
    factory = BrokerFactory(
        db_dsn, f"t{uuid.uuid4().hex[:10]}", Path(tempfile.mkdtemp(prefix="pgqueue-api-"))
    )
    try:
        yield factory.start("api", "--max-request-age-ms", "5000")
    finally:
        factory.stop_all()


def examples_per_operation(operations: int) -> int:
    total = int(os.environ.get("PGQUEUE_FUZZ_EXAMPLES", "150"))
    return max(3, total // max(operations, 1))


@pytest.mark.timeout(600)
def test_every_generated_request_gets_no_5xx_and_an_answer_the_document_describes(
    api_broker: BrokerProcess,
) -> None:
    base_url = f"http://127.0.0.1:{api_broker.http_port}"
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    operations = [op for op in operations if op.path not in STREAMS]
    assert len(operations) > 90
    per_operation = examples_per_operation(len(operations))
    failures: list[str] = []
    for operation in operations:

        @settings(
            max_examples=per_operation,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
        )
        @given(case=operation.as_strategy())
        def call(case: schemathesis.Case) -> None:
            if case.query is not None:  # a long poll answers within a second
                for name in ("timeout", "waitMs"):
                    if name in case.query:
                        case.query[name] = 100
            if isinstance(case.body, dict):
                for name in ("timeout", "ttl"):
                    if name in case.body:
                        case.body[name] = 100
            case.call_and_validate(base_url=base_url, checks=CHECKS, timeout=30)

        try:
            call()
        except (Exception, BaseExceptionGroup) as exc:
            failures.append(f"{operation.label}: {str(exc)[:1500]}")
    assert api_broker.process.poll() is None, "the broker died"
    assert not failures, "\n\n".join(failures)
