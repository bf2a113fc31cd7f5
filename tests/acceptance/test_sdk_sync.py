"""The sync facade (pgqueue.sync), derived from the async classes, on both transports."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import inspect
import threading
from typing import Any

import pytest

import pgqueue.client
import pgqueue.sync
from pgqueue.errors import JobFailed, ValidationError
from tests.acceptance.sdk_support import (  # noqa: F401 - fixtures
    connection,
    module_namespace,
    queue_name,
    shared_brokers,
    transport_kind,
)


def test_the_sync_classes_hold_no_hand_written_copy_of_the_api() -> None:
    for name in ("Queue", "FlowProducer", "QueueEvents"):
        assert set(vars(getattr(pgqueue.sync, name))) <= {
            "__init__",
            "__doc__",
            "__module__",
            "__slots__",
        }
    assert set(vars(pgqueue.sync.Worker)) - {"__doc__", "__module__", "__slots__"} == {"run"}
    coroutine_methods = [
        name
        for name, member in inspect.getmembers(pgqueue.client.Queue)
        if inspect.iscoroutinefunction(member) and not name.startswith("_")
    ]
    assert {"add", "add_bulk", "wait_for", "get_counts", "pause", "get_dlq"} <= set(
        coroutine_methods
    )


def test_a_sync_producer_and_a_plain_function_worker_process_a_job(
    connection: str, queue_name: str
) -> None:
    threads: list[str] = []

    def handler(job: Any) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        job.update_progress(70)
        return {"total": sum(job.data)}

    with pgqueue.sync.Queue(queue_name, connection) as queue:
        worker = pgqueue.sync.Worker(queue_name, handler, connection, poll_timeout=0.2)
        try:
            job = queue.add("sum", [1, 2, 3], attempts=2)
            assert isinstance(job.id, str)
            assert queue.wait_for(job, timeout=10) == {"total": 6}
            assert job.get_state() == "completed"
            stored = queue.get_job(job.id)
            assert stored.progress == 70
        finally:
            worker.close()
    assert threads and threads[0] != threading.main_thread().name
    assert not worker.running


def test_run_blocks_until_the_worker_is_closed(connection: str, queue_name: str) -> None:
    queue = pgqueue.sync.Queue(queue_name, connection)
    worker = pgqueue.sync.Worker(
        queue_name, lambda job: job.data * 2, connection, autorun=False, poll_timeout=0.2
    )
    job = queue.add("double", 21)
    results: list[Any] = []

    def wait_then_close() -> None:
        results.append(queue.wait_for(job, timeout=10))
        worker.close()

    closer = threading.Thread(target=wait_then_close)
    closer.start()
    worker.run()  # returns once the other thread closed the worker
    closer.join(10)
    queue.close()
    assert results == [42]
    assert not worker.running


def test_errors_are_the_package_errors(connection: str, queue_name: str) -> None:
    def handler(job: Any) -> None:
        raise RuntimeError("nope")

    with pgqueue.sync.Queue(queue_name, connection) as queue:
        with pytest.raises(ValidationError) as caught:
            queue.add("job", {}, priority="high")
        assert caught.value.field == "priority"
        worker = pgqueue.sync.Worker(queue_name, handler, connection, poll_timeout=0.2)
        try:
            job = queue.add("job", {}, attempts=1)
            with pytest.raises(JobFailed, match="nope"):
                queue.wait_for(job, timeout=10)
        finally:
            worker.close()


def test_sync_queue_events_iterate_and_flows_add(connection: str, queue_name: str) -> None:
    with (
        pgqueue.sync.QueueEvents(queue_name, connection) as events,
        pgqueue.sync.FlowProducer(connection) as flows,
        pgqueue.sync.Queue(queue_name, connection) as queue,
    ):
        stream = iter(events)
        confirmed = events.confirmed
        for _ in range(200):
            queue.pause()
            queue.resume()
            if confirmed.is_set():
                break
        assert confirmed.is_set()
        tree = flows.add(
            {
                "name": "parent",
                "queue_name": queue_name,
                "children": [{"name": "child", "queue_name": queue_name}],
            }
        )
        assert tree.job.name == "parent"
        assert tree.children[0].job.get_state() == "waiting"
        pushed = []
        for event in stream:
            if event.event == "pushed":
                pushed.append(event.job_id)
            if len(pushed) == 2:
                break
        assert sorted(pushed) == sorted([tree.job.id, tree.children[0].job.id])
