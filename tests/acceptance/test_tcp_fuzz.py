"""A hypothesis fuzzer of the bunqueue TCP protocol, against a real broker process.

Each example opens a hostile connection and writes a stream built from pieces:
well-formed frames around fuzzed command maps (every MessagePack type in every
field, nested, extension types, non-string keys, deep nesting), frames of
random bytes, frames whose length prefix lies (longer than the body, past the
frame limit, cut short), all pipelined with a ``reqId`` each and sent in random
chunks.  The stream is replayed through our own :class:`FrameReader` to know
what the broker must answer.  Properties, checked after every example:

- every complete frame gets exactly one well-formed answer (``{ok: bool, ...}``,
  an error with a text), echoing its ``reqId``; a frame past the limit gets
  ``Frame too large`` and a clean close; a dangling partial frame a clean close
  when the client closes; otherwise the connection still answers a Ping;
- the broker process is alive and a well-behaved connection is served (it
  pushes a job per example);
- at the end, every job the well-behaved connection pushed is there, as pushed.

``PGQUEUE_FUZZ_EXAMPLES`` sets the number of examples (default 150, the CI
budget); ``PGQUEUE_FUZZ_EXAMPLES=5000`` is a long local run.
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgqueue.errors import FrameTooLarge, ProtocolError
from pgqueue.protocol import FrameReader, encode_frame, pack, request_id_of_undecodable, unpack
from pgqueue.server.commands import COMMANDS
from tests.acceptance.conftest import BrokerFactory, BrokerProcess

EXAMPLES = int(os.environ.get("PGQUEUE_FUZZ_EXAMPLES", "150"))
MAX_FRAME = 65_536
ANSWER_TIMEOUT = 15.0

# Commands that answer later than at once (long polls, waits) or send unasked frames
# (subscriptions) are left out: the fuzzer counts one prompt answer per frame.
WAITING = {"SubscribeEvents", "WaitJob", "UnsubscribeEvents"}
COMMAND_NAMES = sorted(set(COMMANDS) - WAITING)
FIELDS = [
    "queue", "id", "jobId", "name", "data", "opts", "jobs", "ids", "items", "count",
    "owner", "lockTtl", "token", "tokens", "priority", "delay", "attempts", "backoff",
    "state", "states", "limit", "offset", "page", "force", "grace", "reason", "result",
    "error", "progress", "message", "schedule", "repeatEvery", "url", "events", "max",
    "duration", "group", "groupId", "reqTimeout", "protocolVersion", "customId", "ttl",
]  # fmt: skip

EXT = st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=17))
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | st.binary(max_size=40)
    | EXT
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=6)
        | st.dictionaries(st.text(max_size=12), inner, max_size=6)
        | st.dictionaries(
            st.integers(-(2**63), 2**63 - 1) | st.binary(max_size=4), inner, min_size=1, max_size=3
        )
    ),
    max_leaves=25,
)


@dataclass(frozen=True)
class Piece:
    """Bytes of the hostile stream; ``req_id`` when it is a framed command map."""

    data: bytes
    req_id: str | None = None
    whole: bool = True  # a frame exactly, so that the next piece starts a frame


@st.composite
def command_frame(draw: st.DrawFn) -> Piece:
    req_id = uuid.uuid4().hex
    message: dict[Any, Any] = {"cmd": draw(st.sampled_from(COMMAND_NAMES) | VALUES)}
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=6, unique=True)):
        message[field] = draw(VALUES)
    message.update(draw(st.dictionaries(st.text(max_size=8), VALUES, max_size=2)))
    message.pop("timeout", None)  # a long poll would answer late (see WAITING)
    if draw(st.integers(0, 9)):
        message["reqId"] = req_id
    else:  # reqId of any type: answered, and a non-string one is not echoed
        message["reqId"] = value = draw(VALUES)
        req_id = f"{value}" if isinstance(value, str) else None
    body = msgpack.packb(message, use_bin_type=True)
    try:
        unpack(body)
    except ProtocolError:  # not decodable (a non-string key, say): its reqId if readable
        req_id = request_id_of_undecodable(body)
    return Piece(encode_frame(body), req_id)


def deep(depth: int) -> bytes:
    """A map whose one field nests ``depth`` arrays (built as bytes: no recursion)."""
    return b"\x82\xa3cmd\xa4Ping\xa3pad" + b"\x91" * depth + b"\xc0"


PIECES = st.one_of(
    command_frame(),
    st.binary(max_size=64).map(lambda body: Piece(encode_frame(body))),  # invalid bytes
    st.integers(0, 20_000).map(lambda depth: Piece(encode_frame(deep(depth)))),
    st.builds(  # a length prefix that lies: longer than the body, or past the limit
        lambda size, body: Piece(struct.pack(">I", size) + body, whole=size == len(body)),
        st.sampled_from([0, 1, 7, 100, MAX_FRAME, MAX_FRAME + 1, 2**31, 2**32 - 1])
        | st.integers(0, 2**32 - 1),
        st.binary(max_size=32),
    ),
    st.binary(min_size=1, max_size=3).map(lambda b: Piece(b, whole=False)),  # a short header
)


@dataclass
class Expected:
    bodies: int = 0
    too_large: bool = False
    partial: bool = False


def replay(stream: bytes) -> Expected:
    """What the broker's reader makes of ``stream``: complete frames, then the rest."""
    reader = FrameReader(MAX_FRAME)
    try:
        bodies = reader.feed(stream)
    except FrameTooLarge:
        return Expected(too_large=True)
    return Expected(len(bodies), partial=reader.has_partial)


class Wire:
    """A blocking client: send bytes, read whole answer frames."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT)
        self.frames = FrameReader(2**32 - 1)
        self.ready: list[bytes] = []
        self.ids = itertools.count()

    def answers(self) -> Iterator[dict[str, Any] | None]:
        """Each answer frame as it comes, None once the broker closed."""
        while True:
            while self.ready:
                yield unpack(self.ready.pop(0))
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                yield None
                return
            self.ready.extend(self.frames.feed(data))

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        req_id = f"w{next(self.ids)}"
        self.sock.sendall(encode_frame(pack({**message, "reqId": req_id})))
        for answer in self.answers():
            assert answer is not None, "the well-behaved connection was closed"
            if answer.get("reqId") == req_id:
                return answer
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.sock.close()


def well_formed(answer: dict[str, Any]) -> None:
    assert isinstance(answer.get("ok"), bool), answer
    if answer["ok"] is False:
        assert isinstance(answer.get("error"), str) and answer["error"], answer


def hostile_exchange(port: int, pieces: list[Piece], cuts: list[int]) -> None:
    stream = b"".join(p.data for p in pieces)
    expected = replay(stream)
    hostile = Wire(port)
    try:
        bounds = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
        for start, end in itertools.pairwise(bounds):
            try:
                hostile.sock.sendall(stream[start:end])
            except (BrokenPipeError, ConnectionResetError):
                assert expected.too_large, "the broker closed a connection that broke no limit"
                break
        answers = hostile.answers()
        if expected.too_large:
            seen = list(answers)
            assert seen[-1] is None, "not closed after a frame past the limit"
            for answer in seen[:-1]:
                assert answer is not None
                well_formed(answer)
            assert any("Frame too large" in str(a and a.get("error")) for a in seen), seen
            return
        wanted = {p.req_id for p in pieces if p.req_id is not None}
        echoed: list[str] = []
        for _ in range(expected.bodies):
            answer = next(answers)
            assert answer is not None, "closed before answering every complete frame"
            well_formed(answer)
            if isinstance(answer.get("reqId"), str):
                echoed.append(answer["reqId"])
        if expected.partial:
            hostile.sock.shutdown(socket.SHUT_WR)
            assert next(answers) is None, "an unasked frame after the answers"
            return
        assert len(echoed) == len(set(echoed)), "a reqId answered twice"
        assert set(echoed) <= wanted, "an answer to a request nobody sent"
        if all(p.whole for p in pieces):
            assert set(echoed) == wanted, "a pipelined request was not answered"
        probe = encode_frame(pack({"cmd": "Ping", "reqId": "probe"}))
        hostile.sock.sendall(probe)
        answer = next(answers)
        assert answer is not None and answer.get("reqId") == "probe", answer
    finally:
        hostile.close()


@pytest.fixture
def fuzzed_broker(brokers: BrokerFactory) -> BrokerProcess:
    return brokers.start(
        "fuzz",
        "--max-frame-bytes",
        str(MAX_FRAME),
        "--max-inflight",
        "8",
        "--idle-partial-frame-ms",
        "30000",
        http=False,
    )


@pytest.mark.timeout(max(120, EXAMPLES))
def test_the_broker_survives_fuzzed_frames_and_keeps_every_admitted_job(
    fuzzed_broker: BrokerProcess,
) -> None:
    port = fuzzed_broker.tcp_port
    queue = f"well-behaved-{uuid.uuid4().hex}"  # no fuzzed name can be it
    good = Wire(port)
    pushed: dict[str, int] = {}
    started = time.monotonic()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(pieces=st.lists(PIECES, min_size=1, max_size=8), cuts=st.lists(st.integers(0)))
    def example(pieces: list[Piece], cuts: list[int]) -> None:
        hostile_exchange(port, pieces, cuts)
        assert fuzzed_broker.process.poll() is None, "the broker died"
        n = len(pushed)
        answer = good.call({"cmd": "PUSH", "queue": queue, "name": "n", "data": {"n": n}})
        assert answer["ok"] is True, answer
        pushed[answer["id"]] = n

    try:
        example()
        for job_id, n in pushed.items():
            job = good.call({"cmd": "GetJob", "id": job_id})["job"]
            assert job is not None, f"admitted job {job_id} is gone"
            assert job["data"] == {"n": n}
        counts = good.call({"cmd": "Count", "queue": queue})
        assert counts["count"] == len(pushed)
    finally:
        good.close()
    print(f"fuzz: {len(pushed)} examples in {time.monotonic() - started:.1f} s, 0 lost")
