"""The notifier's dispatch: hints wake the right waiters and reach the outbox hooks.

Only the pure methods are exercised here (no connection): ``dispatch``,
``waiter`` and ``wake``.  The LISTEN loop is covered by integration tests.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import pytest

from pgqueue.config import Config
from pgqueue.db.executor import Database
from pgqueue.manager.notifier import Notifier


@pytest.fixture
def notifier() -> Notifier:
    return Notifier(cast(Database, object()), Config(dsn="postgresql://unused/x", namespace="app"))


def hint(**fields: Any) -> str:
    return json.dumps({"ns": "app", **fields})


async def test_a_hint_wakes_the_waiters_of_its_queues_only(notifier: Notifier) -> None:
    with (
        notifier.waiter("emails") as emails,
        notifier.waiter("emails") as emails_too,
        notifier.waiter("sms") as sms,
    ):
        notifier.dispatch(hint(a=1, b=1, q=["emails"]))
        assert emails.done() and emails_too.done()
        assert not sms.done()
        await emails
    assert notifier.notifications == 1


async def test_a_hint_without_queues_wakes_every_waiter(notifier: Notifier) -> None:
    with notifier.waiter("a") as a, notifier.waiter("b") as b:
        notifier.dispatch(hint(a=1, b=2, q=None))
        assert a.done() and b.done()


@pytest.mark.parametrize(
    "payload",
    [
        "not json",
        "",
        "[1, 2]",
        '"app"',
        json.dumps({"ns": "other", "q": ["a"], "a": 1, "b": 1}),
        json.dumps({"q": ["a"], "a": 1, "b": 1}),
    ],
)
async def test_garbage_and_other_namespaces_are_ignored(notifier: Notifier, payload: str) -> None:
    ranges: list[tuple[int, int]] = []
    notifier.on_events(lambda first, last: ranges.append((first, last)))
    with notifier.waiter("a") as a:
        notifier.dispatch(payload)
        assert not a.done()
    assert (notifier.notifications, ranges) == (0, [])


async def test_event_ranges_reach_every_hook(notifier: Notifier) -> None:
    seen: list[tuple[str, int, int]] = []
    notifier.on_events(lambda first, last: seen.append(("one", first, last)))
    notifier.on_events(lambda first, last: seen.append(("two", first, last)))
    notifier.dispatch(hint(a=10, b=14, q=["x"]))
    notifier.dispatch(hint(a="10", b=14, q=["x"]))
    notifier.dispatch(hint(q=["x"]))
    assert seen == [("one", 10, 14), ("two", 10, 14)]
    assert notifier.notifications == 3


async def test_non_string_queue_names_in_a_hint_are_skipped(notifier: Notifier) -> None:
    with notifier.waiter("a") as a, notifier.waiter("1") as one:
        notifier.dispatch(hint(q=[1, None, "a"]))
        assert a.done() and not one.done()


async def test_registering_before_the_check_catches_a_hint_that_arrives_in_between(
    notifier: Notifier,
) -> None:
    with notifier.waiter("q") as woken:
        # ... here a claim finds nothing, and meanwhile the NOTIFY arrives:
        notifier.dispatch(hint(q=["q"]))
        await asyncio.wait_for(woken, timeout=1)


async def test_a_waiter_leaves_no_trace_and_its_future_is_cancelled(notifier: Notifier) -> None:
    with notifier.waiter("q") as first:
        with notifier.waiter("q"):
            assert notifier.waiter_count("q") == 2
        assert notifier.waiter_count("q") == 1
    assert notifier.waiter_count("q") == 0
    assert first.cancelled()
    assert notifier._waiters == {}


async def test_a_waiter_is_removed_when_its_block_raises(notifier: Notifier) -> None:
    with pytest.raises(RuntimeError), notifier.waiter("q"):
        raise RuntimeError("claim failed")
    assert notifier.waiter_count("q") == 0


async def test_wake_is_idempotent_and_ignores_queues_nobody_waits_on(notifier: Notifier) -> None:
    notifier.wake("nobody")
    notifier.wake(None)
    with notifier.waiter("q") as q:
        notifier.wake("q")
        notifier.wake("q")
        notifier.wake(None)
        assert q.result() is None


async def test_a_woken_waiter_does_not_wake_again_in_its_next_block(notifier: Notifier) -> None:
    with notifier.waiter("q") as first:
        notifier.wake("q")
    with notifier.waiter("q") as second:
        assert first.done() and not second.done()


class _Hints:
    """A database that takes hint statements and records their payloads."""

    def __init__(self) -> None:
        self.payloads: list[str] = []

    async def fetchval(self, query: object, /, **params: Any) -> None:
        self.payloads.append(params["payload"])


async def test_a_hint_wakes_the_local_waiters_at_once_and_its_notify_does_not_again() -> None:
    """After a commit, this process's own claims are woken without the NOTIFY round
    trip; when that NOTIFY comes back, it still reaches the hooks but wakes nobody
    (every claim registered since then began after the commit)."""
    db = _Hints()
    notifier = Notifier(cast(Database, db), Config(dsn="postgresql://unused/x", namespace="app"))
    ranges: list[tuple[int, int]] = []
    notifier.on_events(lambda first, last: ranges.append((first, last)))
    with notifier.waiter("emails") as emails, notifier.waiter("sms") as sms:
        notifier.hint(["emails"], 5, 6)
        assert emails.done() and not sms.done()
    await notifier.flush_hints()
    [payload] = db.payloads
    with notifier.waiter("emails") as later:
        notifier.dispatch(payload)
        assert not later.done()
        notifier.dispatch(hint(a=7, b=7, q=["emails"]))  # someone else's: wakes
        assert later.done()
    assert ranges == [(5, 6), (7, 7)]
