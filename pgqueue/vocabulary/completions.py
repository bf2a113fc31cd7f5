"""What a worker reports about a claimed job: a completion or a failed attempt.

One declaration for the engine (:mod:`pgqueue.manager.completion`) and the SDK's
transports (:mod:`pgqueue.client.transport`), which send these records as they are
(embedded) or encode them for the wire (TCP).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["AckItem", "FailItem"]


@dataclass(frozen=True, slots=True)
class AckItem:
    """One completion in a batch: the job, the token of its claim, its result.

    ``where`` names the item in a refusal of its result (``"results[3]"`` for
    an ACKB entry), as PUSHB names its ``jobs[i]``."""

    job_id: str
    token: str
    result: Any = None
    remove_on_complete: Any = None  # bool, or BullMQ's count / {age, count}
    where: str | None = None


@dataclass(frozen=True, slots=True)
class FailItem:
    """One failed attempt reported by a worker."""

    job_id: str
    token: str
    error: str = ""
    stacktrace: Sequence[str] | None = None
    unrecoverable: bool = False
