"""What the dashboard's browser tests share: Debian's Chromium driven by
Playwright (never ``playwright install``: the browser is the system's), the
sign-in, and a TCP proxy that fails over from one broker to the next.

Without Chromium (or the ``playwright`` package) the tests skip with the reason,
except in CI (``$CI`` set), where they must run: a missing browser fails them.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("PGQUEUE_CHROMIUM", "/usr/bin/chromium"))
TOKEN = "s3cret"


def require_browser() -> None:
    """Skip (outside CI) or fail (in CI) when the browser cannot run."""
    missing = []
    if importlib.util.find_spec("playwright") is None:
        missing.append("the playwright package (pip install -e '.[dev]')")
    if not CHROMIUM.exists():
        missing.append(f"Chromium at {CHROMIUM} (apt-get install chromium)")
    if not missing:
        return
    reason = "browser tests need " + " and ".join(missing)
    if os.environ.get("CI"):
        pytest.fail(reason + " — in CI they must run")
    pytest.skip(reason)


@contextlib.asynccontextmanager
async def browser_page(
    viewport: tuple[int, int] = (1280, 900),
) -> AsyncIterator[Any]:
    """A fresh page of a headless Chromium; page errors fail the test at the end."""
    from playwright.async_api import async_playwright

    errors: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            context = await browser.new_context(
                viewport={"width": viewport[0], "height": viewport[1]}
            )
            page = await context.new_page()
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            yield page
        finally:
            await browser.close()
    assert errors == [], f"JavaScript errors in the page: {errors}"


async def sign_in(page: Any, base: str, token: str = TOKEN) -> None:
    """Open the dashboard at ``base`` and sign in through its form."""
    await page.goto(f"{base}/ui/")
    await page.get_by_label("Token").fill(token)
    await page.get_by_role("button", name="Sign in").click()
    await page.locator("#stream-status[data-state='live']").wait_for(timeout=20_000)


class FailoverProxy:
    """``127.0.0.1:<port>`` forwarded to the first upstream that accepts the connection.

    A load balancer in miniature: when the broker behind a connection dies, the
    connection ends, and the next one goes to the next live upstream."""

    def __init__(self, upstreams: Sequence[tuple[str, int]]) -> None:
        self.upstreams = list(upstreams)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.served_by: list[int] = []

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for host, port in self.upstreams:
            try:
                up_reader, up_writer = await asyncio.open_connection(host, port)
            except OSError:
                continue
            self.served_by.append(port)
            break
        else:
            writer.close()
            return
        links = [
            asyncio.create_task(self._pipe(reader, up_writer)),
            asyncio.create_task(self._pipe(up_reader, writer)),
        ]
        self._tasks.update(links)
        await asyncio.wait(links, return_when=asyncio.FIRST_COMPLETED)
        for task in links:
            task.cancel()
            self._tasks.discard(task)
        for w in (writer, up_writer):
            w.close()

    @staticmethod
    async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
