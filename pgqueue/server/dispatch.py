"""Serve one decoded command: auth gate, lookup, access, namespace, handler, errors.

Errors become ``{ok: false, error}`` with bunqueue's texts.  Infrastructure
details never leak to clients: database and unexpected errors read
``Internal server error`` (logged in full), except an indeterminate commit,
whose message tells the client what to do.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pgqueue.errors import (
    AuthError,
    IndeterminateCommit,
    PgQueueError,
    ProtocolError,
    StorageError,
)
from pgqueue.protocol import Fields, command_name, request_id
from pgqueue.server.access import check_request
from pgqueue.server.commands import COMMANDS
from pgqueue.server.request import ClientState, Request
from pgqueue.server.wire import client_message

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost

__all__ = ["dispatch", "error_response"]

log = logging.getLogger("pgqueue.server")


def error_response(message: str, req_id: str | None) -> dict[str, Any]:
    response: dict[str, Any] = {"ok": False, "error": message}
    if req_id is not None:
        response["reqId"] = req_id
    return response


async def dispatch(
    broker: BrokerHost,
    client: ClientState,
    msg: dict[str, Any],
    *,
    on_error: Callable[[Exception], None] | None = None,
) -> dict[str, Any]:
    """The response map for one request map.

    ``on_error`` sees the exception behind an ``{ok: false}`` answer (the HTTP
    API turns its type into a status code); the answer itself is unchanged.
    """
    req_id = request_id(msg)
    try:
        name = command_name(msg)
    except ProtocolError as exc:
        if on_error is not None:
            on_error(exc)
        return error_response(exc.message, req_id)
    if broker.auth_required and not client.authenticated and name != "Auth":
        return error_response("Not authenticated", req_id)
    handler = COMMANDS.get(name)
    if handler is None:
        return error_response(f"Unknown command: {name}", req_id)
    try:
        if broker.auth_required and name != "Auth":
            check_request(broker.tokens, client.credential, name)
        broker = broker.for_namespace(client.namespace)  # the tenant of its namespace
    except AuthError as exc:
        if on_error is not None:
            on_error(exc)
        return error_response(exc.message, req_id)
    started = time.perf_counter()
    ok = False
    try:
        payload = await handler(Request(broker, client, name, Fields(msg)))
        ok = True
    except PgQueueError as exc:
        if isinstance(exc, StorageError) and not isinstance(exc, IndeterminateCommit):
            log.warning("%s failed: %s", name, exc)
        if on_error is not None:
            on_error(exc)
        return error_response(client_message(exc), req_id)
    except Exception as exc:
        log.exception("%s failed unexpectedly", name)
        if on_error is not None:
            on_error(exc)
        return error_response("Internal server error", req_id)
    finally:
        broker.observe(name, time.perf_counter() - started, ok)
    response: dict[str, Any] = {"ok": True}
    if payload:
        response.update(payload)
    if req_id is not None:
        response["reqId"] = req_id
    return response
