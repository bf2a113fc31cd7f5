"""The TCP listener's limits, each on a real broker process over real sockets.

Every limit ends (or refuses) only the connection that passes it, with a clear
error frame or a clean close, a log line and a metric; a well-behaved
connection to the same broker is served throughout.
"""

from __future__ import annotations

import asyncio
import contextlib

import httpx

from pgqueue.client.connection import Connection
from pgqueue.protocol import encode_frame, pack
from tests.acceptance.conftest import BrokerFactory, BrokerProcess


async def connect(broker: BrokerProcess) -> Connection:
    return await Connection.open("127.0.0.1", broker.tcp_port)


async def read_until_closed(reader: asyncio.StreamReader, timeout: float) -> bytes | None:
    """Everything the broker sends until it closes (or resets) the connection;
    None if it is still open after ``timeout`` seconds."""
    received = b""
    try:
        async with asyncio.timeout(timeout):
            while chunk := await reader.read(65536):
                received += chunk
    except ConnectionError:
        pass
    except TimeoutError:
        return None
    return received


def limit_metric(broker: BrokerProcess, limit: str) -> float:
    text = httpx.get(f"http://127.0.0.1:{broker.http_port}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith(f'pgqueue_tcp_limit_hits_total{{limit="{limit}"}}'):
            return float(line.split()[-1])
    return 0.0


async def test_a_frame_sent_one_byte_at_a_time_is_cut_off_after_the_partial_frame_limit(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("loris", "--idle-partial-frame-ms", "1000")
    other = await connect(broker)
    reader, writer = await asyncio.open_connection("127.0.0.1", broker.tcp_port)
    frame = encode_frame(pack({"cmd": "Ping", "reqId": "r", "pad": "x" * 200}))
    loop = asyncio.get_running_loop()
    started = loop.time()

    async def drip() -> None:
        with contextlib.suppress(ConnectionError):
            for byte in frame:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.25)  # the pace of the attack, not a wait for anything

    dripping = asyncio.create_task(drip())
    try:
        received = await read_until_closed(reader, timeout=10)
        assert received is not None, "a frame trickling in for 10 s was held open"
        assert received == b"", "the drip never completed a frame"
        assert loop.time() - started < 10
        assert (await other.call("Ping"))["data"]["pong"] is True
    finally:
        dripping.cancel()
        writer.close()
        await other.close()
    assert "partial frame" in broker.log()
    assert limit_metric(broker, "slow_frame") >= 1
