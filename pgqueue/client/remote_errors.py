"""A broker's ``{ok: false, error}`` as the package's exception.

bunqueue's errors carry no codes; clients match their texts (reference §1.4),
and so does :func:`remote_error`, most specific first:

========================================================  ============================
text                                                      raised
========================================================  ============================
``Job <id> was cancelled``                                 :class:`JobCancelled`
``Invalid or expired lock token``, ``invalid token)``,    :class:`LeaseLost`
``Lock not found or invalid token``, ``already finalized``
``Dependency job not found``, ``Parent job not found``,   :class:`DependencyNotFound`
``Dependency cycle``, ``cannot depend on itself``
any other ``not found``                                   :class:`JobNotFound`
``Cannot move job from state``, ``is not active``, ...    :class:`InvalidState`
``Duplicate unique_key``                                  :class:`DuplicateJob`
``Not authenticated``, ``Invalid token``                  :class:`AuthError`
``may have committed``                                    :class:`IndeterminateCommit`
``Database unavailable``                                  :class:`DatabaseUnavailable`
``Frame too large``                                       :class:`FrameTooLarge`
``Unknown command``, ``Invalid command``                  :class:`ProtocolError`
field validation (``must be``, ``is required``, ...)      :class:`ValidationError`
anything else (``Internal server error``, ...)            :class:`RemoteError`
========================================================  ============================

The message is the broker's, unchanged.
"""

from __future__ import annotations

import re

from pgqueue.errors import (
    AuthError,
    DatabaseUnavailable,
    DependencyNotFound,
    DuplicateJob,
    FrameTooLarge,
    IndeterminateCommit,
    InvalidState,
    JobCancelled,
    JobNotFound,
    LeaseLost,
    PgQueueError,
    ProtocolError,
    RemoteError,
    ValidationError,
)

__all__ = ["remote_error"]

_JOB_IN_TEXT = re.compile(r"for job (\S+)|Job (\S+) is")
_CANCELLED = re.compile(r"^Job (\S+) was cancelled$")
_LEASE = (
    "invalid or expired lock token",
    "or invalid token",
    "lock not found",
    "already finalized",
)
_DEPENDENCY = (
    "dependency job not found",
    "parent job not found",
    "dependency cycle",
    "cannot depend on itself",
)
_STATE = (
    "cannot move job from state",
    "is not active",
    "is not delayed",
    "is not in a state",
    "current state:",
    "is failed:",
    "live jobs depend on",
    "cannot obliterate",
    "is already ",
)
_VALIDATION = re.compile(
    r"^jobs\[\d+\]: |must be|is required|too large|too long|invalid characters"
    r"|unknown job option|length must match|token required|is not supported"
    r"|has unknown keys|needs a ttl|invalid event cursor|must not|given twice|at most"
    r"|unknown [\w ]+ field|refused by the database",
    re.IGNORECASE,
)


def _job_id(message: str, default: str | None) -> str:
    match = _JOB_IN_TEXT.search(message)
    if match:
        return match.group(1) or match.group(2)
    return default or ""


def remote_error(message: str, job_id: str | None = None) -> PgQueueError:
    """The exception for a broker's error text (``job_id``: the request's, if any)."""
    text = message.lower()
    cancelled = _CANCELLED.match(message)
    if cancelled:
        return JobCancelled(cancelled.group(1), message)
    if any(marker in text for marker in _LEASE):
        return LeaseLost(_job_id(message, job_id), message)
    if any(marker in text for marker in _DEPENDENCY):
        return DependencyNotFound(message, field="dependsOn")
    if "not found" in text:
        return JobNotFound(job_id, message)
    if any(marker in text for marker in _STATE):
        return InvalidState(message, field="id")
    if "duplicate unique_key" in text:
        return DuplicateJob(message)
    if text in ("not authenticated", "invalid token"):
        return AuthError(message)
    if "may have committed" in text:
        return IndeterminateCommit(message)
    if text.startswith("database unavailable"):
        return DatabaseUnavailable(message)
    if text.startswith("frame too large"):
        return FrameTooLarge(message)
    if text.startswith(("unknown command", "invalid command")):
        return ProtocolError(message)
    if _VALIDATION.search(message):
        return ValidationError(message)
    return RemoteError(message)
