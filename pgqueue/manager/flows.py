"""Flows: a parent job with children (nested), flattened into one atomic admission.

Every node gets its id here (or keeps a custom ``job_id``); each child names
its parent, and the admission turns that into a dependency edge, so the
parent waits in ``waiting-children`` until every child completed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pgqueue.errors import ValidationError
from pgqueue.ids import uuid7
from pgqueue.manager.bulk import entry_spec
from pgqueue.manager.options import JobSpec
from pgqueue.vocabulary.names import validate_queue_name

__all__ = ["MAX_FLOW_JOBS", "flatten"]

MAX_FLOW_JOBS = 10_000


def flatten(
    flow: Mapping[str, Any], *, max_payload_bytes: int
) -> tuple[list[JobSpec], dict[str, Any]]:
    """Specs in admission order (parents before children) and the tree with ids."""
    specs: list[JobSpec] = []

    def visit(node: Any, path: str, parent: tuple[str, str] | None, depth: int) -> dict[str, Any]:
        if depth > 100:
            raise ValidationError(f"{path}: flows nest at most 100 levels", field="children")
        if not isinstance(node, Mapping):
            raise ValidationError(f"{path}: must be a map", field="flow")
        if len(specs) >= MAX_FLOW_JOBS:
            raise ValidationError(f"a flow holds at most {MAX_FLOW_JOBS} jobs", field="children")
        queue = validate_queue_name(node.get("queue"), f"{path}.queue")
        opts = dict(node.get("opts") or {})
        if not isinstance(node.get("opts") or {}, Mapping):
            raise ValidationError(f"{path}: opts must be a map", field="opts")
        job_id = opts.pop("job_id", None) or opts.pop("custom_id", None)
        if parent is not None:
            opts["parent_id"], opts["parent_queue"] = parent
        if job_id is not None:
            opts["job_id"] = job_id
        spec = entry_spec(queue, node, opts, path, max_payload_bytes)
        own_id = spec.id or uuid7()
        if spec.id is None:
            spec = replace(spec, id=own_id)
        specs.append(spec)
        children = node.get("children") or []
        if not isinstance(children, list):
            raise ValidationError(f"{path}: children must be a list", field="children")
        return {
            "id": own_id,
            "queue": queue,
            "name": spec.name,
            "children": [
                visit(child, f"{path}.children[{i}]", (own_id, queue), depth + 1)
                for i, child in enumerate(children)
            ],
        }

    tree = visit(flow, "flow", None, 0)
    return specs, tree
