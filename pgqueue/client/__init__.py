"""The Python SDK: ``Queue``, ``Worker``, ``FlowProducer``, ``QueueEvents``.

One API, two transports: ``connection="postgresql://..."`` runs the engine in
this process (embedded); ``connection="pgqueue://host:6789,host2:6789"`` talks
to brokers over bunqueue's TCP protocol.  :mod:`pgqueue.sync` offers the same
classes with blocking methods.
"""

from __future__ import annotations

from pgqueue.client.admin import Admin
from pgqueue.client.connect import open_transport
from pgqueue.client.events import QueueEvent, QueueEvents
from pgqueue.client.flow import FlowJob, FlowProducer, JobNode
from pgqueue.client.job import Job
from pgqueue.client.options import (
    BackoffOptions,
    DedupOptions,
    JobOptions,
    RateLimit,
    RepeatOptions,
)
from pgqueue.client.queue import BulkJob, Queue
from pgqueue.client.schedulers import JobScheduler, SchedulerTemplate
from pgqueue.client.transport import Transport
from pgqueue.client.worker import Processor, Worker

__all__ = [
    "Admin",
    "BackoffOptions",
    "BulkJob",
    "DedupOptions",
    "FlowJob",
    "FlowProducer",
    "Job",
    "JobNode",
    "JobOptions",
    "JobScheduler",
    "Processor",
    "Queue",
    "QueueEvent",
    "QueueEvents",
    "RateLimit",
    "RepeatOptions",
    "SchedulerTemplate",
    "Transport",
    "Worker",
    "open_transport",
]
