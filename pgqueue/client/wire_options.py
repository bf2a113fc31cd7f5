"""SDK job options (snake_case) to bunqueue's wire fields (camelCase).

The inverse of :func:`pgqueue.server.wire.job_options_from_wire`.  Every job is
first validated with the engine's own :func:`~pgqueue.manager.options.build_job_spec`,
so a bad job gets the very :class:`~pgqueue.errors.ValidationError` the
embedded transport raises (unknown option names included) before anything is
sent; only then are its options renamed for the wire.

The custom id travels as ``jobId`` in a PUSH and as ``customId`` in PUSHB and
PUSHF entries.  ``parent_queue`` has no wire field (bunqueue keeps it inside
``data``): it is validated and not sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pgqueue.client.transport import JobInput, checked_spec
from pgqueue.errors import ValidationError
from pgqueue.manager.flows import flatten
from pgqueue.manager.options import JobSpec, build_job_spec
from pgqueue.vocabulary.job_options import JOB_OPTIONS

__all__ = ["WIRE_NAMES", "flow_entries", "job_entry", "wire_options"]

_RULED = frozenset({"job_id", "attempts", "backoff", "unique_key", "dedup"})
"""Options sent by a rule of their own (see :func:`wire_options`)."""

WIRE_NAMES: Mapping[str, str] = {
    option.python: option.wire
    for option in JOB_OPTIONS
    if option.python is not None and option.wire is not None and option.python not in _RULED
}
"""Options renamed one to one, from their declarations (:mod:`pgqueue.vocabulary.job_options`)."""

_NOT_SENT = frozenset({"parent_queue"})


def _backoff(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value
    wire = {k: v for k, v in value.items() if k in ("type", "delay")}
    cap = value.get("max_delay", value.get("maxDelay"))
    if cap is not None:
        wire["maxDelay"] = cap
    return wire


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def wire_options(opts: Mapping[str, Any], *, custom_id_key: str) -> dict[str, Any]:
    """The wire fields of already validated SDK options (see the module docstring)."""
    wire: dict[str, Any] = {}
    for key, value in opts.items():
        if value is None or key in _NOT_SENT:
            continue
        name = WIRE_NAMES.get(key)
        if name is not None:
            wire[name] = _plain(value)
    attempts = opts.get("max_attempts")
    if attempts is None:
        attempts = opts.get("attempts")
    if attempts is not None:
        wire["maxAttempts"] = attempts
    if opts.get("backoff") is not None:
        wire["backoff"] = _backoff(opts["backoff"])
    custom_id = opts.get("job_id") or opts.get("custom_id")
    if custom_id is not None:
        wire[custom_id_key] = custom_id
    if opts.get("unique_key") is not None:
        wire["uniqueKey"] = opts["unique_key"]
        if opts.get("dedup") is not None:
            wire["dedup"] = dict(opts["dedup"])
    deduplication = opts.get("deduplication")
    if deduplication is not None:  # BullMQ's shape, as bunqueue's TS client sends it
        wire["uniqueKey"] = deduplication["id"]
        rest = {k: v for k, v in deduplication.items() if k != "id"}
        if rest:
            wire["dedup"] = rest
    return wire


def job_entry(
    queue: str,
    job: JobInput,
    *,
    custom_id_key: str,
    max_payload_bytes: int,
    prefix: str = "",
) -> tuple[dict[str, Any], JobSpec]:
    """``({name, data, ...wire options}, spec)`` for one job, validated like the engine.

    ``custom_id_key`` is ``"jobId"`` for PUSH, ``"customId"`` for PUSHB/PUSHF entries.
    """
    opts = job.opts
    if type(opts) is not dict and not isinstance(opts, Mapping):
        raise ValidationError(f"{prefix}opts must be a map", field="opts")
    spec = checked_spec(job, queue, max_payload_bytes) or build_job_spec(
        queue, job.name, job.data, dict(opts), max_payload_bytes=max_payload_bytes, prefix=prefix
    )
    entry: dict[str, Any] = {"name": job.name, "data": job.data}
    if opts:  # (most jobs carry none)
        entry.update(wire_options(opts, custom_id_key=custom_id_key))
    return entry, spec


def flow_entries(
    flow: Mapping[str, Any], *, max_payload_bytes: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """PUSHF's ``jobs`` (``[{id, queue, input}]``, parents first) and the tree with ids.

    The flow is validated and its ids allocated by the engine's own
    :func:`~pgqueue.manager.flows.flatten`; each child names its parent with
    ``parentId``, which the broker turns into the dependency edge.
    """
    specs, tree = flatten(flow, max_payload_bytes=max_payload_bytes)
    entries: list[dict[str, Any]] = []

    def visit(node: Mapping[str, Any], named: Mapping[str, Any], parent: str | None) -> None:
        opts = {
            k: v for k, v in (node.get("opts") or {}).items() if k not in ("job_id", "custom_id")
        }
        if parent is not None:
            opts["parent_id"] = parent
        entry = {"name": named["name"], "data": node.get("data")}
        entry.update(wire_options(opts, custom_id_key="customId"))
        entries.append({"id": named["id"], "queue": named["queue"], "input": entry})
        for child, named_child in zip(node.get("children") or [], named["children"], strict=True):
            visit(child, named_child, named["id"])

    visit(flow, tree, None)
    assert len(entries) == len(specs)
    return entries, tree
