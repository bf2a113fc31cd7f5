"""Webhook delivery: fan-out from the outbox, signed POSTs, retries, fencing, the log."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
from collections.abc import Awaitable
from datetime import UTC, datetime

import asyncpg
import pytest

from pgqueue.maintenance.webhook_delivery import (
    DeliverySettings,
    claim_due,
    deliver_once,
    fan_out_once,
    record_results,
    upkeep_once,
)
from pgqueue.maintenance.webhook_sender import AttemptResult, WebhookSender
from pgqueue.ssrf import AddressGuard, IPAddress, Resolver
from pgqueue.testing import eventually
from tests.helpers import HOUR_MS, clock_ahead, clock_between, sql
from tests.integration.webhooks_support import (
    FAST,
    Received,
    Receiver,
    WebhookManager,
    delivery_service,
    sender,
    webhook_manager,
)


async def deliver(
    m: WebhookManager,
    client: WebhookSender,
    settings: DeliverySettings = FAST,
    now: datetime | None = None,
) -> None:
    """One fan-out and one delivery pass, as the leader's service does (judging
    due-ness at ``now``: None is the database clock)."""
    await fan_out_once(m.ctx, settings)
    await deliver_once(m.ctx, client, settings, now)


def later() -> datetime:
    """A clock past every waiting retry and lease of these tests (and well
    within the log's retention)."""
    return clock_ahead(HOUR_MS)


async def test_each_event_is_posted_once_with_a_signature_the_receiver_can_verify(
    db_dsn: str, namespace: str
) -> None:
    events = ["job.pushed", "job.started", "job.progress", "job.completed"]
    async with Receiver() as r, webhook_manager(db_dsn, namespace) as m, sender() as client:
        hook = await m.add_webhook(r.url, events, secret="s3cret")
        job_id = await m.push("emails", "welcome", {"to": "a@example.com"})
        [claim] = await m.pull_batch("emails", 1)
        await m.update_progress(claim.id, 50, "half", token=claim.token)
        await m.ack(claim.id, claim.token, {"sent": True})
        await deliver(m, client)
        await deliver(m, client)  # nothing new: nothing sent twice

        assert r.events() == [(e, job_id) for e in events]
        for request in r.requests:
            body = request.json
            expected = hmac.new(b"s3cret", request.body, hashlib.sha256).hexdigest()
            assert request.headers["x-webhook-signature"] == expected
            assert request.headers["x-webhook-event"] == body["event"]
            assert request.headers["x-webhook-timestamp"] == str(body["timestamp"])
            assert request.headers["x-webhook-delivery"] == body["deliveryId"]
            assert request.headers["content-type"] == "application/json"
            assert (request.method, request.path, body["queue"]) == ("POST", "/hook", "emails")
        pushed, started, progress, completed = (req.json for req in r.requests)
        assert pushed["data"]["name"] == "welcome"
        assert started["data"]["attempt"] == 1
        assert (progress["progress"], progress["data"]["message"]) == (50, "half")
        assert completed["data"] == {"sent": True}
        log = await m.list_deliveries(hook.id)
        assert {(d.event, d.status, d.attempts, d.last_status_code) for d in log} == {
            (e, "delivered", 1, 200) for e in events
        }
        [listed], stats = await m.list_webhooks()
        assert (listed.success_count, listed.delivered, stats.delivered) == (4, 4, 4)
        assert listed.last_triggered_at is not None


async def test_without_a_secret_no_signature_is_sent(db_dsn: str, namespace: str) -> None:
    async with Receiver() as r, webhook_manager(db_dsn, namespace) as m, sender() as client:
        await m.add_webhook(r.url, ["job.pushed"])
        await m.push("q", "n", 1)
        await deliver(m, client)
        [request] = r.requests
        assert "x-webhook-signature" not in request.headers


async def test_a_webhook_gets_only_its_events_of_its_queue(db_dsn: str, namespace: str) -> None:
    async with Receiver() as r, webhook_manager(db_dsn, namespace) as m, sender() as client:
        await m.add_webhook(r.url, ["job.completed", "job.failed"], queue="billing")
        await m.push("other", "n", 1)
        billing = await m.push("billing", "n", 1, max_attempts=2, backoff=0)
        for _ in range(2):
            [claim] = await m.pull_batch("billing", 1)
            await m.fail(claim.id, claim.token, "card declined")
        other = await m.pull_batch("other", 1)
        await m.ack(other[0].id, other[0].token)
        await deliver(m, client)
        assert r.events() == [("job.failed", billing), ("job.failed", billing)]
        first, last = (req.json for req in r.requests)
        assert first["error"] == "card declined"
        assert (first["data"]["terminal"], last["data"]["terminal"]) == (False, True)
        assert first["deliveryId"] != last["deliveryId"]


async def test_a_webhook_gets_only_events_committed_after_its_registration(
    db_dsn: str, namespace: str
) -> None:
    async with Receiver() as r, webhook_manager(db_dsn, namespace) as m, sender() as client:
        await fan_out_once(m.ctx, FAST)  # the cursor exists, behind the next event
        before = await m.push("q", "n", 1)
        await m.add_webhook(r.url, ["job.pushed"])
        after = await m.push("q", "n", 2)
        await deliver(m, client)  # the fan-out reads both events only now
        assert r.events() == [("job.pushed", after)]
        assert before != after


async def test_a_disabled_webhook_gets_nothing_and_its_queued_deliveries_wait(
    db_dsn: str, namespace: str
) -> None:
    async with Receiver() as r, webhook_manager(db_dsn, namespace) as m, sender() as client:
        on = await m.add_webhook(r.url + "/on", ["job.pushed"])
        off = await m.add_webhook(r.url + "/off", ["job.pushed"])
        await m.set_webhook_enabled(off.id, False)
        first = await m.push("q", "n", 1)
        await deliver(m, client)
        assert [(q.path, q.json["jobId"]) for q in r.requests] == [("/hook/on", first)]
        assert await m.list_deliveries(off.id) == []

        # A delivery queued while enabled waits while its webhook is disabled.
        await m.set_webhook_enabled(off.id, True)
        second = await m.push("q", "n", 2)
        await fan_out_once(m.ctx, FAST)
        await m.set_webhook_enabled(off.id, False)
        await deliver_once(m.ctx, client, FAST)
        assert [q.path for q in r.requests] == ["/hook/on", "/hook/on"]
        [waiting] = await m.list_deliveries(off.id)
        assert (waiting.job_id, waiting.status) == (second, "pending")
        await m.set_webhook_enabled(off.id, True)
        await deliver(m, client)
        assert [(q.path, q.json["jobId"]) for q in r.requests[2:]] == [("/hook/off", second)]
        assert on.id != off.id


async def test_failed_attempts_are_retried_with_backoff_under_one_delivery_id(
    db_dsn: str, namespace: str
) -> None:
    statuses = iter([500, 503, 200])
    async with (
        Receiver(lambda request: next(statuses)) as r,
        webhook_manager(db_dsn, namespace) as m,
        sender() as client,
    ):
        hook = await m.add_webhook(r.url, ["job.pushed"])
        await m.push("q", "n", 1)
        await deliver(m, client)
        for attempt, delay_ms in ((1, 1000), (2, 2000)):
            [entry] = await m.list_deliveries(hook.id)
            assert (entry.status, entry.attempts, entry.last_status_code) == (
                "pending",
                attempt,
                500 if attempt == 1 else 503,
            )
            assert entry.last_error == f"HTTP {entry.last_status_code}"
            assert entry.next_attempt_at is not None and entry.last_attempt_at is not None
            wait = entry.next_attempt_at - entry.last_attempt_at
            assert delay_ms <= wait < delay_ms + 5_000, "base * 2^(attempt-1) on the DB clock"
            await deliver(m, client)
            assert len(r.requests) == attempt, "not due yet: no new attempt"
            # The clock at the retry (the one after it is not due yet then).
            await deliver(m, client, now=datetime.fromtimestamp(entry.next_attempt_at / 1000, UTC))
        assert len(r.requests) == 3
        assert len({q.delivery_id for q in r.requests}) == 1
        assert len({q.body for q in r.requests}) == 1, "every attempt sends the same bytes"
        assert [q.headers["x-webhook-attempt"] for q in r.requests] == ["1", "2", "3"]
        [entry] = await m.list_deliveries(hook.id, status="delivered")
        assert (entry.attempts, entry.last_status_code, entry.last_error) == (3, 200, None)


async def test_a_delivery_fails_for_good_when_its_attempts_are_spent(
    db_dsn: str, namespace: str
) -> None:
    settings = DeliverySettings(timeout_ms=2_000, lease_ms=3_000, max_attempts=3)
    async with (
        Receiver(lambda request: 500) as r,
        webhook_manager(db_dsn, namespace) as m,
        sender() as client,
    ):
        hook = await m.add_webhook(r.url, ["job.pushed"])
        await m.push("q", "n", 1)
        for _ in range(5):
            await deliver(m, client, settings, now=later())
        assert len(r.requests) == 3
        [entry] = await m.list_deliveries(hook.id, status="failed")
        assert (entry.attempts, entry.last_status_code, entry.last_error) == (3, 500, "HTTP 500")
        [listed], stats = await m.list_webhooks()
        assert (listed.failure_count, listed.success_count, stats.failed) == (1, 0, 1)


async def test_an_unreachable_receiver_is_retried(db_dsn: str, namespace: str) -> None:
    async with Receiver() as r:
        url = r.url  # nobody listens there once the receiver is gone
    async with webhook_manager(db_dsn, namespace) as m, sender() as client:
        hook = await m.add_webhook(url, ["job.pushed"])
        await m.push("q", "n", 1)
        await deliver(m, client)
        [entry] = await m.list_deliveries(hook.id)
        assert (entry.status, entry.attempts, entry.last_status_code) == ("pending", 1, None)
        assert entry.last_error


async def test_a_claim_whose_lease_ended_is_retried_with_the_same_id_and_its_late_result_is_ignored(
    db_dsn: str, namespace: str
) -> None:
    async with Receiver() as r, webhook_manager(db_dsn, namespace) as m, sender() as client:
        hook = await m.add_webhook(r.url, ["job.pushed"])
        await m.push("q", "n", 1)
        await fan_out_once(m.ctx, FAST)
        [stale] = await claim_due(m.ctx, FAST, 10)  # then its broker "dies" mid-POST
        assert await claim_due(m.ctx, FAST, 10) == [], "claimed: not due while leased"
        [fresh] = await claim_due(m.ctx, FAST, 10, later())  # once the lease ended
        assert (fresh.id, fresh.attempt) == (stale.id, 2)
        assert fresh.lease_token != stale.lease_token
        late = [(stale, AttemptResult(False, 500, "HTTP 500"))]
        assert await record_results(m.ctx, late, FAST) == 0, "fenced by the lease token"
        result = await client.send(fresh.attempt_of())
        assert await record_results(m.ctx, [(fresh, result)], FAST) == 1
        [entry] = await m.list_deliveries(hook.id)
        assert (entry.status, entry.attempts) == ("delivered", 2)
        assert [q.delivery_id for q in r.requests] == [stale.id]


async def test_an_interrupted_last_attempt_fails_the_delivery(db_dsn: str, namespace: str) -> None:
    settings = DeliverySettings(timeout_ms=2_000, lease_ms=3_000, max_attempts=1)
    async with webhook_manager(db_dsn, namespace) as m:
        hook = await m.add_webhook("http://127.0.0.1:9/hook", ["job.pushed"])
        await m.push("q", "n", 1)
        await fan_out_once(m.ctx, settings)
        assert len(await claim_due(m.ctx, settings, 10)) == 1
        assert await claim_due(m.ctx, settings, 10, later()) == [], "no attempt left"
        await upkeep_once(m.ctx, settings, later())
        [entry] = await m.list_deliveries(hook.id)
        assert entry.status == "failed" and "interrupted" in (entry.last_error or "")
        assert (await m.list_webhooks())[0][0].failure_count == 1


async def test_the_fan_out_never_queues_an_event_twice_even_when_the_cursor_is_replayed(
    db_dsn: str, namespace: str
) -> None:
    async with webhook_manager(db_dsn, namespace) as m:
        await m.add_webhook("http://127.0.0.1:9/hook", ["job.pushed"])
        ids = await m.push_bulk("q", [{"name": "n", "data": i} for i in range(5)])
        assert (await fan_out_once(m.ctx, FAST)).queued == 5
        await sql(
            db_dsn,
            "UPDATE pgqueue_webhook_cursor SET position = '1:1:', xid = 1 WHERE namespace = $1",
            namespace,
        )
        assert (await fan_out_once(m.ctx, FAST)).queued == 0
        rows = await sql(
            db_dsn,
            "SELECT job_id FROM pgqueue_webhook_deliveries WHERE namespace = $1",
            namespace,
        )
        assert sorted(r["job_id"] for r in rows) == sorted(ids)


async def test_overlapping_fan_outs_of_two_brokers_queue_each_event_once(
    db_dsn: str, namespace: str
) -> None:
    async with (
        webhook_manager(db_dsn, namespace, broker_id="a") as a,
        webhook_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        await a.add_webhook("http://127.0.0.1:9/hook", ["job.pushed"])
        ids: list[str] = []
        for _ in range(20):
            ids += await a.push_bulk("q", [{"name": "n", "data": i} for i in range(5)])
            await asyncio.gather(*(fan_out_once(m.ctx, FAST) for m in (a, b) * 3))
        rows = await sql(
            db_dsn,
            "SELECT job_id FROM pgqueue_webhook_deliveries WHERE namespace = $1",
            namespace,
        )
        assert sorted(r["job_id"] for r in rows) == sorted(ids)


async def test_the_cursor_skips_ahead_while_no_webhook_is_enabled(
    db_dsn: str, namespace: str
) -> None:
    async with webhook_manager(db_dsn, namespace) as m:
        hook = await m.add_webhook("http://127.0.0.1:9/hook", ["job.pushed"])
        await m.set_webhook_enabled(hook.id, False)
        await m.push("q", "n", 1)
        assert (await fan_out_once(m.ctx, FAST)).read == 0, "nothing read, nothing to deliver"
        assert await m.list_deliveries(hook.id) == []


async def test_delivery_rechecks_the_address_and_refuses_a_name_that_now_resolves_privately(
    db_dsn: str, namespace: str
) -> None:
    answers = {"add": "93.184.216.34", "deliver": "127.0.0.1"}

    def resolver(stage: str) -> Resolver:
        async def resolve(host: str, port: int) -> list[IPAddress]:
            assert host == "rebind.example"
            return [ipaddress.ip_address(answers[stage])]

        return resolve

    async with Receiver() as r, webhook_manager(db_dsn, namespace, allow_private=False) as m:
        m.resolver = resolver("add")
        hook = await m.add_webhook(f"http://rebind.example:{r.port}/hook", ["job.pushed"])
        await m.push("q", "n", 1)
        strict = WebhookSender(AddressGuard(False, resolver("deliver")), timeout_ms=2_000)
        try:
            await deliver(m, strict)
        finally:
            await strict.aclose()
        assert r.requests == []
        [entry] = await m.list_deliveries(hook.id)
        assert (entry.status, entry.attempts) == ("failed", 1)
        assert "not allowed: rebind.example resolves to a loopback address" in (
            entry.last_error or ""
        )


async def test_delivery_connects_to_the_address_it_checked_not_to_a_new_resolution(
    db_dsn: str, namespace: str
) -> None:
    async def resolve(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("127.0.0.1")]

    async with Receiver() as r, webhook_manager(db_dsn, namespace) as m:
        hook = await m.add_webhook(f"http://pinned.invalid:{r.port}/hook", ["job.pushed"])
        await m.push("q", "n", 1)
        pinned = WebhookSender(AddressGuard(True, resolve), timeout_ms=2_000)
        try:
            await deliver(m, pinned)
        finally:
            await pinned.aclose()
        [request] = r.requests
        assert request.headers["host"] == f"pinned.invalid:{r.port}"
        assert (await m.list_deliveries(hook.id))[0].status == "delivered"


async def test_a_slow_receiver_times_out_and_is_retried(db_dsn: str, namespace: str) -> None:
    release = asyncio.Event()

    def answer(request: Received) -> Awaitable[int] | int:
        if len(r.requests) == 1:
            return _after(release, 200)
        return 200

    async with Receiver(answer) as r, webhook_manager(db_dsn, namespace) as m:
        hook = await m.add_webhook(r.url, ["job.pushed"])
        await m.push("q", "n", 1)
        async with sender(timeout_ms=300) as client:
            await deliver(m, client)
            [entry] = await m.list_deliveries(hook.id)
            assert (entry.status, entry.last_error) == ("pending", "timed out after 300 ms")
            await deliver(m, client, now=later())
        release.set()
        assert [q.delivery_id for q in r.requests] == [entry.id, entry.id]
        assert (await m.list_deliveries(hook.id))[0].status == "delivered"


async def _after(event: asyncio.Event, status: int) -> int:
    await event.wait()
    return status


async def test_finished_deliveries_are_pruned_after_the_retention(
    db_dsn: str, namespace: str
) -> None:
    settings = DeliverySettings(timeout_ms=2_000, lease_ms=3_000, retention_ms=60_000)
    async with Receiver() as r, webhook_manager(db_dsn, namespace) as m, sender() as client:
        hook = await m.add_webhook(r.url, ["job.pushed"])
        for _ in range(2):  # two fan-outs: two deliveries queued at different times
            await m.push("q", "n", 1)
            await deliver(m, client, settings)
        assert await upkeep_once(m.ctx, settings) == 0, "young: kept"
        rows = await sql(
            db_dsn,
            "SELECT created_at FROM pgqueue_webhook_deliveries WHERE namespace = $1"
            " ORDER BY created_at",
            namespace,
        )
        first, second = (row["created_at"] for row in rows)
        # The clock at which the first is past the retention, the second not.
        assert await upkeep_once(m.ctx, settings, clock_between(first, second, 60_000)) == 1
        assert len(await m.list_deliveries(hook.id)) == 1


async def test_the_leaders_service_delivers_on_its_own(db_dsn: str, namespace: str) -> None:
    async with (
        Receiver() as r,
        webhook_manager(
            db_dsn, namespace, run_maintenance=True, leader_ttl_ms=2_000, reaper_interval_ms=100
        ) as m,
        delivery_service(m) as service,
    ):
        await m.add_webhook(r.url, ["job.pushed", "job.completed"])
        job_id = await m.push("q", "n", 1)
        [claim] = await m.pull_batch("q", 1)
        await m.ack(claim.id, claim.token, "done")
        await eventually(lambda: len(r.requests) == 2, timeout=15)
        assert r.events() == [("job.pushed", job_id), ("job.completed", job_id)]
        await eventually(lambda: service.report.delivered == 2)


@pytest.mark.parametrize("status", [301, 404, 410])
async def test_a_non_2xx_answer_is_a_failed_attempt(
    db_dsn: str, namespace: str, status: int
) -> None:
    async with (
        Receiver(lambda request: status) as r,
        webhook_manager(db_dsn, namespace) as m,
        sender() as client,
    ):
        hook = await m.add_webhook(r.url, ["job.pushed"])
        await m.push("q", "n", 1)
        await deliver(m, client)
        [entry] = await m.list_deliveries(hook.id)
        assert (entry.status, entry.last_status_code) == ("pending", status)
        assert len(r.requests) == 1


async def test_a_forgotten_prepared_transaction_does_not_stall_webhook_delivery(
    db_dsn: str, namespace: str
) -> None:
    """Issue 9 item 4 (webhooks): with the xmin horizon held back by a prepared
    transaction, the leader's service delivers every committed event at once,
    also one of a transaction that began before a delivered one and committed
    after it; and a new leader (another broker, fresh memory) goes on from the
    durable position without losing or repeating any."""
    holder = await asyncpg.connect(db_dsn)
    slow = await asyncpg.connect(db_dsn)
    gid = f"pgqueue-test-{namespace}"
    await holder.execute("BEGIN")
    await holder.execute("SELECT pg_current_xact_id()")
    await holder.execute(f"PREPARE TRANSACTION '{gid}'")
    try:
        async with (
            Receiver() as r,
            webhook_manager(
                db_dsn, namespace, run_maintenance=True, leader_ttl_ms=2_000, broker_id="a"
            ) as a,
            webhook_manager(db_dsn, namespace, broker_id="b") as b,
            sender() as client,
        ):
            await a.add_webhook(r.url, ["job.pushed"])
            async with delivery_service(a):
                await slow.execute("BEGIN")
                await slow.execute(
                    "INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload) "
                    "VALUES ($1, 'q', 'slow', 'pushed', '{}')",
                    namespace,
                )
                first = await a.push("q", "n", 1)
                await eventually(lambda: len(r.requests) == 1, timeout=15)
                await slow.execute("COMMIT")
                await eventually(
                    lambda: len(r.requests) == 2,
                    timeout=15,
                    message="the late commit is delivered while the horizon is held back",
                )
            last = await a.push("q", "n", 2)
            await deliver(b, client)  # the leader changed
            await deliver(a, client)
            assert r.events() == [
                ("job.pushed", first),
                ("job.pushed", "slow"),
                ("job.pushed", last),
            ]
    finally:
        await holder.execute(f"ROLLBACK PREPARED '{gid}'")
        await holder.close()
        await slow.close()
