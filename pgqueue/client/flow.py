"""``FlowProducer``: a parent job with children (nested to any depth), added
atomically: every job of the tree exists, or none does (PUSHF over TCP).

    flow = FlowProducer(connection="postgresql://localhost/app")
    tree = await flow.add({
        "name": "render", "queue_name": "video", "data": {"id": 7},
        "children": [
            {"name": "transcode", "queue_name": "media", "data": {"res": 720}},
            {"name": "thumbnail", "queue_name": "media", "data": {}},
        ],
    })

The parent waits (state ``waiting-children``) until every child completed;
its handler reads their results with ``await job.get_children_values()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from pgqueue.client._shared import TransportOwner, in_transaction_only
from pgqueue.client.job import Job
from pgqueue.client.options import JobOptions, check_job
from pgqueue.client.transport import Transport
from pgqueue.errors import ValidationError
from pgqueue.vocabulary.names import validate_queue_name

__all__ = ["FlowJob", "FlowProducer", "JobNode"]

MAX_DEPTH = 100


class FlowJob(TypedDict):
    """One node of a flow (``queue`` is accepted for ``queue_name``)."""

    name: str
    queue_name: str
    data: NotRequired[Any]
    opts: NotRequired[JobOptions]
    children: NotRequired[list[FlowJob]]


@dataclass(slots=True)
class JobNode:
    """A job of an added flow and the nodes of its children."""

    job: Job
    children: list[JobNode] = field(default_factory=list)


def _check(node: Any, path: str, depth: int) -> dict[str, Any]:
    """Validate one node (recursively); return it in the transport's shape."""
    if depth > MAX_DEPTH:
        raise ValidationError(f"{path}: flows nest at most {MAX_DEPTH} levels", field="children")
    if not isinstance(node, Mapping):
        raise ValidationError(f"{path}: must be a map", field="flow")
    extra = set(node) - {"name", "queue_name", "queue", "data", "opts", "children"}
    if extra:
        raise ValidationError(f"{path}: unknown key: {', '.join(sorted(extra))}", field="flow")
    queue = validate_queue_name(node.get("queue_name", node.get("queue")), f"{path}.queue_name")
    opts = node.get("opts") or {}
    if not isinstance(opts, Mapping):
        raise ValidationError(f"{path}: opts must be a map", field="opts")
    check_job(queue, node.get("name"), node.get("data"), opts, prefix=f"{path}: ")
    children = node.get("children") or []
    if not isinstance(children, list):
        raise ValidationError(f"{path}: children must be a list", field="children")
    return {
        "name": node["name"],
        "queue": queue,
        "data": node.get("data"),
        "opts": dict(opts),
        "children": [
            _check(child, f"{path}.children[{i}]", depth + 1) for i, child in enumerate(children)
        ],
    }


class FlowProducer(TransportOwner):
    """Adds flows of jobs (see the module docstring)."""

    def __init__(self, connection: str | Transport, **transport_options: Any) -> None:
        super().__init__(connection, transport_options)

    async def add(self, flow: FlowJob | Mapping[str, Any], *, connection: Any = None) -> JobNode:
        """Add a flow atomically; the tree of its jobs, with their ids.
        ``connection``: add it inside that open transaction (embedded
        transport only; docs/transactions.md)."""
        checked = _check(flow, "flow", 0)
        transport = await self.transport()
        if connection is None:
            tree = await transport.push_flow(checked)
        else:
            push_flow_in = getattr(transport, "push_flow_in", None)
            if push_flow_in is None:
                raise in_transaction_only("FlowProducer.add(..., connection=...)")
            tree = await push_flow_in(connection, checked)
        return self._node(transport, checked, tree)

    async def add_bulk(self, flows: Sequence[FlowJob | Mapping[str, Any]]) -> list[JobNode]:
        """Add several flows, each atomically (validated all before the first is sent)."""
        checked = [_check(flow, f"flows[{i}]", 0) for i, flow in enumerate(flows)]
        transport = await self.transport()
        nodes = []
        for node in checked:
            nodes.append(self._node(transport, node, await transport.push_flow(node)))
        return nodes

    def _node(
        self, transport: Transport, sent: Mapping[str, Any], got: Mapping[str, Any]
    ) -> JobNode:
        job = Job(
            transport,
            str(got["id"]),
            str(sent["name"]),
            sent.get("data"),
            str(sent["queue"]),
            opts=sent.get("opts"),
        )
        children = [
            self._node(transport, child_sent, child_got)
            for child_sent, child_got in zip(
                sent["children"], got.get("children") or [], strict=True
            )
        ]
        return JobNode(job, children)
