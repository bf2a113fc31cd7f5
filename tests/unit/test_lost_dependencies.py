"""The policy that settles the dependents of a job deleted without completing."""

from __future__ import annotations

import pytest

from pgqueue.manager.lost_dependencies import releases_dependents


def test_a_completed_dependency_counts_as_resolved_whatever_its_policy() -> None:
    assert releases_dependents("completed", "p", {"fail_parent_on_failure": True})


@pytest.mark.parametrize(
    "flag",
    ["ignore_dependency_on_failure", "remove_dependency_on_failure", "continue_parent_on_failure"],
)
@pytest.mark.parametrize("state", ["pending", "waiting-children", "active", "failed"])
def test_a_policy_that_goes_on_without_the_dependency_releases_the_dependents(
    flag: str, state: str
) -> None:
    assert releases_dependents(state, "p", {flag: True})
    assert releases_dependents(state, None, {flag: True})


def test_without_a_policy_the_dependents_fail() -> None:
    assert not releases_dependents("pending", "p", {})
    assert not releases_dependents("failed", None, {"ignore_dependency_on_failure": False})


def test_fail_parent_on_failure_wins_over_the_policies_that_go_on() -> None:
    opts = {"fail_parent_on_failure": True, "ignore_dependency_on_failure": True}
    assert not releases_dependents("pending", "p", opts)
    assert releases_dependents("pending", None, opts), "without a parent it has no effect"
