"""HTTP status codes for command answers.

The answer body is the protocol's (``{ok: false, error}`` with bunqueue's
texts); the status comes from the *type* of the error behind it, which
:func:`~pgqueue.server.dispatch.dispatch` reports through ``on_error``:

=====  ==================================================================
200    ``ok: true`` (also an idempotent ACK of a finished job, which
       answers ``data.applied: false``, as on TCP)
400    bad input: validation, protocol (nothing was written)
401    missing or refused token
403    a write with a read-only token
404    no such job
409    conflict: stale lease or token, already finalized, wrong state,
       duplicate
413    request body over the limit; 415 body not JSON
501    the command is not implemented (yet)
503    database unavailable, commit outcome unknown (retry with the same
       custom id), broker fenced or draining
500    anything else (details in the broker log, never in the answer)
=====  ==================================================================
"""

from __future__ import annotations

from collections.abc import Sequence

from pgqueue.errors import (
    AuthError,
    BrokerFenced,
    DatabaseUnavailable,
    DuplicateJob,
    Forbidden,
    IndeterminateCommit,
    InvalidState,
    JobNotFound,
    LeaseLost,
    ProtocolError,
    ValidationError,
)
from pgqueue.server.commands import COMMANDS

__all__ = ["status_for_answer", "status_for_error"]

_BY_TYPE: tuple[tuple[type[Exception], int], ...] = (
    (Forbidden, 403),
    (AuthError, 401),
    (JobNotFound, 404),
    (InvalidState, 409),
    (ValidationError, 400),
    (ProtocolError, 400),
    (LeaseLost, 409),
    (DuplicateJob, 409),
    (BrokerFenced, 503),
    (DatabaseUnavailable, 503),
    (IndeterminateCommit, 503),
)


def status_for_error(exc: Exception) -> int:
    """The status of an answer caused by ``exc`` (most specific type first)."""
    for kind, status in _BY_TYPE:
        if isinstance(exc, kind):
            return status
    return 500


def status_for_answer(command: str, answer: dict[str, object], errors: Sequence[Exception]) -> int:
    """The status of a command's answer; ``errors`` are those ``dispatch`` reported."""
    if answer.get("ok") is True:
        return 200
    if errors:
        return status_for_error(errors[-1])
    if command not in COMMANDS:
        return 501
    return 500
