"""The HTTP layer's pure parts: command maps, status codes, the route table."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from pgqueue.errors import (
    AlreadyFinalized,
    AuthError,
    BrokerFenced,
    DatabaseUnavailable,
    DependencyNotFound,
    DuplicateJob,
    IndeterminateCommit,
    InvalidState,
    JobNotFound,
    LeaseLost,
    PgQueueError,
    ProtocolError,
    StorageError,
    ValidationError,
)
from pgqueue.server.http.app import HttpState, build_app
from pgqueue.server.http.auth import bearer_token
from pgqueue.server.http.binding import Endpoint, Param, build_command
from pgqueue.server.http.openapi import openapi_document, openapi_path
from pgqueue.server.http.routes import ENDPOINTS, SYSTEM_ROUTES
from pgqueue.server.http.status import status_for_answer, status_for_error

PULL = next(e for e in ENDPOINTS if e.command == "PULL")
PUSH = next(e for e in ENDPOINTS if e.command == "PUSH")
ACK = next(e for e in ENDPOINTS if e.command == "ACK")
DLQ = next(e for e in ENDPOINTS if e.command == "Dlq")
LIST = next(e for e in ENDPOINTS if e.command == "GetJobs")
STALL = next(e for e in ENDPOINTS if e.command == "SetStallConfig")


def test_query_values_are_typed_and_path_fields_win() -> None:
    msg = build_command(
        PULL, {"queue": "q"}, {"timeout": ["5000"], "owner": ["w"], "queue": ["other"]}, None
    )
    assert msg == {"cmd": "PULL", "queue": "q", "timeout": 5000, "owner": "w", "detach": True}


def test_a_query_value_that_does_not_parse_is_passed_on_for_the_handler_to_refuse() -> None:
    msg = build_command(PULL, {"queue": "q"}, {"timeout": ["soon"]}, None)
    assert msg["timeout"] == "soon"
    flag = Endpoint("GET", "/x", "X", "x", "t", query=(Param("asc", "boolean"),))
    assert build_command(flag, {}, {"asc": ["false"]}, None)["asc"] is False
    assert build_command(flag, {}, {"asc": ["maybe"]}, None)["asc"] == "maybe"


def test_list_parameters_accept_aliases_repeats_and_commas() -> None:
    query = {"status": ["waiting,delayed"], "states": ["failed"], "limit": ["10"]}
    msg = build_command(LIST, {"queue": "q"}, query, None)
    assert msg["state"] == ["waiting", "delayed", "failed"] and msg["limit"] == 10


def test_dotted_targets_build_nested_maps() -> None:
    msg = build_command(DLQ, {"queue": "q"}, {"limit": ["5"], "reason": ["stalled"]}, None)
    assert msg["filter"] == {"limit": 5, "reason": "stalled"}


def test_an_open_body_passes_every_field_but_cannot_change_the_command() -> None:
    body = {"cmd": "Obliterate", "reqId": "7", "queue": "elsewhere", "data": 1, "lifo": True}
    msg = build_command(PUSH, {"queue": "q"}, {}, body)
    assert msg == {"cmd": "PUSH", "queue": "q", "data": 1, "lifo": True}


def test_a_declared_body_passes_only_its_fields() -> None:
    body = {"token": "t", "result": [1], "id": "other", "removeOnComplete": True, "junk": 1}
    msg = build_command(ACK, {"id": "j"}, {}, body)
    assert msg == {"cmd": "ACK", "id": "j", "token": "t", "result": [1], "removeOnComplete": True}


def test_a_config_body_is_the_config_or_its_config_member() -> None:
    assert build_command(STALL, {"queue": "q"}, {}, {"maxStalls": 2})["config"] == {"maxStalls": 2}
    wrapped = build_command(STALL, {"queue": "q"}, {}, {"config": {"maxStalls": 3}})
    assert wrapped["config"] == {"maxStalls": 3}


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ValidationError("x"), 400),
        (DependencyNotFound("x"), 400),
        (ProtocolError("x"), 400),
        (AuthError("x"), 401),
        (JobNotFound("j"), 404),
        (InvalidState("x"), 409),
        (LeaseLost("j"), 409),
        (AlreadyFinalized("j"), 409),
        (DuplicateJob("x"), 409),
        (BrokerFenced("x"), 503),
        (DatabaseUnavailable("x"), 503),
        (IndeterminateCommit("x"), 503),
        (StorageError("x"), 500),
        (PgQueueError("x"), 500),
        (RuntimeError("x"), 500),
    ],
)
def test_errors_map_to_status_codes_by_type(error: Exception, status: int) -> None:
    assert status_for_error(error) == status


def test_answers_without_an_error_map_to_200_or_501() -> None:
    assert status_for_answer("PUSH", {"ok": True}, []) == 200
    assert status_for_answer("NoSuchCommand", {"ok": False, "error": "Unknown"}, []) == 501


@pytest.mark.parametrize(
    ("header", "token"),
    [("Bearer abc", "abc"), ("bearer  abc ", "abc"), ("Basic abc", None), ("Bearer", None)],
)
def test_bearer_tokens_are_read_from_the_authorization_header(
    header: str, token: str | None
) -> None:
    assert bearer_token({"authorization": header}) == token


def test_the_application_serves_exactly_the_documented_routes() -> None:
    app = build_app(HttpState(cast(Any, object())))
    served = {
        (method, openapi_path(route.path))
        for route in app.routes
        for method in (getattr(route, "methods", None) or ())
        if method != "HEAD"
    }
    document = openapi_document()
    listed = {(m.upper(), path) for path, item in document["paths"].items() for m in item}
    assert served == listed


def test_the_reference_documents_every_route() -> None:
    reference = (Path(__file__).parents[2] / "docs" / "http-api.md").read_text()
    for endpoint in ENDPOINTS:
        assert f"| {endpoint.method} | `{endpoint.path}` | `{endpoint.command}` |" in reference
    for route in SYSTEM_ROUTES:
        assert f"| {route.method} | `{route.path}` |" in reference


def test_every_route_of_the_table_is_unique() -> None:
    keys = [(e.method, e.path) for e in ENDPOINTS]
    assert len(keys) == len(set(keys))
