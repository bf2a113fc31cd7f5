"""The TCP listener's limits, each on a real broker process over real sockets.

Every limit ends (or refuses) only the connection that passes it, with a clear
error frame or a clean close, a log line and a metric; a well-behaved
connection to the same broker is served throughout.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct

import httpx

from pgqueue.client.connection import Connection
from pgqueue.errors import ConnectionLost
from pgqueue.protocol import encode_frame, pack, unpack
from pgqueue.testing import eventually
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


async def test_connections_past_the_per_address_limit_are_refused_and_the_rest_served(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("crowded", "--max-connections-per-address", "3")
    held = [await connect(broker) for _ in range(3)]
    reader, writer = await asyncio.open_connection("127.0.0.1", broker.tcp_port)
    try:
        received = await read_until_closed(reader, timeout=10)
        assert received is not None, "the fourth connection was kept open"
        answer = unpack(received[4:])
        assert answer["ok"] is False
        assert "Too many connections from 127.0.0.1" in answer["error"]
        for c in held:
            assert (await c.call("Ping"))["data"]["pong"] is True
        await held.pop().close()

        async def admitted() -> bool:
            with contextlib.suppress(ConnectionLost, OSError):
                again = await connect(broker)
                try:
                    return bool((await again.call("Ping"))["data"]["pong"])
                finally:
                    await again.close()
            return False

        await eventually(admitted, timeout=10, interval=0.1)  # a freed place is given again
    finally:
        writer.close()
        for c in held:
            await c.close()
    assert "refusing a connection from 127.0.0.1" in broker.log()
    assert limit_metric(broker, "connections_per_address") >= 1


async def test_a_client_that_never_reads_its_answers_is_dropped_and_others_go_on(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("deaf", "--max-write-buffer-bytes", "1048576")
    other = await connect(broker)
    job = await other.call("PUSH", {"queue": "deaf", "name": "n", "data": "x" * 500_000})
    deaf = socket.socket()
    deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    deaf.connect(("127.0.0.1", broker.tcp_port))
    request = encode_frame(pack({"cmd": "GetJob", "id": job["id"]}))
    try:
        deaf.sendall(request * 60)  # 30 MB of answers it will never read

        async def dropped() -> bool:
            return limit_metric(broker, "slow_reader") >= 1

        await eventually(dropped, timeout=20, interval=0.2)
        assert (await other.call("Ping"))["data"]["pong"] is True
        assert (await other.call("GetJob", {"id": job["id"]}))["job"]["data"] == "x" * 500_000
    finally:
        deaf.close()
        await other.close()
    assert "does not read its answers" in broker.log()


async def test_an_oversized_frame_and_a_full_inflight_window_are_logged_and_counted(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("counted", "--max-frame-bytes", "4096", "--max-inflight", "2")
    other = await connect(broker)
    reader, writer = await asyncio.open_connection("127.0.0.1", broker.tcp_port)
    writer.write(struct.pack(">I", 5000))
    received = await read_until_closed(reader, timeout=10)
    assert received is not None
    assert "Frame too large: 5000 bytes exceeds maximum 4096" in unpack(received[4:])["error"]
    writer.close()
    polls = [other.call("PULL", {"queue": f"idle-{i}", "timeout": 500}) for i in range(2)]
    answers = await asyncio.gather(*polls, other.call("Ping"))
    assert answers[-1]["data"]["pong"] is True
    await other.close()
    assert limit_metric(broker, "frame_size") == 1
    assert limit_metric(broker, "inflight") >= 1
    assert "requests in flight: reading pauses" in broker.log()
