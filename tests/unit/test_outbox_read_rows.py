"""A read's rows become its events: the head row left out, a payload shared by
several events decoded once yet handed to each as its own value."""

from __future__ import annotations

from typing import Any

from pgqueue.manager.outbox import Event, _events

HEAD = ("1:5:", None, 1.0, None, None, None, None, None, None, None)
NAMES = ("snapshot", "pruned", "now_ms", "id", "xid", "queue", "job_id", "type", "payload", "ts")


def _row(event_id: int, kind: str, payload: str | None, job_id: str | None = "j") -> dict[str, Any]:
    values = (None, None, None, event_id, 9, "q", job_id, kind, payload, 1.5)
    return dict(zip(NAMES, values, strict=True))


def test_the_events_of_a_read_are_those_of_its_rows_in_order() -> None:
    head = dict(zip(NAMES, HEAD, strict=True))
    flat = '{"name": "n", "state": "waiting"}'
    nested = '{"returnvalue": {"n": 123456789012345678901234}, "duration": 5}'
    rows = [head, _row(1, "pushed", flat), _row(2, "pushed", flat), _row(3, "completed", nested)]
    rows += [_row(4, "completed", nested), _row(5, "drained", None, None)]
    events = _events(rows)
    assert events == [Event.from_row(row) for row in rows[1:]]
    assert events[4].payload == {} and events[4].job_id is None


def test_a_shared_payload_is_each_events_own_value() -> None:
    flat = '{"broker": "b", "attempt": 1}'
    nested = '{"returnvalue": {"items": [1, 2]}}'
    rows = [_row(i, "active", flat) for i in range(3)]
    rows += [_row(i, "completed", nested) for i in (3, 4)]
    events = _events(rows)
    events[0].payload["attempt"] = 2
    events[3].payload["returnvalue"]["items"].append(3)
    assert [e.payload for e in events[1:3]] == [{"broker": "b", "attempt": 1}] * 2
    assert events[4].payload == {"returnvalue": {"items": [1, 2]}}
    assert len({id(e.payload) for e in events}) == len(events)
