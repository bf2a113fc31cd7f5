"""A broker restarted under its own ``--broker-id`` (real processes).

After ``kill -9`` the old session row stays until it goes stale (30 s by
default).  Its process is provably gone (same host, no such process): the new
one takes the id over at once.  A broker id held by a live process is refused
with a clear message, never a traceback.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

from pgqueue.client.connection import Connection
from tests.acceptance.conftest import ROOT, BrokerFactory, free_port

STALE_S = 30  # session_stale_ms default: what a restart waited for before


async def test_a_broker_killed_with_9_comes_back_under_its_id_at_once(
    brokers: BrokerFactory,
) -> None:
    first = brokers.start("phoenix", http=False)
    await asyncio.to_thread(first.kill)
    loop = asyncio.get_running_loop()
    began = loop.time()
    second = await asyncio.to_thread(brokers.start, "phoenix", http=False)
    took = loop.time() - began
    assert took < STALE_S / 3, f"the restart took {took:.1f} s"
    assert "Traceback" not in second.log()
    assert "took over" in second.log()
    conn = await Connection.open("127.0.0.1", second.tcp_port)
    try:
        pushed = await conn.call("PUSH", {"queue": "back", "name": "n", "data": 1})
        pulled = await conn.call("PULL", {"queue": "back", "owner": "w"})
        assert pulled["job"]["id"] == pushed["id"]
        await conn.call("ACK", {"id": pushed["id"], "token": pulled["token"]})
    finally:
        await conn.close()


def test_a_broker_id_held_by_a_live_process_is_refused_with_a_clear_message(
    brokers: BrokerFactory,
) -> None:
    brokers.start("twin", "--session-heartbeat-ms", "500", http=False)
    command = [
        sys.executable,
        "-m",
        "pgqueue",
        "serve",
        "--dsn",
        brokers.dsn,
        "--namespace",
        brokers.namespace,
        "--broker-id",
        "twin",
        "--host",
        "127.0.0.1",
        "--tcp-port",
        str(free_port()),
        "--no-http",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output
    assert 'broker id "twin" is already active' in output
    assert "serving namespace" not in output
