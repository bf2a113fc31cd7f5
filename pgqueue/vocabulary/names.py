"""One rule set for queue names, job names, job ids and custom ids: bunqueue's.

Lengths are counted as JavaScript counts them (UTF-16 code units, so a
character outside the BMP counts twice), because the limits are bunqueue's and
its clients count that way.  Job names and ids must not contain control
characters (C0, DEL, C1; NUL above all, which PostgreSQL text cannot hold) nor
lone surrogates (no encoding can send them).  Queue names use bunqueue's
``^[a-zA-Z0-9_\\-.:]+$``.

The rules are decided once, as a :data:`NameFault`; they are worded twice,
because both wordings are part of the interface: the wire's (bunqueue's
messages, which its clients show: ``id must not contain control characters``)
by the ``…_error`` functions, and the Python API's (``job_id must be a string``)
by the ``validate_…`` functions, which raise
:class:`~pgqueue.errors.ValidationError`.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pgqueue.errors import ValidationError

__all__ = [
    "MAX_NAME_LENGTH",
    "QUEUE_NAME_PATTERN",
    "NameFault",
    "id_fault",
    "id_fault_text",
    "job_id_error",
    "job_name_error",
    "job_name_fault",
    "js_length",
    "queue_name_error",
    "queue_name_fault",
    "validate_group_id",
    "validate_job_id",
    "validate_job_name",
    "validate_queue_name",
]

MAX_NAME_LENGTH: Final = 256
"""The longest queue name, job name or job id, in UTF-16 code units."""

QUEUE_NAME_PATTERN: Final = re.compile(r"[a-zA-Z0-9_\-.:]+")
"""bunqueue's ``^[a-zA-Z0-9_\\-.:]+$``; use with ``fullmatch``."""

_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")

NameFault = Literal["missing", "type", "empty", "length", "characters"]
"""What is wrong with a name: absent, not a string, empty, too long, a bad character."""

_JOB_NAME_RULE: Final = (
    f"Job name must be a non-empty string of at most {MAX_NAME_LENGTH} characters"
)
_JOB_NAME_CONTROL: Final = f"{_JOB_NAME_RULE} without control characters"
_ID_RULE: Final = f"must be a non-empty string of at most {MAX_NAME_LENGTH} characters"
_ID_RULE_PRINTABLE: Final = (
    f"must be a non-empty string of at most {MAX_NAME_LENGTH} printable characters"
)


def js_length(text: str) -> int:
    """``text.length`` in JavaScript: characters outside the BMP count twice."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# ---------------------------------------------------------------- the rules


def queue_name_fault(value: object) -> NameFault | None:
    """What is wrong with ``value`` as a queue name, or None."""
    if value is None or value == "":
        return "missing"
    if not isinstance(value, str):
        return "type"
    if js_length(value) > MAX_NAME_LENGTH:
        return "length"
    if QUEUE_NAME_PATTERN.fullmatch(value) is None:
        return "characters"
    return None


def id_fault(value: object) -> NameFault | None:
    """What is wrong with ``value`` as a job id, custom id or key, or None."""
    if not isinstance(value, str):
        return "type"
    if not value:
        return "empty"
    if js_length(value) > MAX_NAME_LENGTH:
        return "length"
    if _CONTROL.search(value) is not None:
        return "characters"
    return None


job_name_fault = id_fault
"""A job name follows the rule of ids."""


# ---------------------------------------------------------------- the wire's words


def queue_name_error(value: object) -> str | None:
    """What is wrong with ``value`` as a queue name, in bunqueue's words."""
    fault = queue_name_fault(value)
    if fault is None:
        return None
    return _QUEUE_MESSAGES[fault].format(label="Queue name")


_QUEUE_MESSAGES: Final[dict[NameFault, str]] = {
    "missing": "Queue name is required",
    "type": "{label} must be a string",
    "empty": "Queue name is required",
    "length": f"Queue name too long (max {MAX_NAME_LENGTH} characters)",
    "characters": "Queue name contains invalid characters",
}


def job_name_error(value: object) -> str | None:
    """What is wrong with ``value`` as a job name: bunqueue's one message for the shape."""
    fault = job_name_fault(value)
    if fault is None:
        return None
    return _JOB_NAME_CONTROL if fault == "characters" else _JOB_NAME_RULE


def job_id_error(value: object, field: str) -> str | None:
    """What is wrong with ``value`` as the job id in ``field``, in bunqueue's words."""
    fault = id_fault(value)
    if fault is None:
        return None
    if fault == "characters":
        return f"{field} must not contain control characters"
    return f"{field} {_ID_RULE}"


# ---------------------------------------------------------------- the Python API's words


def id_fault_text(fault: NameFault) -> str:
    """The Python API's message tail for an id ``fault`` (after the field's name)."""
    return "must be a string" if fault == "type" else _ID_RULE_PRINTABLE


def validate_queue_name(queue: object, label: str = "queue") -> str:
    """``queue`` if it is a valid queue name, else :class:`ValidationError` naming ``label``."""
    fault = queue_name_fault(queue)
    if fault is not None:
        raise ValidationError(_QUEUE_MESSAGES[fault].format(label=label), field=label)
    return queue  # type: ignore[return-value]


def validate_job_name(name: object, label: str = "name") -> str:
    """``name`` if it is a valid job name, else :class:`ValidationError`."""
    if job_name_fault(name) is not None:
        raise ValidationError(_JOB_NAME_CONTROL, field=label)
    return name  # type: ignore[return-value]


def validate_job_id(job_id: object, label: str = "jobId") -> str:
    """``job_id`` if it is a valid job id or custom id, else :class:`ValidationError`."""
    fault = id_fault(job_id)
    if fault is not None:
        raise ValidationError(f"{label} {id_fault_text(fault)}", field=label)
    return job_id  # type: ignore[return-value]


def validate_group_id(group_id: object, label: str = "groupId") -> str:
    """``group_id`` if it names a job group (a non-empty string of at most 256
    UTF-16 code units, no NUL), else :class:`ValidationError` in bunqueue's words."""
    if group_id is None:
        text = f"{label} is required"
    elif not isinstance(group_id, str):
        text = f"{label} must be a string"
    elif not group_id:
        text = f"{label} must be a non-empty string"
    elif js_length(group_id) > MAX_NAME_LENGTH:
        text = f"{label} must be at most {MAX_NAME_LENGTH} characters"
    elif "\0" in group_id:
        text = f"{label} must not contain NUL characters"
    else:
        return group_id
    raise ValidationError(text, field=label)
