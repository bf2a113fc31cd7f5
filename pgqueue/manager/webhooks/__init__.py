"""Webhooks: registration, listing and the delivery log (delivery runs in maintenance).

:mod:`~pgqueue.manager.webhooks.ops` (the manager's webhook operations),
:mod:`~pgqueue.manager.webhooks.policy` (validation, bodies, signatures; no I/O)
and :mod:`~pgqueue.manager.webhooks.models`.
"""
