"""An outbox row becomes the Event its fields say (built without the frozen __init__)."""

from __future__ import annotations

import dataclasses

import pytest

from pgqueue.manager.outbox import Event

ROW = {
    "id": 7,
    "xid": 912,
    "queue": "q",
    "job_id": "j1",
    "type": "completed",
    "payload": '{"returnvalue": {"n": 123456789012345678901234}, "duration": 5}',
    "ts": 1_796_000_000_123.5,
}


def test_a_row_becomes_the_event_of_its_columns() -> None:
    event = Event.from_row(ROW)
    assert event == Event(
        7,
        912,
        "q",
        "j1",
        "completed",
        {"returnvalue": {"n": 123456789012345678901234}, "duration": 5},
        1_796_000_000_123.5,
    )
    assert event.resume == "" and event.cursor.xid == 912
    assert Event.from_row({**ROW, "payload": None, "job_id": None}).payload == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.type = "failed"  # type: ignore[misc]
