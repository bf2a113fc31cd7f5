"""Global limits (queue rate and concurrency) and job groups (G7).

Settings live in PostgreSQL (``pgqueue_queues``, ``pgqueue_groups``) and the
claim enforces them (``job_claim_planned``), so they hold across every broker.
:mod:`~pgqueue.manager.limits.queue_limits` sets and reads a queue's limits,
:mod:`~pgqueue.manager.limits.groups` a group's; :mod:`~pgqueue.manager.limits.ops`
is the engine's mixin.
"""
