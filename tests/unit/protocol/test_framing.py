from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pgqueue.errors import FrameTooLarge
from pgqueue.protocol.framing import MAX_FRAME_SIZE, FrameReader, encode_frame

BODIES = [b"\x81\xa3cmd\xa4Ping", b"", b"x" * 300, b"\x80"]
STREAM = b"".join(encode_frame(body) for body in BODIES)


def header(size: int) -> bytes:
    return struct.pack(">I", size)


def test_encode_frame_prefixes_the_big_endian_length() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(b"y" * 258)[:4] == b"\x00\x00\x01\x02"


def test_encode_frame_refuses_a_body_over_the_limit() -> None:
    assert encode_frame(b"12345", max_frame_size=5) == b"\x00\x00\x00\x0512345"
    with pytest.raises(FrameTooLarge, match=r"^Frame too large: 6 bytes exceeds maximum 5$"):
        encode_frame(b"123456", max_frame_size=5)


def test_many_frames_in_one_read_come_out_in_order() -> None:
    reader = FrameReader()
    assert reader.feed(STREAM) == BODIES
    assert not reader.has_partial


def test_every_split_point_gives_the_same_frames() -> None:
    for cut in range(len(STREAM) + 1):
        reader = FrameReader()
        frames = reader.feed(STREAM[:cut]) + reader.feed(STREAM[cut:])
        assert frames == BODIES, cut
        assert not reader.has_partial


def test_a_stream_fed_one_byte_at_a_time_gives_the_same_frames() -> None:
    reader = FrameReader()
    frames = [frame for i in range(len(STREAM)) for frame in reader.feed(STREAM[i : i + 1])]
    assert frames == BODIES


@given(st.lists(st.binary(max_size=50), max_size=8), st.data())
def test_any_chunking_of_any_frames_round_trips(bodies: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(encode_frame(body) for body in bodies)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    reader = FrameReader()
    frames: list[bytes] = []
    for start, stop in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        frames += reader.feed(stream[start:stop])
    assert frames == bodies
    assert not reader.has_partial


def test_a_zero_length_frame_is_an_empty_body() -> None:
    reader = FrameReader()
    assert reader.feed(header(0)) == [b""]
    assert not reader.has_partial


def test_has_partial_tracks_an_incomplete_header_or_body() -> None:
    reader = FrameReader()
    assert not reader.has_partial
    reader.feed(b"\x00")
    assert reader.has_partial
    reader.feed(b"\x00\x00\x03")  # header complete, body missing
    assert reader.has_partial
    reader.feed(b"ab")
    assert reader.has_partial
    assert reader.feed(b"c") == [b"abc"]
    assert not reader.has_partial


def test_has_partial_is_true_when_a_read_ends_inside_the_next_frame() -> None:
    reader = FrameReader()
    assert reader.feed(encode_frame(b"done") + b"\x00\x00") == [b"done"]
    assert reader.has_partial


def test_an_oversized_header_is_refused_before_its_body_arrives() -> None:
    reader = FrameReader(max_frame_size=10)
    with pytest.raises(FrameTooLarge) as caught:
        reader.feed(header(11))
    assert caught.value.message == "Frame too large: 11 bytes exceeds maximum 10"
    assert not reader.has_partial


def test_the_default_limit_uses_bunqueues_exact_text() -> None:
    reader = FrameReader()
    assert reader.max_frame_size == MAX_FRAME_SIZE == 67108864
    with pytest.raises(FrameTooLarge) as caught:
        reader.feed(header(MAX_FRAME_SIZE + 1))
    assert caught.value.message == "Frame too large: 67108865 bytes exceeds maximum 67108864"


def test_a_frame_of_exactly_the_limit_is_accepted() -> None:
    reader = FrameReader(max_frame_size=10)
    assert reader.feed(encode_frame(b"0123456789")) == [b"0123456789"]


def test_an_oversized_header_split_across_reads_is_refused_when_complete() -> None:
    reader = FrameReader(max_frame_size=10)
    assert reader.feed(b"\xff\xff") == []
    with pytest.raises(FrameTooLarge, match="4294967295 bytes exceeds maximum 10"):
        reader.feed(b"\xff\xff")


def test_an_oversized_header_after_good_frames_in_the_same_read_is_refused() -> None:
    reader = FrameReader(max_frame_size=10)
    with pytest.raises(FrameTooLarge):
        reader.feed(encode_frame(b"ok") + header(11))


def test_the_reader_stays_failed_after_an_oversized_frame() -> None:
    reader = FrameReader(max_frame_size=10)
    with pytest.raises(FrameTooLarge):
        reader.feed(header(11))
    with pytest.raises(FrameTooLarge, match="11 bytes exceeds maximum 10"):
        reader.feed(encode_frame(b"ok"))


def test_a_negative_limit_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="max_frame_size"):
        FrameReader(max_frame_size=-1)


def test_a_pending_frame_does_not_see_later_changes_to_a_mutable_buffer() -> None:
    reader = FrameReader()
    buffer = bytearray(header(4) + b"ab")
    reader.feed(buffer)  # type: ignore[arg-type]  # asyncio.BufferedProtocol style
    buffer[4:6] = b"XX"
    assert reader.feed(b"cd") == [b"abcd"]


def test_one_big_frame_in_many_small_reads_is_reassembled_in_linear_time() -> None:
    # A reader that re-copies its buffer on every read (as bunqueue's does) would copy
    # ~2 TiB here and run into the test timeout; ours copies the 32 MiB once.
    body = bytes(range(256)) * (32 * 1024 * 1024 // 256)
    stream = encode_frame(body)
    reader = FrameReader()
    frames: list[bytes] = []
    for start in range(0, len(stream), 256):
        frames += reader.feed(stream[start : start + 256])
    assert len(frames) == 1
    assert frames[0] == body
