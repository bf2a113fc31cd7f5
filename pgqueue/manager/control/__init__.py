"""Job and queue control beyond push, claim and completion.

:mod:`~pgqueue.manager.control.ops` (the manager's control operations),
:mod:`~pgqueue.manager.control.jobs` (cancel, update, priority, promote, discard),
:mod:`~pgqueue.manager.control.moves` (to delayed / waiting / waiting-children),
:mod:`~pgqueue.manager.control.progress` (progress and logs),
:mod:`~pgqueue.manager.control.listings` (queries, ``wait_for_job``),
:mod:`~pgqueue.manager.control.queues` (pause, drain, clean, obliterate),
:mod:`~pgqueue.manager.control.flow_edits`, :mod:`~pgqueue.manager.control.dedup_keys`,
:mod:`~pgqueue.manager.control.workers` (the registry) and
:mod:`~pgqueue.manager.control.probe` (why a write on a job found nothing).
"""
