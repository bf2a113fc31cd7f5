"""The broker's event metrics: a run of outbox events counts as each event alone would."""

from __future__ import annotations

from pgqueue.manager.outbox import Event
from pgqueue.server.metrics import BrokerMetrics


def _event(i: int, queue: str, kind: str, **payload: object) -> Event:
    return Event(i, 100 + i, queue, f"j{i}", kind, dict(payload), 1_000.0 + i)


EVENTS = [
    _event(1, "a", "pushed", name="n"),
    _event(2, "a", "pushed", name="n"),
    _event(3, "b", "pushed", name="n"),
    _event(4, "a", "active", attempt=1),
    _event(5, "a", "completed", duration=12),
    _event(6, "b", "failed", reason="timeout", attemptsMade=1),
    _event(7, "b", "failed", reason="boom", attemptsMade=2),
    _event(8, "b", "dlq"),
    _event(9, "a", "stalled"),
    _event(10, "a", "completed", duration=30),
]


def _series(metrics: BrokerMetrics) -> list[str]:
    return [
        line
        for line in metrics.render().decode().splitlines()
        if line.startswith("pgqueue_") and "_created" not in line
    ]


def test_a_run_of_events_counts_as_each_event_alone() -> None:
    one_by_one, together = BrokerMetrics(), BrokerMetrics()
    for event in EVENTS:
        one_by_one.observe_event(event)
    together.observe_events(EVENTS)
    series = _series(together)
    assert series == _series(one_by_one)
    for line in [
        'pgqueue_jobs_pushed_total{queue="a"} 2.0',
        'pgqueue_jobs_pushed_total{queue="b"} 1.0',
        'pgqueue_jobs_completed_total{queue="a"} 2.0',
        'pgqueue_jobs_failed_total{queue="b"} 2.0',
        'pgqueue_lease_expiries_total{queue="a"} 1.0',
        'pgqueue_lease_expiries_total{queue="b"} 1.0',
        'pgqueue_jobs_dead_lettered_total{queue="b"} 1.0',
        'pgqueue_events_total{queue="a",type="pushed"} 2.0',
        'pgqueue_processing_seconds_count{queue="a"} 2.0',
    ]:
        assert line in series


def test_a_claim_tally_counts_as_its_claims_active_events() -> None:
    events, tallied = BrokerMetrics(), BrokerMetrics()
    events.observe_events([_event(i, "a", "active", attempt=1) for i in range(1, 6)])
    tallied.observe_events([_event(1, "a", "claimed", count=3), _event(2, "a", "claimed", count=2)])
    assert _series(tallied) == _series(events)
    assert tallied.pull_rate.rate() == events.pull_rate.rate()
