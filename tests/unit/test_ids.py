"""UUIDv7 job ids: RFC 9562 layout, and strictly increasing within a process."""

from __future__ import annotations

import itertools
import re
import threading
import time
import uuid

import pytest

from pgqueue import ids
from pgqueue.ids import uuid7, uuid7_many

UUID_TEXT = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def millis(job_id: str) -> int:
    return uuid.UUID(job_id).int >> 80


def test_an_id_is_lowercase_canonical_text_with_version_7_and_the_rfc_variant() -> None:
    job_id = uuid7()
    assert UUID_TEXT.match(job_id), job_id
    parsed = uuid.UUID(job_id)
    assert (parsed.version, parsed.variant) == (7, uuid.RFC_4122)
    assert str(parsed) == job_id


def test_an_id_carries_the_unix_time_in_milliseconds() -> None:
    before = time.time_ns() // 1_000_000
    job_id = uuid7()
    after = time.time_ns() // 1_000_000
    assert before <= millis(job_id) <= after + 1


def test_ids_are_strictly_increasing_as_text_and_as_numbers() -> None:
    made = [uuid7() for _ in range(20_000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)
    numbers = [uuid.UUID(i).int for i in made]
    assert all(a < b for a, b in itertools.pairwise(numbers))


def test_many_ids_in_one_millisecond_stay_increasing_past_the_counters_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frozen = max(time.time_ns(), (ids._last_ms + 1) * 1_000_000)  # after every id made so far
    monkeypatch.setattr(ids.time, "time_ns", lambda: frozen)
    made = [uuid7() for _ in range(3 * 4096)]
    assert all(a < b for a, b in itertools.pairwise(made))
    assert all(UUID_TEXT.match(i) for i in made)
    first_ms = frozen // 1_000_000
    assert millis(made[0]) == first_ms
    assert first_ms < millis(made[-1]) <= first_ms + 3  # the counter overflowed into the clock


def test_ids_keep_increasing_when_the_clock_steps_back(monkeypatch: pytest.MonkeyPatch) -> None:
    last = uuid7()
    monkeypatch.setattr(ids.time, "time_ns", lambda: 1_000_000_000_000)  # the year 1970
    later = [uuid7() for _ in range(100)]
    assert [last, *later] == sorted([last, *later])
    assert len(set(later)) == 100


def test_uuid7_many_returns_count_increasing_ids_after_the_ones_made_before() -> None:
    before = uuid7()
    batch = uuid7_many(5000)
    after = uuid7()
    assert len(batch) == 5000
    assert [before, *batch, after] == sorted({before, *batch, after})
    assert all(UUID_TEXT.match(i) for i in batch)
    assert uuid7_many(0) == []


def test_ids_made_on_many_threads_are_unique() -> None:
    results: list[list[str]] = [[] for _ in range(4)]

    def make(out: list[str]) -> None:
        out.extend(uuid7() for _ in range(5000))

    threads = [threading.Thread(target=make, args=(out,)) for out in results]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for out in results for i in out]
    assert len(set(every)) == len(every)
    assert all(out == sorted(out) for out in results)


def test_a_batch_in_one_millisecond_runs_past_the_counters_range_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frozen = max(time.time_ns(), (ids._last_ms + 1) * 1_000_000)
    monkeypatch.setattr(ids.time, "time_ns", lambda: frozen)
    first = uuid7()
    batch = uuid7_many(3 * 4096)
    last = uuid7()
    made = [first, *batch, last]
    assert all(a < b for a, b in itertools.pairwise(made))
    assert all(a < b for a, b in itertools.pairwise(uuid.UUID(i).int for i in made))
    assert all(UUID_TEXT.match(i) for i in batch)
    assert all(uuid.UUID(i).variant == uuid.RFC_4122 for i in batch)
    assert millis(first) == frozen // 1_000_000 < millis(batch[-1]) <= millis(first) + 4


def test_a_batch_takes_the_same_random_counter_start_as_one_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new millisecond starts the counter at a random value below 1024, for one id or
    the first of a batch; the next ids of the batch count up from it."""
    frozen = max(time.time_ns(), (ids._last_ms + 1) * 1_000_000)
    monkeypatch.setattr(ids.time, "time_ns", lambda: frozen)
    counters = [(uuid.UUID(i).int >> 64) & 0xFFF for i in uuid7_many(3)]
    assert counters[0] < 1024 and counters == [counters[0] + k for k in range(3)]
