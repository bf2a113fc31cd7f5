#!/usr/bin/env python3
"""Logging TCP proxy for the bunqueue wire protocol (a developer tool).

Listens on a local port, forwards every connection to an upstream bunqueue-compatible
server, and decodes the frames in both directions (4-byte big-endian length + one
MessagePack value). Each decoded frame is written as one JSON line::

    {"ts": 1732950000.123456, "time": "2024-11-30T05:40:00.123456Z", "conn": 3,
     "dir": "c2s", "len": 57, "msg": {"cmd": "PUSHB", "reqId": "1", ...}}

``dir`` is ``c2s`` (client to server) or ``s2c``. Connection open/close lines carry
``"event": "open"`` / ``"close"`` instead of ``msg``.

The decoder is written here (not msgpack-python) so that the wire encoding stays
visible in the JSON:

- ext types become ``{"$ext": <type>, "hex": "<data>"}``; ext type 0 (msgpackr's
  JS ``undefined``, bytes ``d4 00 00``) becomes ``{"$undefined": true}``;
- ``bin`` becomes ``{"$bin": "<hex>"}``;
- integers encoded as 64-bit (``0xcf`` uint64 / ``0xd3`` int64, which msgpackr decodes
  as BigInt) become ``{"$u64": n}`` / ``{"$i64": n}``;
- ``float32`` becomes ``{"$f32": x}``; float64 stays a JSON number with a fraction
  (``5.0``), so "an integer sent as a float" is visible;
- non-string map keys are rendered as ``"$key:<json>"``.

Forwarding never waits for decoding: bytes are relayed as they arrive.

Usage::

    python scripts/wire_proxy.py --listen 16789 --upstream 127.0.0.1:6789 \
        --out /tmp/captures/run.jsonl [--max-items 20] [--hex]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import itertools
import json
import signal
import struct
import sys
import time
from collections.abc import Callable
from typing import IO, Any

MAX_FRAME = 64 * 1024 * 1024


class DecodeError(Exception):
    """The bytes are not a valid MessagePack value."""


class _Reader:
    """A minimal MessagePack decoder that keeps wire-level type information."""

    def __init__(self, data: bytes, max_items: int) -> None:
        self.data = data
        self.pos = 0
        self.max_items = max_items

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise DecodeError("truncated value")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def u(self, fmt: str, n: int) -> Any:
        return struct.unpack(fmt, self.take(n))[0]

    def value(self) -> Any:
        b = self.take(1)[0]
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0x80 <= b <= 0x8F:
            return self.mapping(b & 0x0F)
        if 0x90 <= b <= 0x9F:
            return self.sequence(b & 0x0F)
        if 0xA0 <= b <= 0xBF:
            return self.text(b & 0x1F)
        simple: dict[int, Callable[[], Any]] = {
            0xC0: lambda: None,
            0xC2: lambda: False,
            0xC3: lambda: True,
            0xC4: lambda: self.binary(self.u(">B", 1)),
            0xC5: lambda: self.binary(self.u(">H", 2)),
            0xC6: lambda: self.binary(self.u(">I", 4)),
            0xC7: lambda: self.ext(self.u(">B", 1)),
            0xC8: lambda: self.ext(self.u(">H", 2)),
            0xC9: lambda: self.ext(self.u(">I", 4)),
            0xCA: lambda: {"$f32": self.u(">f", 4)},
            0xCB: lambda: self.u(">d", 8),
            0xCC: lambda: self.u(">B", 1),
            0xCD: lambda: self.u(">H", 2),
            0xCE: lambda: self.u(">I", 4),
            0xCF: lambda: {"$u64": self.u(">Q", 8)},
            0xD0: lambda: self.u(">b", 1),
            0xD1: lambda: self.u(">h", 2),
            0xD2: lambda: self.u(">i", 4),
            0xD3: lambda: {"$i64": self.u(">q", 8)},
            0xD4: lambda: self.ext(1),
            0xD5: lambda: self.ext(2),
            0xD6: lambda: self.ext(4),
            0xD7: lambda: self.ext(8),
            0xD8: lambda: self.ext(16),
            0xD9: lambda: self.text(self.u(">B", 1)),
            0xDA: lambda: self.text(self.u(">H", 2)),
            0xDB: lambda: self.text(self.u(">I", 4)),
            0xDC: lambda: self.sequence(self.u(">H", 2)),
            0xDD: lambda: self.sequence(self.u(">I", 4)),
            0xDE: lambda: self.mapping(self.u(">H", 2)),
            0xDF: lambda: self.mapping(self.u(">I", 4)),
        }
        fn = simple.get(b)
        if fn is None:
            raise DecodeError(f"invalid type byte 0x{b:02x} at offset {self.pos - 1}")
        return fn()

    def text(self, n: int) -> str:
        return self.take(n).decode("utf-8", errors="backslashreplace")

    def binary(self, n: int) -> dict[str, str]:
        return {"$bin": self.take(n).hex()}

    def ext(self, n: int) -> dict[str, Any]:
        code = struct.unpack(">b", self.take(1))[0]
        data = self.take(n)
        if code == 0:
            return {"$undefined": True}
        return {"$ext": code, "hex": data.hex()}

    def sequence(self, n: int) -> list[Any]:
        items = [self.value() for _ in range(n)]
        if self.max_items and n > self.max_items:
            return [*items[: self.max_items], f"... {n - self.max_items} more ({n} items)"]
        return items

    def mapping(self, n: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for _ in range(n):
            key = self.value()
            if not isinstance(key, str):
                key = "$key:" + json.dumps(key, default=str)
            out[key] = self.value()
        return out


def decode(payload: bytes, max_items: int = 0) -> Any:
    """Decode one MessagePack value, keeping wire types visible (see module doc)."""
    reader = _Reader(payload, max_items)
    value = reader.value()
    if reader.pos != len(payload):
        raise DecodeError(f"{len(payload) - reader.pos} trailing bytes")
    return value


class Log:
    """Serialises JSON lines from all connections to one stream."""

    def __init__(self, stream: IO[str], hex_bytes: int) -> None:
        self.stream = stream
        self.hex_bytes = hex_bytes

    def write(self, conn: int, direction: str, **fields: Any) -> None:
        now = time.time()
        stamp = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        line = {"ts": round(now, 6), "time": stamp, "conn": conn, "dir": direction, **fields}
        self.stream.write(json.dumps(line, ensure_ascii=False, default=repr) + "\n")

    def flush(self) -> None:
        self.stream.flush()


class FrameDecoder:
    """Splits one direction of a connection into frames and logs each one."""

    def __init__(self, log: Log, conn: int, direction: str, max_items: int) -> None:
        self.log = log
        self.conn = conn
        self.direction = direction
        self.max_items = max_items
        self.buf = bytearray()
        self.broken = False

    def feed(self, data: bytes) -> None:
        if self.broken:
            return
        self.buf += data
        while len(self.buf) >= 4:
            (length,) = struct.unpack(">I", self.buf[:4])
            if length > MAX_FRAME:
                self.log.write(
                    self.conn,
                    self.direction,
                    error=f"frame length {length} > {MAX_FRAME}; "
                    "no further decoding on this direction",
                )
                self.broken = True
                self.buf.clear()
                return
            if len(self.buf) < 4 + length:
                return
            payload = bytes(self.buf[4 : 4 + length])
            del self.buf[: 4 + length]
            fields: dict[str, Any] = {"len": length}
            try:
                fields["msg"] = decode(payload, self.max_items)
            except DecodeError as exc:
                fields["error"] = f"undecodable frame: {exc}"
            if self.log.hex_bytes:
                fields["hex"] = payload[: self.log.hex_bytes].hex()
            self.log.write(self.conn, self.direction, **fields)

    def close(self) -> None:
        if self.buf and not self.broken:
            self.log.write(
                self.conn,
                self.direction,
                error=f"{len(self.buf)} bytes of a partial frame at close",
            )


class Proxy:
    def __init__(self, upstream: tuple[str, int], log: Log, max_items: int) -> None:
        self.upstream = upstream
        self.log = log
        self.max_items = max_items
        self.ids = itertools.count(1)

    async def pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, dec: FrameDecoder
    ) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                dec.feed(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            dec.close()
            with contextlib.suppress(Exception):
                writer.close()

    async def handle(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        conn = next(self.ids)
        peer = c_writer.get_extra_info("peername")
        try:
            s_reader, s_writer = await asyncio.open_connection(*self.upstream)
        except OSError as exc:
            self.log.write(conn, "-", event="upstream-error", peer=str(peer), error=str(exc))
            c_writer.close()
            return
        self.log.write(conn, "-", event="open", peer=str(peer))
        up = FrameDecoder(self.log, conn, "c2s", self.max_items)
        down = FrameDecoder(self.log, conn, "s2c", self.max_items)
        await asyncio.gather(self.pipe(c_reader, s_writer, up), self.pipe(s_reader, c_writer, down))
        self.log.write(conn, "-", event="close")
        self.log.flush()


def _hostport(text: str, default_host: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return (host or default_host), int(port)


def _open_output(path: str) -> IO[str]:
    if path and path != "-":
        return open(path, "a", encoding="utf-8", buffering=1 << 16)
    return sys.stdout


async def main_async(args: argparse.Namespace) -> None:
    stream = _open_output(args.out)
    log = Log(stream, args.hex)
    proxy = Proxy(_hostport(args.upstream, "127.0.0.1"), log, args.max_items)
    host, port = _hostport(args.listen, "127.0.0.1")
    server = await asyncio.start_server(proxy.handle, host, port)
    print(f"wire_proxy: {host}:{port} -> {args.upstream}", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    async def flusher() -> None:
        while True:
            await asyncio.sleep(0.5)
            log.flush()

    task = asyncio.create_task(flusher())
    async with server:
        await stop.wait()
    task.cancel()
    log.flush()
    if stream is not sys.stdout:
        stream.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--listen", required=True, help="[host:]port to listen on (host 127.0.0.1)")
    p.add_argument("--upstream", required=True, help="[host:]port of the real server")
    p.add_argument("--out", default="-", help="JSON-lines file to append to ('-' = stdout)")
    p.add_argument(
        "--max-items",
        type=int,
        default=0,
        help="show at most N items of each array (0 = all); for bulk traffic",
    )
    p.add_argument(
        "--hex",
        type=int,
        default=0,
        metavar="N",
        help="also log the first N bytes of each frame body as hex",
    )
    asyncio.run(main_async(p.parse_args(argv)))


if __name__ == "__main__":
    main()
