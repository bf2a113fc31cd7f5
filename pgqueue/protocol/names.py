"""The rules for queue names, job names and job ids, with bunqueue's messages.

Each check returns the message to send, or None when the value is fine, so the TCP
command reader (:class:`pgqueue.protocol.fields.Fields`) and other front ends share one
wording. Lengths are counted as JavaScript counts them (UTF-16 code units), because the
limits and messages are bunqueue's.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "MAX_NAME_LENGTH",
    "QUEUE_NAME_PATTERN",
    "job_id_error",
    "job_name_error",
    "js_length",
    "queue_name_error",
]

MAX_NAME_LENGTH: Final = 256
"""The longest queue name, job name or job id."""

QUEUE_NAME_PATTERN: Final = re.compile(r"[a-zA-Z0-9_\-.:]+")
"""bunqueue's ``^[a-zA-Z0-9_\\-.:]+$``; use with ``fullmatch``."""

_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")

_JOB_NAME_MESSAGE: Final = (
    f"Job name must be a non-empty string of at most {MAX_NAME_LENGTH} characters"
)


def js_length(text: str) -> int:
    """``text.length`` in JavaScript: characters outside the BMP count twice."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def queue_name_error(value: object) -> str | None:
    """What is wrong with ``value`` as a queue name, in bunqueue's words."""
    if value is None or value == "":
        return "Queue name is required"
    if not isinstance(value, str):
        return "Queue name must be a string"
    if js_length(value) > MAX_NAME_LENGTH:
        return f"Queue name too long (max {MAX_NAME_LENGTH} characters)"
    if QUEUE_NAME_PATTERN.fullmatch(value) is None:
        return "Queue name contains invalid characters"
    return None


def job_name_error(value: object) -> str | None:
    """What is wrong with ``value`` as a job name: one message for every fault, as bunqueue."""
    if not isinstance(value, str) or not value or js_length(value) > MAX_NAME_LENGTH:
        return _JOB_NAME_MESSAGE
    return None


def job_id_error(value: object, field: str) -> str | None:
    """What is wrong with ``value`` as the job id in ``field``.

    Ids are stored as text and appear in logs and events, so control characters
    (NUL above all, which PostgreSQL text cannot hold) are refused as well.
    """
    if not isinstance(value, str) or not value or js_length(value) > MAX_NAME_LENGTH:
        return f"{field} must be a non-empty string of at most {MAX_NAME_LENGTH} characters"
    if _CONTROL.search(value) is not None:
        return f"{field} must not contain control characters"
    return None
