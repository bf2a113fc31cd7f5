"""The notifier's dispatch: hints wake the right waiters and reach the outbox hooks.

Only the pure methods are exercised here (no connection): ``dispatch``,
``waiter`` and ``wake``.  The LISTEN loop is covered by integration tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, cast

import pytest

from pgqueue.config import Config
from pgqueue.db.executor import Database
from pgqueue.manager import notifier as notifier_module
from pgqueue.manager.notifier import Notifier
from pgqueue.testing.waiting import eventually


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


# -- claim waiters: work or any event, and one claim per hinted job ------------------------


@pytest.fixture
def hinting() -> Notifier:
    """A notifier whose hints go to a recording stand-in of the database."""
    return Notifier(cast(Database, _Hints()), Config(dsn="postgresql://unused/x", namespace="app"))


async def test_an_ack_hint_wakes_a_claim_only_for_any_event_and_job_waiters_fully() -> None:
    """An ack's completions (``work=()``) make no job claimable: a claim that found
    nothing waits on ``work`` and sleeps on; a claim held back by a limit waits on
    ``event`` and wakes (the freed slot); ``waiter`` (wait_for_job) wakes too."""
    db = _Hints()
    notifier = Notifier(cast(Database, db), Config(dsn="postgresql://unused/x", namespace="app"))
    with notifier.claim_waiter("q") as claim, notifier.waiter("q") as job_wait:
        notifier.hint(["q"], 1, 1, work=())
        assert claim.event.done() and not claim.work.done()
        assert job_wait.done()
    await notifier.flush_hints()
    [payload] = db.payloads
    assert json.loads(payload)["w"] == []
    with notifier.claim_waiter("q") as other_process:
        notifier.dispatch(payload.replace('"a": 1', '"a": 9'))  # not this notifier's range
        assert other_process.event.done() and not other_process.work.done()


async def test_a_hint_without_w_is_work_for_every_queue_it_names(notifier: Notifier) -> None:
    """Hints sent inside a transaction (SQL ``notify_hint``) name no ``w``: work."""
    with notifier.claim_waiter("q") as claim:
        notifier.dispatch(hint(a=1, b=1, q=["q"]))
        assert claim.work.done()


async def test_merged_hints_keep_the_work_queues_and_add_the_jobs() -> None:
    db = _Hints()
    notifier = Notifier(cast(Database, db), Config(dsn="postgresql://unused/x", namespace="app"))
    notifier.hint(["acked"], 1, 1, work=())
    notifier.hint(["acked", "pushed"], 2, 3, work=(), jobs=None)
    notifier.hint(["pushed"], 4, 4, jobs=1)
    notifier.hint(["pushed"], 5, 6, jobs=2)
    await notifier.flush_hints()
    notifier.hint(["acked"], 7, 7, work=())
    await notifier.flush_hints()
    merged, acked = (json.loads(p) for p in db.payloads)
    assert (merged["a"], merged["b"]) == (1, 6)
    assert (merged["q"], merged["w"], merged["n"]) == (["acked", "pushed"], ["pushed"], 3)
    assert (acked["q"], acked["w"], "n" in acked) == (["acked"], [], False)
    notifier.hint(["pushed"], 8, 8, jobs=1)
    notifier.hint(["pushed"], 9, 9)  # unknown: the merged hint is of unknown size
    await notifier.flush_hints()
    assert "n" not in json.loads(db.payloads[-1]) and "w" not in json.loads(db.payloads[-1])


async def test_a_hinted_job_wakes_one_idle_claim_not_all(hinting: Notifier) -> None:
    """Ten claims wait idle and one job comes: one claim, not ten (the others would
    find nothing).  Claims still running are left alone while idle ones cover the
    jobs; a waiter of wait_for_job always wakes."""
    with contextlib.ExitStack() as stack:
        idle = [stack.enter_context(hinting.claim_waiter("q")) for _ in range(10)]
        running = stack.enter_context(hinting.claim_waiter("q"))
        job_wait = stack.enter_context(hinting.waiter("q"))
        for w in idle:
            w.idle = True
        hinting.dispatch(hint(a=1, b=1, q=["q"], n=1))
        assert sum(w.work.done() for w in idle) == 1
        assert not running.work.done() and job_wait.done()
        hinting.hint(["q"], 2, 4, jobs=3)  # three more: three fresh idle claims
        assert sum(w.work.done() for w in idle) == 4
        assert not running.work.done()
        hinting.dispatch(hint(a=5, b=20, q=["q"], n=7))  # more jobs than idle claims: all
        assert all(w.work.done() for w in idle) and running.work.done()


async def test_a_hint_of_unknown_size_wakes_every_claim(notifier: Notifier) -> None:
    with contextlib.ExitStack() as stack:
        claims = [stack.enter_context(notifier.claim_waiter("q")) for _ in range(3)]
        for w in claims:
            w.idle = True
        notifier.dispatch(hint(a=1, b=1, q=["q"]))
        assert all(w.work.done() for w in claims)


async def test_a_claim_cancelled_after_its_wake_up_hands_it_to_another(
    hinting: Notifier,
) -> None:
    """The one claim woken for a job is cancelled (its client went away) before it
    claimed: another waiting claim is woken instead, so the job is not left to the
    poll interval."""
    with hinting.claim_waiter("q") as other:
        other.idle = True

        async def doomed() -> None:
            with hinting.claim_waiter("q") as w:
                w.idle = True
                await asyncio.Event().wait()

        task = asyncio.create_task(doomed())
        await eventually(lambda: hinting.waiter_count("q") == 2, message="it registered")
        [doomed_w] = [w for w in hinting._waiters["q"] if w is not other]
        hinting._waiters["q"].discard(other)  # so the hint must pick the doomed one
        hinting.hint(["q"], 1, 1, jobs=1)
        hinting._waiters["q"].add(other)
        assert doomed_w.work.done() and not other.work.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert other.work.done()


async def test_a_hint_kept_alone_wakes_its_idle_claims_once(hinting: Notifier) -> None:
    """Alone, the notifier delivers its hint in-process: the hooks get the range, and
    the claims woken at hint time are not woken again (one job, one claim)."""
    hinting._hello_at = asyncio.get_running_loop().time() - 60
    assert hinting.alone()
    ranges: list[tuple[int, int]] = []
    hinting.on_events(lambda first, last: ranges.append((first, last)))
    with contextlib.ExitStack() as stack:
        idle = [stack.enter_context(hinting.claim_waiter("q")) for _ in range(3)]
        for w in idle:
            w.idle = True
        hinting.hint(["q"], 1, 1, jobs=1)
        await eventually(lambda: bool(ranges), message="the kept hint's dispatch")
        assert ranges == [(1, 1)]
        assert sum(w.work.done() for w in idle) == 1


async def test_a_kept_hint_reaches_the_hooks_before_hint_returns(hinting: Notifier) -> None:
    """Alone, a kept hint calls the hooks at once, as a NOTIFY's dispatch does: no
    loop step of its own (one event-loop iteration per sequential add)."""
    hinting._hello_at = asyncio.get_running_loop().time() - 60
    ranges: list[tuple[int, int]] = []
    hinting.on_events(lambda first, last: ranges.append((first, last)))
    hinting.hint(["q"], 4, 7, jobs=4)
    assert ranges == [(4, 7)]


async def test_only_a_write_alone_after_a_pause_carries_its_notify(
    notifier: Notifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone write may NOTIFY in its transaction; one that overlaps another write of
    the process, or follows one closely, hints after its commit."""
    assert notifier.begin_write()
    assert not notifier.begin_write()  # overlaps the first
    notifier.end_write()
    notifier.end_write()
    assert not notifier.begin_write()  # right after the others
    notifier.end_write()
    monkeypatch.setattr(notifier_module, "INLINE_AFTER_S", 0.0)
    assert notifier.begin_write()
    notifier.end_write()


async def test_its_own_notify_from_a_write_wakes_nobody_again_but_reaches_the_hooks(
    notifier: Notifier,
) -> None:
    ranges: list[tuple[int, int]] = []
    notifier.on_events(lambda a, b: ranges.append((a, b)))
    with notifier.waiter("q") as woken:
        notifier.dispatch(hint(a=5, b=5, q=["q"], n=1, s=notifier.instance))
        assert not woken.done()
        notifier.dispatch(hint(a=6, b=6, q=["q"], n=1, s="someone else"))
        assert woken.done()
    assert ranges == [(5, 5), (6, 6)]


# -- hearing: hints go out only while another listener needs them ------------------------


def _settled(notifier: Notifier) -> Notifier:
    """As if its LISTEN had started (hello sent) long ago."""
    notifier._hello_at = asyncio.get_running_loop().time() - 60
    return notifier


def _notes(db: _Hints) -> list[dict[str, Any]]:
    return [json.loads(p) for p in db.payloads if "a" not in json.loads(p)]


async def test_a_notifier_says_hear_when_a_claim_waits_and_deaf_once_none_has_for_a_while(
    hinting: Notifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim or job wait registering makes the notifier say ``hear`` at once; the
    last one leaving makes it say ``deaf`` only after DEAF_AFTER_S without any (a
    worker's next poll comes soon), and a ``want`` source keeps it hearing."""
    notifier = _settled(hinting)
    db = cast(_Hints, notifier._db)
    me = notifier.instance
    assert not notifier.hearing
    with notifier.claim_waiter("q"), notifier.waiter("q"):
        assert notifier.hearing
    await notifier.flush_hints()
    assert _notes(db) == [{"ns": "app", "hear": me}]
    assert notifier.hearing, "still hearing: the last waiter left just now"
    monkeypatch.setattr(notifier_module, "DEAF_AFTER_S", 0.0)
    notifier.want("outbox", True)
    with notifier.waiter("q"):
        pass
    assert notifier.hearing, "a prompt subscription still listens"
    notifier.want("outbox", False)
    await notifier.flush_hints()
    assert not notifier.hearing
    assert _notes(db) == [{"ns": "app", "hear": me}, {"ns": "app", "deaf": me}]
    notifier.dispatch(hint(hello="newcomer"))
    await notifier.flush_hints()
    assert _notes(db)[-1] == {"ns": "app", "here": me, "to": "newcomer", "d": 1}


async def test_a_hint_goes_out_only_while_another_listener_hears(hinting: Notifier) -> None:
    """Every other listener deaf: the hint is kept in-process (hooks, own claims);
    a listener that says hello or here without ``d`` (another version, a bare
    LISTEN) or ``hear`` gets hints again until it says ``deaf``; a ``hear``, and a
    ``here`` from a hearer not known yet, is answered ``heard``."""
    notifier = _settled(hinting)
    db = cast(_Hints, notifier._db)
    notifier.dispatch(hint(hello="worker", d=1))
    notifier.hint(["q"], 1, 1, jobs=1)
    await notifier.flush_hints()
    assert (notifier.hints_sent, notifier.hints_kept) == (0, 1)
    notifier.dispatch(hint(hear="worker"))
    notifier.hint(["q"], 2, 2, jobs=1)
    await notifier.flush_hints()
    assert (notifier.hints_sent, notifier.hints_kept) == (1, 1)
    assert {"ns": "app", "heard": notifier.instance, "to": "worker"} in _notes(db)
    notifier.dispatch(hint(deaf="worker"))
    notifier.hint(["q"], 3, 3, jobs=1)
    notifier.dispatch(hint(here="old", to="someone"))  # no d: it hears
    notifier.hint(["q"], 4, 4, jobs=1)
    await notifier.flush_hints()
    assert (notifier.hints_sent, notifier.hints_kept) == (2, 2)
    assert notifier.hearing_peers == {"old"}
    # Heard of only now: what went out unhinted before is committed, it may claim again.
    assert _notes(db)[-1] == {"ns": "app", "heard": notifier.instance, "to": "old"}


async def test_a_notifier_skips_hints_from_its_hello_on_until_a_listener_says_it_hears(
    hinting: Notifier,
) -> None:
    """No time to wait after the hello: a listener that hears answers it (``here``,
    no ``d``) and is answered ``heard`` in turn (its claims claim again)."""
    notifier = hinting
    notifier._hello_at = asyncio.get_running_loop().time()
    assert notifier.unheard()
    notifier.dispatch(hint(here="worker", to=notifier.instance))
    assert not notifier.unheard()


async def test_an_answer_to_its_hear_or_hello_makes_its_claims_claim_again(
    hinting: Notifier,
) -> None:
    """A push its peer made without a hint before it knew this one hears committed
    before the peer's answer: the claims waiting here wake on the answer (and only
    on an answer to this notifier)."""
    with hinting.claim_waiter("q") as claim:
        claim.idle = True
        hinting.dispatch(hint(heard="peer", to="someone else"))
        hinting.dispatch(hint(here="peer", to="someone else"))
        assert not claim.work.done()
        hinting.dispatch(hint(heard="peer", to=hinting.instance))
        assert claim.work.done()
    with hinting.claim_waiter("q") as claim:
        hinting.dispatch(hint(here="peer", to=hinting.instance, d=1))
        assert claim.work.done()
    assert hinting.notifications == 0, "presence notes are no hints"
    await hinting.flush_hints()
