"""The dead-letter queue: entries, audited redrive and purge, per-queue settings.

:mod:`~pgqueue.manager.dlq.ops` (the manager's DLQ operations),
:mod:`~pgqueue.manager.dlq.policy` (validation, filters, defaults; no I/O),
:mod:`~pgqueue.manager.dlq.models`, :mod:`~pgqueue.manager.dlq.reads`,
:mod:`~pgqueue.manager.dlq.redrive` (redrive and purge) and
:mod:`~pgqueue.manager.dlq.settings` (per-queue DLQ and stall settings).
"""
