"""The history checker on hand-made histories and snapshots (no database)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pgqueue.testing.checker import DlqRow, EventRow, JobRow, Snapshot, check
from pgqueue.testing.history import HistoryWriter, Record, read_history


def rec(kind: str, t: float = 1.0, **fields: Any) -> Record:
    return {"kind": kind, "process": "p", "t": t, **fields}


def pushed(cid: str, job_id: str, *, poison: bool = False) -> list[Record]:
    return [
        rec("enqueue", type="invoke", cid=cid, poison=poison),
        rec("enqueue", type="ok", cid=cid, job_id=job_id),
    ]


def done(job_id: str, cid: str, fence: int = 1, execution: str = "e1") -> JobRow:
    result = json.dumps({"exec": execution, "fence": fence})
    return JobRow(job_id, "q", cid, "completed", fence, False, result)


def events(job_id: str, *types: str, start: int = 1) -> list[EventRow]:
    return [EventRow(start + i, "q", job_id, t, 1000.0 * (start + i)) for i, t in enumerate(types)]


def clean_run() -> tuple[list[Record], Snapshot]:
    history = [
        *pushed("c1", "j1"),
        rec("exec", job_id="j1", cid="c1", fence=1, exec="e1"),
        rec("ack", type="ok", job_id="j1", fence=1, exec="e1"),
    ]
    return history, Snapshot([done("j1", "c1")], [], events("j1", "pushed", "active", "completed"))


def test_a_clean_run_is_valid_and_says_so_on_one_line() -> None:
    history, snapshot = clean_run()
    report = check(history, snapshot)
    assert report.valid and report.admitted == 1 and report.lost == 0
    line = report.headline()
    assert "\n" not in line and line.endswith("valid: yes") and "lost 0" in line


def test_an_admitted_job_missing_from_the_database_is_lost() -> None:
    history, _ = clean_run()
    report = check(history, Snapshot([], [], []))
    assert report.lost_absent == 1 and not report.valid


def test_a_job_still_live_after_the_drain_is_stuck_unless_not_drained() -> None:
    history, _ = clean_run()
    live = Snapshot([JobRow("j1", "q", "c1", "pending", 0, True)], [], [])
    assert check(history, live).lost_stuck == 1
    assert check(history, live, require_drained=False).valid


def test_an_indeterminate_push_is_recovered_or_absent_never_lost() -> None:
    history = [
        rec("enqueue", type="invoke", cid="c1"),
        rec("enqueue", type="info", cid="c1"),
        rec("enqueue", type="invoke", cid="c2"),
        rec("enqueue", type="info", cid="c2"),
        rec("exec", job_id="j1", cid="c1", fence=1, exec="e1"),
    ]
    report = check(history, Snapshot([done("j1", "c1")], [], []))
    assert (report.indeterminate, report.recovered, report.absent, report.lost) == (2, 1, 1, 0)
    assert report.valid


def test_a_job_nobody_pushed_or_a_refused_push_that_exists_is_unexpected() -> None:
    history = [rec("enqueue", type="invoke", cid="c1"), rec("enqueue", type="fail", cid="c1")]
    snapshot = Snapshot([done("j1", "c1"), done("j2", "other")], [], [])
    assert check(history, snapshot).unexpected == 2


def test_a_result_from_an_older_fence_or_from_no_execution_is_a_stale_ack_accepted() -> None:
    history = [
        *pushed("c1", "j1"),
        *pushed("c2", "j2"),
        rec("exec", job_id="j1", cid="c1", fence=1, exec="old"),
        rec("exec", job_id="j1", cid="c1", fence=2, exec="new"),
    ]
    snapshot = Snapshot(
        [
            done("j1", "c1", fence=2, execution="old"),
            done("j2", "c2", fence=1, execution="intruder"),
        ],
        [],
        [],
    )
    report = check(history, snapshot)
    assert report.stale_acks_accepted == 2 and not report.valid


def test_two_terminal_events_and_a_claim_over_a_live_claim_are_reported() -> None:
    history, _ = clean_run()
    snapshot = Snapshot(
        [done("j1", "c1", fence=1)], [], events("j1", "active", "active", "completed", "completed")
    )
    report = check(history, snapshot)
    assert report.acked_twice == 1 and report.lease_overlaps == 1 and not report.valid


def test_a_stall_then_a_new_claim_is_a_redelivery_not_an_overlap() -> None:
    history = [
        *pushed("c1", "j1"),
        rec("exec", job_id="j1", cid="c1", fence=1, exec="a"),
        rec("exec", job_id="j1", cid="c1", fence=2, exec="b"),
    ]
    snapshot = Snapshot(
        [done("j1", "c1", fence=2, execution="b")],
        [],
        events("j1", "active", "stalled", "active", "completed"),
    )
    report = check(history, snapshot)
    assert (report.redeliveries, report.stalls, report.duplicate_side_effects) == (1, 1, 1)
    assert report.lease_overlaps == 0 and report.valid


def test_one_custom_id_held_by_two_jobs_is_a_duplicate() -> None:
    history, _ = clean_run()
    snapshot = Snapshot([done("j1", "c1"), JobRow("j9", "q", "c1", "pending", 0, True)], [], [])
    assert check(history, snapshot, require_drained=False).cid_duplicates == 1


def test_events_a_subscriber_missed_or_got_twice_are_counted_per_subscriber() -> None:
    history, snapshot = clean_run()
    history += [
        rec("subscribed", t=0.5, subscriber="s1", queue="q"),
        rec("event", t=2.0, subscriber="s1", queue="q", seq=1, ts=1000.0),
        rec("event", t=2.1, subscriber="s1", queue="q", seq=1, ts=1000.0),
    ]
    report = check(history, snapshot)
    assert report.events_missing == {"s1": 2} and report.events_duplicated == {"s1": 1}
    assert report.max_event_delay_s is not None and abs(report.max_event_delay_s - 1.1) < 1e-6
    assert not report.valid


def test_an_event_missed_just_before_the_subscriber_closed_is_missing_given_its_position() -> None:
    # The run waited for s1 to reach event 3, then closed it 0.2 s after that
    # event's commit: the closing margin must not hide the event it never got.
    history, snapshot = clean_run()
    history += [
        rec("subscribed", t=0.5, subscriber="s1", queue="q"),
        rec("event", t=1.1, subscriber="s1", queue="q", seq=1, ts=1000.0),
        rec("event", t=2.1, subscriber="s1", queue="q", seq=2, ts=2000.0),
        rec("unsubscribed", t=3.2, subscriber="s1", queue="q", upto=3),
    ]
    report = check(history, snapshot)
    assert report.events_missing == {"s1": 1}
    assert not report.valid


def test_without_a_position_events_of_the_last_second_before_closing_are_not_expected() -> None:
    history, snapshot = clean_run()
    history += [
        rec("subscribed", t=0.5, subscriber="s1", queue="q"),
        rec("event", t=1.1, subscriber="s1", queue="q", seq=1, ts=1000.0),
        rec("event", t=2.1, subscriber="s1", queue="q", seq=2, ts=2000.0),
        rec("unsubscribed", t=3.2, subscriber="s1", queue="q"),
    ]
    assert check(history, snapshot).events_missing == {"s1": 0}


def test_poison_jobs_must_reach_the_dlq_after_their_backoff() -> None:
    history = [*pushed("c1", "j1", poison=True), *pushed("c2", "j2", poison=True)]
    failed = [
        JobRow("j1", "q", "c1", "failed", 3, False),
        JobRow("j2", "q", "c2", "failed", 3, False),
    ]
    entry = DlqRow(
        "j1",
        "max_attempts",
        (1, 2, 3),
        ("retry", "retry", "max_attempts"),
        (0.0, 200.0, 300.0),
        (100.0, 200.0, 400.0),
    )
    report = check(history, Snapshot(failed, [entry], []), backoff_ms=100)
    # j2 never reached the DLQ; j1's second retry came 100 ms after, not >= 200 ms
    assert report.dlq_mismatch == 1 and report.backoff_early == 1 and not report.valid


def test_faults_are_counted_by_kind_and_recovery_measured_to_the_next_completion() -> None:
    history, snapshot = clean_run()
    history += [
        rec("nemesis", t=0.2, f="kill", target="b1", phase="start"),
        rec("nemesis", t=0.4, f="stop", target="w1", phase="start"),
        rec("nemesis", t=0.5, f="stop", target="w1", phase="end"),
    ]
    report = check(history, snapshot)
    assert dict(report.faults) == {"kill": 1, "stop": 1}
    assert report.max_recovery_s is not None and abs(report.max_recovery_s - 2.8) < 1e-6
    assert "faults 2 (kill 1, stop 1)" in report.headline()


def test_history_files_survive_a_torn_last_line(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path, "w1") as history:
        history.write("exec", job_id="j1")
    with (tmp_path / "w1.jsonl").open("a") as f:
        f.write('{"kind": "ack", "tor')  # killed mid-line
    assert [r["kind"] for r in read_history([tmp_path])] == ["exec"]
