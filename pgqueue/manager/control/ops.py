"""Job and queue control, progress, logs, listings and the workers registry.

The mixin only forwards (``forward``); the flows live in one module per concern:
:mod:`~pgqueue.manager.control.jobs` (cancel, update, priority, promote,
discard), :mod:`~pgqueue.manager.control.moves` (to delayed / waiting /
waiting-children), :mod:`~pgqueue.manager.control.progress` (progress and logs),
:mod:`~pgqueue.manager.control.listings` (queries, ``wait_for_job``),
:mod:`~pgqueue.manager.control.queues` (pause, drain, clean, obliterate,
retry completed), :mod:`~pgqueue.manager.control.flow_edits` (detach a child, drop
unstarted children), :mod:`~pgqueue.manager.control.dedup_keys` (deduplication keys)
and :mod:`~pgqueue.manager.control.workers` (the registry).
"""

from __future__ import annotations

from pgqueue.manager.base import ManagerBase
from pgqueue.manager.control import cluster, dedup_keys, figures, flow_edits, listings, workers
from pgqueue.manager.control import jobs as job_control
from pgqueue.manager.control import moves as job_moves
from pgqueue.manager.control import progress as progress_flows
from pgqueue.manager.control import queues as queue_control
from pgqueue.manager.forwarding import forward

__all__ = ["ControlOps"]


class ControlOps(ManagerBase):
    """Operations on jobs and queues beyond push, claim and completion."""

    # -- job control -------------------------------------------------------------

    remove = forward(job_control.remove)
    update_data = forward(job_control.update_data)
    change_priority = forward(job_control.change_priority)
    promote = forward(job_control.promote)
    promote_jobs = forward(job_control.promote_jobs)
    discard = forward(job_control.discard)
    move_to_delayed = forward(job_moves.move_to_delayed)
    change_delay = forward(job_moves.change_delay)
    move_to_wait = forward(job_moves.move_to_wait)
    move_to_waiting_children = forward(job_moves.move_to_waiting_children)

    # -- flows and deduplication keys --------------------------------------------

    remove_child_dependency = forward(flow_edits.remove_child_dependency)
    remove_unprocessed_children = forward(flow_edits.remove_unprocessed_children)
    get_deduplication_job_id = forward(dedup_keys.deduplication_job_id)
    remove_deduplication_key = forward(dedup_keys.remove_deduplication_key)
    remove_job_deduplication_key = forward(dedup_keys.remove_job_deduplication_key)

    # -- progress and logs -------------------------------------------------------

    update_progress = forward(progress_flows.update_progress)
    get_progress = forward(progress_flows.get_progress)
    add_log = forward(progress_flows.add_log)
    get_logs = forward(progress_flows.get_logs)
    clear_logs = forward(progress_flows.clear_logs)

    # -- queries -----------------------------------------------------------------

    get_jobs = forward(listings.get_jobs)
    get_job_by_custom_id = forward(listings.get_job_by_custom_id)
    count = forward(listings.count)
    get_counts_per_priority = forward(listings.get_counts_per_priority)
    list_queues = forward(listings.list_queues)
    finished_per_minute = forward(listings.finished_per_minute)
    wait_for_job = forward(listings.wait_for_job)

    # -- queue control -----------------------------------------------------------

    pause = forward(queue_control.pause)
    resume = forward(queue_control.resume)
    is_paused = forward(queue_control.is_paused)
    drain = forward(queue_control.drain)
    obliterate = forward(queue_control.obliterate)
    clean = forward(queue_control.clean)
    retry_completed = forward(queue_control.retry_completed)

    # -- workers registry --------------------------------------------------------

    register_worker = forward(workers.register_worker)
    worker_heartbeat = forward(workers.worker_heartbeat)
    unregister_worker = forward(workers.unregister_worker)
    unregister_client_workers = forward(workers.unregister_client_workers)
    list_workers = forward(workers.list_workers)

    # -- the brokers of the namespace ----------------------------------------------

    list_brokers = forward(cluster.list_brokers)
    mark_draining = forward(cluster.mark_draining)
    report_status = forward(cluster.report_status)
    rate_throttled = forward(cluster.rate_throttled)

    # -- the figures an operator alerts on -------------------------------------------

    alert_figures = forward(figures.alert_figures)
    postgres_health = forward(figures.postgres_health)
    job_inspect = forward(figures.job_inspect)
