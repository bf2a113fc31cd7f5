"""Dead-letter queue management: list, stats, audited redrive and purge, settings.

Every redrive, purge and removal names its ``actor`` (the auth token's name,
or a service name) and may give a reason (``why``); each operation writes ONE
audit row (``pgqueue_dlq_audit``) and a ``dlq_audit`` outbox event in the
same statement as its effect, plus a ``redriven`` / ``removed`` event per
job.  Manual operations are audited even when they select nothing.

An entry whose job live jobs still wait on (a flow parent, a ``dependsOn``
job) is never deleted, as :func:`pgqueue.manager.control.jobs.remove` keeps
such a job: purge and the upkeep's ``maxAge`` / ``maxEntries`` skip it, and
removing it alone is refused with :class:`~pgqueue.errors.InvalidState`.
Redrive it (its dependents then run as planned) or remove the dependents.

    moved = await m.redrive("emails", reason="timeout", actor="ops-token", why="SMTP is back")
    page = await m.list_dlq("emails", retriable=True, limit=50)
    await m.set_dlq_config("emails", {"autoRetry": True, "maxAutoRetries": 5})
"""

from __future__ import annotations

from pgqueue.manager.base import ManagerBase
from pgqueue.manager.dlq import actions
from pgqueue.manager.forwarding import forward

__all__ = ["DlqOps"]


class DlqOps(ManagerBase):
    """Operations on dead-lettered jobs and per-queue DLQ and stall settings.

    Each method is the flow of :mod:`~pgqueue.manager.dlq.actions` of the same
    name, run on this manager's context (:func:`~pgqueue.manager.forwarding.forward`).
    """

    list_dlq = forward(actions.list_dlq)
    count_dlq = forward(actions.count_dlq)
    dlq_stats = forward(actions.dlq_stats)
    redrive = forward(actions.redrive)
    retry_job = forward(actions.retry_job)
    purge_dlq = forward(actions.purge_dlq)
    remove_dlq_job = forward(actions.remove_dlq_job)
    dlq_audit = forward(actions.dlq_audit)

    # -- settings ----------------------------------------------------------------

    get_dlq_config = forward(actions.get_dlq_config)
    set_dlq_config = forward(actions.set_dlq_config)
    get_stall_config = forward(actions.get_stall_config)
    set_stall_config = forward(actions.set_stall_config)
