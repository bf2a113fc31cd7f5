#!/usr/bin/env python3
"""Screenshots of every dashboard page, with real data, for docs/dashboard.md.

    .venv/bin/python scripts/screenshots.py [--out docs/images] [--dsn URL]

Starts an embedded PostgreSQL (or uses ``--dsn``), two brokers (``pgqueue serve``
with a token), pushes and works real jobs through the SDK (some fail into the
DLQ, one is redriven with a reason, one reports progress and logs, a worker
holds a lease), adds a webhook, then drives Debian's Chromium with Playwright
(``/usr/bin/chromium``, headless) through each page, laptop-sized and one
phone-sized, and writes ``dashboard-<page>.png`` under ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue.client import Job, Queue, Worker  # noqa: E402

TOKEN = "s3cret"
NAMESPACE = "demo"
CHROMIUM = os.environ.get("PGQUEUE_CHROMIUM", "/usr/bin/chromium")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def database(dsn: str | None) -> Iterator[str]:
    if dsn:
        yield dsn
        return
    from pgqueue.db.schema import migrate
    from pgqueue.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="pgqueue-shots-")) / "data")
    url = server.start()
    try:
        migrate(url)
        yield url
    finally:
        server.stop()


@contextlib.contextmanager
def broker(dsn: str, name: str, logs: Path) -> Iterator[tuple[int, int]]:
    tcp, http = free_port(), free_port()
    log = (logs / f"{name}.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "pgqueue", "serve", "--dsn", dsn, "--namespace", NAMESPACE,
         "--broker-id", name, "--tcp-port", str(tcp), "--http-port", str(http),
         "--host", "127.0.0.1", "--auth-token", f"ops={TOKEN}"],
        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{http}/readyz", timeout=1)
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"broker {name} did not start: see {log.name}") from None
                time.sleep(0.2)
        yield tcp, http
    finally:
        process.terminate()
        process.wait(30)
        log.close()


@contextlib.asynccontextmanager
async def seeded(tcp_a: int, tcp_b: int) -> AsyncIterator[dict[str, Any]]:
    """Real traffic: three queues, workers, failures, a redrive, a job in flight."""
    a = f"pgqueue://127.0.0.1:{tcp_a}?token={TOKEN}"
    b = f"pgqueue://127.0.0.1:{tcp_b}?token={TOKEN}"
    emails, reports, thumbs = Queue("emails", a), Queue("reports", b), Queue("thumbnails", a)
    held = asyncio.Event()
    release = asyncio.Event()

    async def send(job: Job) -> str:
        await asyncio.sleep(0.01)
        if job.data.get("to", "").endswith("@bounce.example"):
            raise RuntimeError("SMTP 550 5.1.1 mailbox unavailable")
        return "sent"

    async def render(job: Job) -> dict[str, Any]:
        if job.name == "quarterly":
            await job.log("loading 12 months of orders")
            await job.update_progress(40, "aggregating")
            held.set()
            await release.wait()
        return {"pages": 12}

    workers = [
        Worker("emails", send, a, concurrency=4),
        Worker("reports", render, b, concurrency=2),
    ]
    try:
        for i in range(60):
            to = f"user{i}@bounce.example" if i % 12 == 0 else f"user{i}@example.com"
            await emails.add("welcome", {"to": to}, attempts=1)
        await reports.add("quarterly", {"quarter": "2026-Q3"})
        for i in range(25):
            await thumbs.add("resize", {"image": f"img-{i}.png", "width": 320})
        await thumbs.add("resize", {"image": "later.png"}, delay=3_600_000)
        await held.wait()

        async def settled() -> list[str]:
            while True:
                counts = await emails.get_counts()
                if counts.get("completed", 0) + counts.get("failed", 0) >= 60:
                    break
                await asyncio.sleep(0.1)
            dlq = await emails.get_dlq()
            return [entry["job"]["id"] for entry in dlq]

        dead = await asyncio.wait_for(settled(), 60)
        yield {"emails": emails, "dead": dead, "a": a}
    finally:
        release.set()
        for worker in workers:
            await worker.close()
        for queue in (emails, reports, thumbs):
            await queue.close()


async def shoot(base: str, out: Path, dead: list[str], emails: Queue) -> list[Path]:
    from playwright.async_api import async_playwright

    shots: list[Path] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        page = await browser.new_page(viewport={"width": 1360, "height": 900})

        async def take(name: str, hash_: str, ready: str, full: bool = True) -> None:
            if not page.url.endswith(f"#/{hash_}"):
                await page.goto(f"{base}/ui/#/{hash_}")
            await page.locator(ready).first.wait_for(timeout=20_000)
            await page.wait_for_timeout(600)
            path = out / f"dashboard-{name}.png"
            await page.screenshot(path=str(path), full_page=full)
            shots.append(path)

        await page.goto(f"{base}/ui/")
        path = out / "dashboard-login.png"
        await page.get_by_label("Token").wait_for()
        await page.screenshot(path=str(path))
        shots.append(path)
        await page.get_by_label("Token").fill(TOKEN)
        await page.get_by_role("button", name="Sign in").click()
        await page.locator("#stream-status[data-state='live']").wait_for(timeout=20_000)

        # A redrive with its reason, through the page (it goes to the audit trail).
        await page.goto(f"{base}/ui/#/dlq?queue=emails")
        await page.locator(f"input[data-job='{dead[0]}']").check()
        await page.get_by_label("Reason for the redrive").fill("bounce list cleaned, OPS-412")
        await page.get_by_role("button", name="Redrive selected").click()
        await page.get_by_test_id("audit-table").wait_for(timeout=20_000)

        # Live traffic while the Overview is open: its sparklines move with the events.
        await page.goto(f"{base}/ui/#/overview")
        for i in range(120):
            await emails.add("digest", {"to": f"reader{i}@example.com"})
            await asyncio.sleep(0.05)
        await take("overview", "overview", "[data-testid=queue-table]")
        await take("queue", "queue/emails?state=failed", "[data-testid=job-table]")
        await take("job", f"job/{dead[1]}", "[data-testid=failed-reason]")
        reports_active = await page.evaluate(
            "fetch('/queues/reports/jobs/list?state=active', {headers: {authorization: "
            f"'Bearer {TOKEN}'}}}}).then(r => r.json()).then(a => a.jobs[0].id)"
        )
        await take("job-active", f"job/{reports_active}", "[data-testid=lease]")
        await take("dlq", "dlq?queue=emails", "[data-testid=dlq-table]")
        await take("cron", "cron", "[data-testid=crons] > *")
        await take("limits", "limits", "[data-testid=limits] table")
        await take("webhooks", "webhooks", "[data-testid=webhooks] table")
        await page.set_viewport_size({"width": 390, "height": 844})
        await take("phone", "overview", "[data-testid=queue-table]", full=False)
        await browser.close()
    return shots


async def add_webhook(http: int) -> None:
    import httpx

    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{http}", headers={"authorization": f"Bearer {TOKEN}"}
    ) as client:
        await client.post(
            "/webhooks",
            json={"url": "https://hooks.example.com/pgqueue", "events": ["job.failed"],
                  "queue": "emails"},
        )  # fmt: skip


async def main_async(out: Path, dsn: str | None) -> None:
    logs = Path(tempfile.mkdtemp(prefix="pgqueue-shots-logs-"))
    with database(dsn) as url, broker(url, "broker-1", logs) as (tcp_a, http_a):
        with broker(url, "broker-2", logs) as (tcp_b, _):
            await add_webhook(http_a)
            async with seeded(tcp_a, tcp_b) as data:
                shots = await shoot(f"http://127.0.0.1:{http_a}", out, data["dead"], data["emails"])
    for path in shots:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--dsn", default=None, help="PostgreSQL (default: an embedded one)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(main_async(args.out.resolve(), args.dsn))


if __name__ == "__main__":
    main()
