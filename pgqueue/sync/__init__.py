"""The blocking SDK: the async classes, driven from plain threads.

    from pgqueue.sync import Queue, Worker

    queue = Queue("emails", connection="postgresql://localhost/app")
    job = queue.add("welcome", {"to": "ada@example.com"})

    def send(job):                  # a plain function: runs in a thread pool
        job.update_progress(50)     # the job's methods block here
        return {"sent": True}

    Worker("emails", send, connection="postgresql://localhost/app").run()  # until closed

Nothing here is written twice: each class is built from its async twin by
:func:`sync_class`: the object lives on one background event loop
(:mod:`pgqueue.sync.runtime`) and every public method is the async one, run
there until it finishes (:class:`~pgqueue.client.blocking.Blocking`).
``with``, iteration (``for event in QueueEvents(...)``) and returned SDK
objects (jobs) work the same way.  Callbacks given to ``on`` run on that
loop's thread: they must not call blocking pgqueue methods.
"""

from __future__ import annotations

from typing import Any

from pgqueue.client import FlowProducer as AsyncFlowProducer
from pgqueue.client import Queue as AsyncQueue
from pgqueue.client import QueueEvents as AsyncQueueEvents
from pgqueue.client import Worker as AsyncWorker
from pgqueue.client.blocking import Blocking, call_blocking
from pgqueue.sync.runtime import runtime

__all__ = ["FlowProducer", "Queue", "QueueEvents", "Worker", "sync_class"]


def sync_class(async_class: type[Any]) -> type[Blocking]:
    """A blocking class whose instances wrap an ``async_class`` built on the runtime."""

    def __init__(self: Blocking, *args: Any, **kwargs: Any) -> None:
        loop = runtime().loop

        async def build() -> Any:
            return async_class(*args, **kwargs)

        target = call_blocking(loop, build())
        runtime().track(target)
        Blocking.__init__(self, target, loop)

    namespace = {
        "__init__": __init__,
        "__doc__": f"Blocking :class:`{async_class.__module__}.{async_class.__name__}`.\n\n"
        + (async_class.__doc__ or ""),
        "__module__": __name__,
        "__slots__": (),
    }
    return type(async_class.__name__, (Blocking,), namespace)


Queue = sync_class(AsyncQueue)
FlowProducer = sync_class(AsyncFlowProducer)
QueueEvents = sync_class(AsyncQueueEvents)


class Worker(sync_class(AsyncWorker)):  # type: ignore[misc]
    """Blocking :class:`pgqueue.client.Worker`: it processes in the background from
    its creation (``autorun=False``: from :meth:`run`); :meth:`run` blocks until
    the worker is closed, and Ctrl-C there closes it gracefully."""

    __slots__ = ()

    def run(self) -> None:
        try:
            call_blocking(self._loop, self._target.run())
        except KeyboardInterrupt:
            call_blocking(self._loop, self._target.close())
            raise
