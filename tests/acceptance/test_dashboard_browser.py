"""The built-in dashboard in a real browser (headless Chromium) against real
broker processes: live counts, a failed job's error, an audited redrive, and the
event stream surviving the death of the broker serving the page."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from pgqueue.client import Queue
from tests.acceptance.browser_support import (
    TOKEN,
    FailoverProxy,
    browser_page,
    require_browser,
    sign_in,
)
from tests.acceptance.conftest import BrokerFactory

pytestmark = pytest.mark.timeout(240)

AUTH = {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def guarded(brokers: BrokerFactory, name: str) -> Any:
    return brokers.start(name, "--auth-token", f"ops={TOKEN}", "--sse-keepalive-ms", "1000")


async def fail_one(base: str, queue: str, error: str) -> str:
    """Pull one job of ``queue`` over HTTP and fail it with ``error`` (no retry)."""
    async with httpx.AsyncClient(base_url=base, headers=AUTH) as http:
        pulled = (await http.get(f"/queues/{queue}/jobs", params={"owner": "t"})).json()
        job_id = pulled["job"]["id"]
        answer = await http.post(
            f"/jobs/{job_id}/fail",
            json={"token": pulled["token"], "error": error, "unrecoverable": True},
        )
        assert answer.json()["ok"], answer.text
    return str(job_id)


async def test_the_overview_follows_pushes_without_a_reload_and_a_failed_job_is_redriven(
    brokers: BrokerFactory,
) -> None:
    broker = guarded(brokers, "ui-a")
    base = f"http://127.0.0.1:{broker.http_port}"
    queue = Queue("mail", f"pgqueue://{broker.address}?token={TOKEN}")
    try:
        async with browser_page() as page:
            await sign_in(page, base)
            await queue.add("welcome", {"to": "first@example.com"})
            waiting = page.locator("tr[data-queue='mail'] [data-count='waiting']")
            await waiting.filter(has_text="1").wait_for(timeout=15_000)
            navigations: list[str] = []
            page.on("framenavigated", lambda frame: navigations.append(frame.url))
            for i in range(2):
                await queue.add("welcome", {"to": f"n{i}@example.com"})
            await waiting.filter(has_text="3").wait_for(timeout=15_000)
            assert not [u for u in navigations if "#" not in u], "the page was reloaded"

            job_id = await fail_one(base, "mail", "SMTP 550: mailbox unavailable")
            failed = page.locator("tr[data-queue='mail'] [data-count='failed']")
            await failed.filter(has_text="1").wait_for(timeout=15_000)

            await page.goto(f"{base}/ui/#/job/{job_id}")
            reason = page.get_by_test_id("failed-reason")
            await reason.wait_for(timeout=15_000)
            assert "SMTP 550: mailbox unavailable" in await reason.inner_text()
            attempts = page.get_by_test_id("attempts")
            assert "SMTP 550" in await attempts.inner_text()

            await page.get_by_role("link", name="DLQ").click()
            await page.get_by_label("Queue", exact=True).select_option("mail")
            await page.locator(f"input[data-job='{job_id}']").check()
            await page.get_by_label("Reason for the redrive").fill("relay fixed, ticket OPS-17")
            await page.get_by_role("button", name="Redrive selected").click()
            audit = page.get_by_test_id("audit-table")
            await audit.filter(has_text="relay fixed, ticket OPS-17").wait_for(timeout=15_000)
            text = await audit.inner_text()
            assert "ops" in text and job_id in text  # who (the token's name) and which job
            await (
                page.get_by_test_id("dlq-entries")
                .filter(has_text="No dead-lettered job in mail")
                .wait_for(timeout=15_000)
            )
    finally:
        await queue.close()


async def test_cron_and_limits_show_real_data_and_a_dead_broker_says_unavailable_never_empty(
    brokers: BrokerFactory,
) -> None:
    """The cron and limits pages show what the broker holds; once the broker is
    gone, the pages name the failure instead of showing nothing."""
    broker = guarded(brokers, "ui-u")
    base = f"http://127.0.0.1:{broker.http_port}"
    async with httpx.AsyncClient(base_url=base, headers=AUTH) as http:
        await http.post("/queues/plain/jobs", json={"name": "n", "data": 1})
        made = await http.post(
            "/crons", json={"name": "nightly-report", "queue": "plain", "schedule": "0 3 * * *"}
        )
        assert made.json()["ok"] is True, made.text
        limited = await http.put("/queues/plain/concurrency", json={"limit": 7})
        assert limited.json()["ok"] is True, limited.text
    async with browser_page() as page:
        await sign_in(page, base)
        await page.goto(f"{base}/ui/#/cron")
        crons = page.get_by_test_id("crons")
        await crons.get_by_text("nightly-report").wait_for(timeout=15_000)
        assert "0 3 * * *" in await crons.inner_text()
        await page.goto(f"{base}/ui/#/limits")
        row = page.get_by_test_id("limits").locator("tr[data-queue='plain']")
        await row.wait_for(timeout=15_000)
        assert "7" in await row.inner_text()
        broker.kill()
        for hash_, box in (("cron", "crons"), ("limits", "limits"), ("overview", "queues")):
            await page.evaluate(f"location.hash = '#/{hash_}'")  # the page stays, its broker went
            part = page.get_by_test_id(box)
            await part.get_by_test_id("unavailable").first.wait_for(timeout=15_000)
            assert await part.get_by_test_id("empty").count() == 0
            assert "unavailable" in await part.inner_text()
        assert "the broker did not answer" in await page.get_by_test_id("queues").inner_text()


async def test_the_event_stream_resumes_on_the_other_broker_with_no_gap(
    brokers: BrokerFactory,
) -> None:
    first = guarded(brokers, "ui-1")
    second = guarded(brokers, "ui-2")
    proxy = FailoverProxy([("127.0.0.1", first.http_port), ("127.0.0.1", second.http_port)])
    await proxy.start()
    via_first = Queue("live", f"pgqueue://{first.address}?token={TOKEN}")
    via_second = Queue("live", f"pgqueue://{second.address}?token={TOKEN}")
    try:
        async with browser_page() as page:
            await sign_in(page, f"http://127.0.0.1:{proxy.port}")
            before = [(await via_first.add("tick", {"n": i})).id for i in range(3)]
            waiting = page.locator("tr[data-queue='live'] [data-count='waiting']")
            await waiting.filter(has_text="3").wait_for(timeout=15_000)
            assert set(proxy.served_by) == {first.http_port}

            first.kill()  # no drain: the stream is cut mid-flight
            after = [(await via_second.add("tock", {"n": i})).id for i in range(5)]
            await waiting.filter(has_text="8").wait_for(timeout=30_000)
            status = page.locator("#stream-status")
            await page.locator("#stream-status[data-state='live']").wait_for(timeout=15_000)
            assert int(await status.get_attribute("data-reconnects") or 0) >= 1
            assert second.http_port in proxy.served_by

            deadline = time.monotonic() + 15
            while True:
                seen = await page.evaluate(
                    "window.pgqueueStream.recent.filter(e => e.queue === 'live')"
                    ".map(e => [e.type, e.jobId, e.id])"
                )
                pushed = [job for kind, job, _ in seen if kind in ("pushed", "waiting")]
                if set(before + after) <= set(pushed) or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.1)
            assert sorted(pushed) == sorted(before + after), seen  # each event once, none lost
            ids = [event_id for _, _, event_id in seen]
            assert len(ids) == len(set(ids)), "an event was delivered twice"
    finally:
        await via_first.close()
        await via_second.close()
        await proxy.close()


@pytest.mark.parametrize("width", [1366, 390], ids=["laptop", "phone"])
async def test_the_overview_fits_a_laptop_and_a_phone_without_horizontal_overflow(
    brokers: BrokerFactory, width: int
) -> None:
    broker = guarded(brokers, f"ui-{width}")
    base = f"http://127.0.0.1:{broker.http_port}"
    queue = Queue(
        "a-rather-long-queue-name-for-the-table", f"pgqueue://{broker.address}?token={TOKEN}"
    )
    try:
        await queue.add("job", {"n": 1})
        async with browser_page(viewport=(width, 900)) as page:
            await sign_in(page, base)
            await page.get_by_text("a-rather-long-queue-name-for-the-table").first.wait_for()
            overflow = await page.evaluate(
                "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            clipped = await page.evaluate(
                "() => [...document.querySelectorAll('.table-wrap')]"
                ".filter((w) => w.scrollWidth > w.clientWidth + 1)"
                ".map((w) => `${w.querySelector('caption')?.textContent}: "
                "${w.scrollWidth}px in ${w.clientWidth}px`)"
            )
            assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}px"
            assert clipped == [], f"tables wider than their card at {width}px: {clipped}"
    finally:
        await queue.close()
