"""What one job summary of the projection costs, and that its size accounting holds."""

from __future__ import annotations

import gc
import tracemalloc

from pgqueue import jsontext
from pgqueue.manager.outbox import Event
from pgqueue.manager.projection import ENTRIES_DEFAULT, Projection


def fresh(text: str) -> str:
    """A new str object equal to ``text``, as each decoded outbox row gives."""
    return "".join(list(text))


def pushed(event_id: int, job_id: str, queue: str = "q") -> Event:
    payload = jsontext.loads('{"name": "send", "state": "waiting"}')
    return Event(
        event_id, event_id, fresh(queue), job_id, fresh("pushed"), payload, 1e12 + event_id
    )


def held_bytes(projection: Projection) -> int:
    return sum(summary.size() for summary in projection._jobs.values())


def test_entries_share_one_string_per_queue_state_and_name() -> None:
    projection = Projection(None)
    projection.apply(pushed(1, "a"))
    projection.apply(pushed(2, "b"))
    a, b = projection.get("a"), projection.get("b")
    assert a is not None and b is not None
    assert a.queue is b.queue and a.state is b.state and a.name is b.name


def test_the_size_estimate_follows_updates_evictions_and_removals() -> None:
    projection = Projection(None, max_entries=50)
    for i in range(120):
        projection.apply(pushed(2 * i, f"job-{i}"))
        payload = {"progress": {"step": i, "of": "x" * i}}
        projection.apply(Event(2 * i + 1, 2 * i + 1, "q", f"job-{i}", "progress", payload, 0.0))
        assert projection.stats.bytes == held_bytes(projection)
    assert projection.stats.entries == 50
    projection.apply(Event(999, 999, "q", "job-119", "removed", {}, 0.0))
    assert projection.stats.bytes == held_bytes(projection)
    projection.apply(Event(1000, 1000, "q", None, "drained", {}, 0.0))
    assert projection.stats.entries == 0 and projection.stats.bytes == 0


def test_an_entry_costs_about_what_the_projection_counts_for_it() -> None:
    """The byte cap means what it says: memory the summaries keep (measured with
    tracemalloc, the events themselves dropped) is within a quarter of the
    estimate the cap is checked against."""
    count = 5_000
    projection = Projection(None, max_entries=count, max_bytes=1 << 40)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(count):
            projection.apply(pushed(10**9 + i, f"0190a5b2-7c3d-7e4f-8a1b-{i:012d}"))
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert projection.stats.entries == count
    assert 0.75 < kept / projection.stats.bytes < 1.25, (
        kept / count,
        projection.stats.bytes / count,
    )


def test_the_default_cap_is_reached_by_a_small_backlog() -> None:
    """Memory stays flat once the cap is reached; nothing the broker serves reads
    the summaries, so the cap is small (docs/architecture.md)."""
    assert ENTRIES_DEFAULT <= 10_000
    assert Projection(None).max_entries == ENTRIES_DEFAULT
