"""Tokens change without a restart: ``pgqueue token add`` and SIGHUP (docs/security.md).

A revoked token is refused on new connections and requests; the TCP
connections, WebSockets and event streams opened with it are closed at the
reload (their pulled jobs go back to waiting, as on any close).  A token made
read-only keeps its connections, whose writes are refused from then on.  A file
that does not parse changes nothing.  No secret and no digest is ever logged.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from pgqueue.client.connection import Connection
from pgqueue.errors import AuthError
from pgqueue.server.tokens import read_tokens_file
from pgqueue.testing import eventually
from tests.acceptance.conftest import ROOT, BrokerFactory, BrokerProcess
from tests.acceptance.http_support import http_client, sse_messages
from tests.acceptance.security_support import Token, call, unique

WAIT = 15.0


def token_add(path: Path, name: str, *namespaces: str, read_only: bool = False) -> str:
    """``pgqueue token add``: the secret it prints."""
    args = [a for ns in namespaces for a in ("--namespace", ns)]
    done = subprocess.run(
        [sys.executable, "-m", "pgqueue", "token", "add", name, *args, "--file", str(path)]
        + (["--read-only"] if read_only else []),
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return done.stdout.strip()


async def _drain(ws: Any) -> None:
    """Read a WebSocket until it closes (ConnectionClosed)."""
    while True:
        await ws.recv()


def drop_line(path: Path, name: str) -> None:
    lines = path.read_text().splitlines()
    path.write_text("".join(line + "\n" for line in lines if not line.startswith(name + " ")))


async def reload(broker: BrokerProcess, count: int, word: str = "tokens reloaded") -> None:
    broker.process.send_signal(signal.SIGHUP)
    await eventually(lambda: broker.log().count(word) >= count, timeout=WAIT, message=word)


async def test_a_reload_revokes_narrows_and_adds_tokens_and_logs_no_secret(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    a, c = unique("ns-a"), unique("ns-c")
    path = tmp_path / "tokens"
    keep = token_add(path, "keep", a)
    gone = token_add(path, "gone", a)
    down = token_add(path, "down", a)
    assert path.stat().st_mode & 0o077 == 0  # made private
    broker = brokers.start("a", "--tokens-file", str(path), "--log-level", "DEBUG")
    port = broker.tcp_port
    gone_conn = await Connection.open("127.0.0.1", port, token=gone)
    down_conn = await Connection.open("127.0.0.1", port, token=down)
    pushed = await call(gone_conn, "PUSH", queue="q", name="x", data={})
    assert (await call(gone_conn, "PULL", queue="q", timeout=0))["job"]["id"] == pushed["id"]
    ws_url = f"ws://127.0.0.1:{broker.http_port}/ws"
    async with (
        http_client(broker, gone) as gone_http,
        http_client(broker, keep) as keep_http,
        gone_http.stream("GET", "/pgqueue/events/queues/q") as stream,
        connect(ws_url, additional_headers={"authorization": f"Bearer {gone}"}) as gone_ws,
    ):
        assert stream.status_code == 200
        messages = sse_messages(stream)

        drop_line(path, "gone")
        drop_line(path, "down")  # back as read-only, same secret
        path.write_text(path.read_text() + Token("down", down, (a,), True).line() + "\n")
        fresh = token_add(path, "fresh", c)
        await reload(broker, 1)

        # The revoked token: its connection and stream closed, new uses refused.
        await asyncio.wait_for(gone_conn.closed.wait(), WAIT)
        await gone_conn.close()
        async with asyncio.timeout(WAIT):
            async for _ in messages:
                pass  # the stream ends
        with pytest.raises(ConnectionClosed):  # the WebSocket is closed
            await asyncio.wait_for(_drain(gone_ws), WAIT)
        with pytest.raises(AuthError, match="Invalid token"):
            await Connection.open("127.0.0.1", port, token=gone)
        assert (await gone_http.get("/queues")).status_code == 401

        # Its pulled job went back to waiting, as on any close.
        async def released() -> bool:
            counts = (await keep_http.get("/queues/q/counts")).json()["counts"]
            return bool((counts["waiting"], counts["active"]) == (1, 0))

        await eventually(released, timeout=WAIT, message="the pulled job back to waiting")

        # The narrowed token: connection kept, writes refused, reads served.
        refused = await call(down_conn, "PUSH", queue="q", name="y", data={})
        assert refused["error"] == "Read-only token: PUSH changes data and is refused"
        assert (await call(down_conn, "GetJob", id=pushed["id"]))["job"]["id"] == pushed["id"]

        # The new token, in a namespace started at the reload.
        fresh_conn = await Connection.open("127.0.0.1", port, token=fresh)
        assert (await call(fresh_conn, "PUSH", queue="q", name="z", data={}))["ok"] is True
        assert (await call(fresh_conn, "GetJobCounts", queue="q"))["counts"]["waiting"] == 1
        await fresh_conn.close()

        # A broken file changes nothing.
        good = path.read_text()
        path.write_text(good + "oops this is no entry\n")
        await reload(broker, 1, "tokens not reloaded")
        assert (await keep_http.get("/queues")).status_code == 200
        path.write_text(good)

    await down_conn.close()
    log = broker.log()
    assert "tokens reloaded: 3 tokens (1 added, 1 removed)" in log
    for secret in (keep, gone, down, fresh):
        assert secret not in log
    for entry in read_tokens_file(str(path)):
        assert entry.digest[7:] not in log


async def test_a_broker_with_a_tokens_file_asks_for_a_token_even_when_it_is_empty(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    path = tmp_path / "tokens"
    path.write_text("# nobody yet\n")
    broker = brokers.start("a", "--tokens-file", str(path))
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{broker.http_port}") as http:
        assert (await http.get("/queues")).status_code == 401
        assert (await http.get("/readyz")).json()["checks"]["auth"]["required"] is True


async def test_tokens_of_the_database_table_are_added_and_revoked_on_sighup(
    brokers: BrokerFactory, db_dsn: str
) -> None:
    import psycopg

    ns = unique("ns-db")
    broker = brokers.start("a", "--tokens-from-db")
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "pgqueue", "token", "add", "db-token", "--namespace", ns,
         "--dsn", db_dsn],
        capture_output=True, text=True, cwd=ROOT, check=True,
    )  # fmt: skip
    secret = done.stdout.strip()
    with pytest.raises(AuthError, match="Invalid token"):  # not loaded yet
        await Connection.open("127.0.0.1", broker.tcp_port, token=secret)
    await reload(broker, 1)
    conn = await Connection.open("127.0.0.1", broker.tcp_port, token=secret)
    assert (await call(conn, "Auth", token=secret))["namespace"] == ns
    assert (await call(conn, "PUSH", queue="q", name="x", data={}))["ok"] is True
    with psycopg.connect(db_dsn, autocommit=True) as pg:
        [(digest,)] = pg.execute("SELECT digest FROM pgqueue_tokens").fetchall()
        pg.execute("DELETE FROM pgqueue_tokens WHERE name = 'db-token'")
    await reload(broker, 2)
    await asyncio.wait_for(conn.closed.wait(), WAIT)
    await conn.close()
    with pytest.raises(AuthError, match="Invalid token"):
        await Connection.open("127.0.0.1", broker.tcp_port, token=secret)
    assert secret not in broker.log() and digest[7:] not in broker.log()
