"""What a job's failure for good does to the jobs that wait on it (pure, no I/O).

A flow child names its policy with one of four options; when several are set,
the first of this order wins (bunqueue's and BullMQ's order):

* ``fail``     (``fail_parent_on_failure``): the parent is dead-lettered, reason
  ``dependency_failed`` ("Child job <id> failed: <error>"), and its own policy
  then applies to its parent;
* ``continue`` (``continue_parent_on_failure``): the parent is released at once,
  even while other children still run or wait, and the failure is recorded
  among the parent's *failed* children (``GetFailedChildrenValues``);
* ``ignore``   (``ignore_dependency_on_failure``): the parent stops waiting for
  this child and the failure is recorded among its *ignored* failures
  (``GetIgnoredChildrenFailures``);
* ``remove``   (``remove_dependency_on_failure``): the parent stops waiting for
  this child; nothing is recorded;
* none: the parent keeps waiting (``waiting-children``) for a redrive of the
  child, which is why such a child keeps its DLQ entry even with
  ``removeOnFail``.

``fail`` needs a parent; a job that others only ``dependsOn`` with that
option alone counts as none.  ``continue``, ``ignore`` and ``remove`` also
let ``dependsOn`` dependents go on.  The SQL twin of :func:`flow_failure_mode`
is the fragment ``flow_failure_mode`` (``completion.sql``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["FLOW_POLICY_OPTIONS", "FlowFailureMode", "flow_failure_mode", "lets_dependents_go_on"]

FlowFailureMode = Literal["fail", "continue", "ignore", "remove"]

FLOW_POLICY_OPTIONS: tuple[tuple[str, FlowFailureMode], ...] = (
    ("fail_parent_on_failure", "fail"),
    ("continue_parent_on_failure", "continue"),
    ("ignore_dependency_on_failure", "ignore"),
    ("remove_dependency_on_failure", "remove"),
)
"""The options, in the order in which they win."""


def flow_failure_mode(opts: Mapping[str, Any], parent_id: str | None) -> FlowFailureMode | None:
    """The policy a job that failed for good applies (None: its dependents wait)."""
    for option, mode in FLOW_POLICY_OPTIONS:
        if opts.get(option) and (mode != "fail" or parent_id is not None):
            return mode
    return None


def lets_dependents_go_on(mode: FlowFailureMode | None) -> bool:
    """Whether the failed job counts as resolved for what waits on it."""
    return mode in ("continue", "ignore", "remove")
