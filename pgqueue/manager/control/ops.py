"""Job and queue control, progress, logs, listings and the workers registry.

The mixin only delegates; the flows live in one module per concern:
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

from collections.abc import Sequence
from typing import Any

from pgqueue.manager.base import ManagerBase
from pgqueue.manager.control import cluster, dedup_keys, flow_edits, listings, workers
from pgqueue.manager.control import jobs as job_control
from pgqueue.manager.control import moves as job_moves
from pgqueue.manager.control import progress as progress_flows
from pgqueue.manager.control import queues as queue_control
from pgqueue.manager.models import Job

__all__ = ["ControlOps"]


class ControlOps(ManagerBase):
    """Operations on jobs and queues beyond push, claim and completion."""

    # -- job control -------------------------------------------------------------

    async def remove(self, job_id: str) -> None:
        """Cancel a job that is not active (refused while live jobs depend on it)."""
        await job_control.remove(self.ctx, job_id)

    async def update_data(self, job_id: str, data: Any) -> None:
        await job_control.update_data(self.ctx, job_id, data)

    async def change_priority(self, job_id: str, priority: int, lifo: bool | None = None) -> None:
        await job_control.change_priority(self.ctx, job_id, priority, lifo)

    async def promote(self, job_id: str) -> None:
        """A delayed job becomes due now."""
        await job_control.promote(self.ctx, job_id)

    async def promote_jobs(self, queue: str, count: int | None = None) -> int:
        return await job_control.promote_jobs(self.ctx, queue, count)

    async def discard(self, job_id: str, token: str | None = None) -> None:
        """Dead-letter a live job now (reason ``explicit_fail``)."""
        await job_control.discard(self.ctx, job_id, token)

    async def move_to_delayed(self, job_id: str, delay_ms: int, token: str) -> None:
        """The worker holding ``job_id`` puts it back, due ``delay_ms`` from now."""
        await job_moves.move_to_delayed(self.ctx, job_id, delay_ms, token)

    async def change_delay(self, job_id: str, delay_ms: int, token: str | None = None) -> None:
        await job_moves.change_delay(self.ctx, job_id, delay_ms, token)

    async def move_to_wait(self, job_id: str, token: str | None = None) -> None:
        await job_moves.move_to_wait(self.ctx, job_id, token)

    async def move_to_waiting_children(self, job_id: str, token: str) -> bool:
        return await job_moves.move_to_waiting_children(self.ctx, job_id, token)

    # -- flows and deduplication keys --------------------------------------------

    async def remove_child_dependency(self, child_id: str) -> bool:
        """The child stops being a dependency of its parent (True when it was one)."""
        return await flow_edits.remove_child_dependency(self.ctx, child_id)

    async def remove_unprocessed_children(self, parent_id: str) -> int:
        """Remove the parent's children that have not started; returns how many."""
        return await flow_edits.remove_unprocessed_children(self.ctx, parent_id)

    async def get_deduplication_job_id(self, queue: str, key: str) -> str | None:
        """The live job holding deduplication key ``key`` in ``queue``."""
        return await dedup_keys.deduplication_job_id(self.ctx, queue, key)

    async def remove_deduplication_key(self, queue: str, key: str) -> int:
        """Free a deduplication key (its owner stays); returns 1 when one was held."""
        return await dedup_keys.remove_deduplication_key(self.ctx, queue, key)

    async def remove_job_deduplication_key(self, job_id: str) -> bool:
        """Free the deduplication key job ``job_id`` holds."""
        return await dedup_keys.remove_job_deduplication_key(self.ctx, job_id)

    # -- progress and logs -------------------------------------------------------

    async def update_progress(
        self, job_id: str, progress: Any, message: str | None = None, token: str | None = None
    ) -> None:
        await progress_flows.update_progress(self.ctx, job_id, progress, message, token)

    async def get_progress(self, job_id: str) -> tuple[Any, str | None]:
        return await progress_flows.get_progress(self.ctx, job_id)

    async def add_log(self, job_id: str, message: str, level: str = "info") -> bool:
        return await progress_flows.add_log(self.ctx, job_id, message, level)

    async def get_logs(
        self, job_id: str, start: int = 0, end: int = -1
    ) -> tuple[list[dict[str, Any]], int]:
        return await progress_flows.get_logs(self.ctx, job_id, start, end)

    async def clear_logs(self, job_id: str, keep_logs: int = 0) -> int:
        return await progress_flows.clear_logs(self.ctx, job_id, keep_logs)

    # -- queries -----------------------------------------------------------------

    async def get_jobs(
        self,
        queue: str,
        states: str | Sequence[str] | None = None,
        offset: int = 0,
        limit: int = 100,
        asc: bool = True,
    ) -> list[Job]:
        return await listings.get_jobs(self.ctx, queue, states, offset, limit, asc)

    async def get_job_by_custom_id(self, custom_id: str) -> Job | None:
        return await listings.get_job_by_custom_id(self.ctx, custom_id)

    async def count(self, queue: str) -> int:
        """Pending jobs: waiting + prioritized + delayed."""
        return await listings.count(self.ctx, queue)

    async def get_counts_per_priority(self, queue: str) -> dict[int, int]:
        return await listings.get_counts_per_priority(self.ctx, queue)

    async def list_queues(self) -> list[str]:
        return await listings.list_queues(self.ctx)

    async def finished_per_minute(
        self, queue: str, state: str, minutes: int = listings.MAX_SERIES_MINUTES
    ) -> tuple[int, list[int]]:
        """``(current minute's start in epoch ms, counts per minute newest first)``."""
        return await listings.finished_per_minute(self.ctx, queue, state, minutes)

    async def wait_for_job(self, job_id: str, timeout_ms: int) -> tuple[bool, Any]:
        """``(True, result)`` once completed; ``(False, None)`` if it failed or timed out."""
        return await listings.wait_for_job(self.ctx, job_id, timeout_ms)

    # -- queue control -----------------------------------------------------------

    async def pause(self, queue: str) -> None:
        await queue_control.pause(self.ctx, queue)

    async def resume(self, queue: str) -> None:
        await queue_control.resume(self.ctx, queue)

    async def is_paused(self, queue: str) -> bool:
        return await queue_control.is_paused(self.ctx, queue)

    async def drain(self, queue: str, include_delayed: bool = True) -> int:
        return await queue_control.drain(self.ctx, queue, include_delayed)

    async def obliterate(self, queue: str, force: bool = False) -> int:
        return await queue_control.obliterate(self.ctx, queue, force)

    async def clean(
        self, queue: str, grace_ms: int, state: str = "completed", limit: int = 1000
    ) -> tuple[int, list[str]]:
        return await queue_control.clean(self.ctx, queue, grace_ms, state, limit)

    async def retry_completed(
        self,
        queue: str,
        job_id: str | None = None,
        count: int | None = None,
        timestamp_ms: float | None = None,
    ) -> int:
        return await queue_control.retry_completed(self.ctx, queue, job_id, count, timestamp_ms)

    # -- workers registry --------------------------------------------------------

    async def register_worker(
        self,
        worker_id: str | None,
        name: str,
        queues: Sequence[str],
        concurrency: int = 1,
        hostname: str | None = None,
        pid: int | None = None,
        client_id: str | None = None,
    ) -> dict[str, Any]:
        return await workers.register_worker(
            self.ctx, worker_id, name, queues, concurrency, hostname, pid, client_id
        )

    async def worker_heartbeat(
        self,
        worker_id: str,
        active_jobs: int | None = None,
        processed: int | None = None,
        failed: int | None = None,
    ) -> None:
        await workers.worker_heartbeat(self.ctx, worker_id, active_jobs, processed, failed)

    async def unregister_worker(self, worker_id: str) -> bool:
        return await workers.unregister_worker(self.ctx, worker_id)

    async def unregister_client_workers(self, client_id: str) -> int:
        return await workers.unregister_client_workers(self.ctx, client_id)

    async def list_workers(self) -> tuple[list[dict[str, Any]], dict[str, int]]:
        return await workers.list_workers(self.ctx)

    # -- the brokers of the namespace ----------------------------------------------

    async def list_brokers(self) -> list[dict[str, Any]]:
        """Every broker session of the namespace (see :mod:`pgqueue.manager.control.cluster`)."""
        return await cluster.list_brokers(self.ctx)

    async def mark_draining(self) -> None:
        """Tell the others (``list_brokers``) that this session drains."""
        await cluster.mark_draining(self.ctx)
