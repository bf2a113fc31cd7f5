"""Length-prefixed framing of the bunqueue TCP protocol.

Every message in both directions is one frame: a 4-byte unsigned big-endian length,
then that many bytes of MessagePack. A socket read may carry many small frames, or a
piece of one large frame; :class:`FrameReader` turns the stream of reads back into
whole frame bodies.

Two rules come from bunqueue's own parser:

- The declared length is checked as soon as the 4 header bytes are in, before any of
  the body is buffered, so a peer cannot make the server hold 4 GiB by sending a bare
  header. Over the limit is a :class:`~pgqueue.errors.FrameTooLarge` with bunqueue's
  exact text; the stream cannot be resynchronised after it, so the connection ends.
- A zero-length frame is a well-formed frame with an empty body. The reader yields it
  as ``b""``, and decoding it fails like any other undecodable body ("Invalid command
  format", the connection stays open), which is what bunqueue answers too.
"""

from __future__ import annotations

import struct
from typing import Final

from pgqueue.errors import FrameTooLarge

__all__ = ["HEADER_SIZE", "MAX_FRAME_SIZE", "FrameReader", "encode_frame"]

HEADER_SIZE: Final = 4
MAX_FRAME_SIZE: Final = 64 * 1024 * 1024
"""bunqueue's ``MAX_FRAME_SIZE``: 64 MiB, for both directions."""

_HEADER: Final = struct.Struct(">I")


def _too_large(size: int, maximum: int) -> FrameTooLarge:
    return FrameTooLarge(f"Frame too large: {size} bytes exceeds maximum {maximum}")


def encode_frame(body: bytes, *, max_frame_size: int = MAX_FRAME_SIZE) -> bytes:
    """Prefix ``body`` with its length.

    A body over ``max_frame_size`` is refused here rather than sent: the peer would
    drop the connection on it (the Python SDK refuses such frames locally too).
    """
    size = len(body)
    if size > max_frame_size:
        raise _too_large(size, max_frame_size)
    return _HEADER.pack(size) + body


class FrameReader:
    """Reassembles frame bodies from the reads of one connection.

    :meth:`feed` is linear in the bytes fed however they are cut: whole frames are
    sliced straight out of the read that carries them, and the pieces of a frame that
    spans reads are kept as views and joined once, when its last byte arrives.
    """

    __slots__ = ("_error", "_header", "_max_frame_size", "_parts", "_remaining")

    def __init__(self, max_frame_size: int = MAX_FRAME_SIZE) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must be at least 0, got {max_frame_size}")
        self._max_frame_size = max_frame_size
        self._header = b""  # 1-3 bytes of a header cut by a read boundary
        self._parts: list[memoryview] = []  # the body received so far
        self._remaining = -1  # body bytes still to come; -1 while no header is complete
        self._error: str | None = None

    @property
    def max_frame_size(self) -> int:
        return self._max_frame_size

    @property
    def has_partial(self) -> bool:
        """True while part of a frame (header or body) waits for more bytes.

        The server arms its slow-frame (slowloris) timer only while this holds: an
        idle connection between frames is never closed.
        """
        return bool(self._header) or self._remaining >= 0

    def feed(self, data: bytes) -> list[bytes]:
        """Take the next read and return the frame bodies it completes, in order.

        Raises :class:`~pgqueue.errors.FrameTooLarge` when a header declares more
        than ``max_frame_size`` bytes. Frames completed earlier in the same read are
        dropped with it: the connection is ending, as in bunqueue. Every later call
        raises the same error.
        """
        if self._error is not None:
            raise FrameTooLarge(self._error)
        if type(data) is not bytes:
            data = bytes(data)  # a pending frame keeps views of it: it must not change
        frames: list[bytes] = []
        view = memoryview(data)
        end = len(view)
        pos = 0
        if self._header:
            pos = self._complete_header(view)
            if pos < 0:
                return frames
        if self._remaining >= 0:
            pos = self._continue_body(view, pos, frames)
        while end - pos >= HEADER_SIZE:
            (size,) = _HEADER.unpack_from(view, pos)
            self._check(size)
            start = pos + HEADER_SIZE
            if end - start < size:
                self._parts = [view[start:]]
                self._remaining = size - (end - start)
                return frames
            frames.append(view[start : start + size].tobytes())
            pos = start + size
        if pos < end:
            self._header = view[pos:].tobytes()
        return frames

    def _complete_header(self, view: memoryview) -> int:
        """Finish a header cut by the last read; the offset after it, or -1 if short."""
        need = HEADER_SIZE - len(self._header)
        self._header += view[:need].tobytes()
        if len(self._header) < HEADER_SIZE:
            return -1
        (size,) = _HEADER.unpack(self._header)
        self._header = b""
        self._check(size)
        self._parts = []
        self._remaining = size
        return need

    def _continue_body(self, view: memoryview, pos: int, frames: list[bytes]) -> int:
        """Add this read's share of a body in progress; the offset after it."""
        take = min(self._remaining, len(view) - pos)
        if take:
            self._parts.append(view[pos : pos + take])
            self._remaining -= take
        if self._remaining == 0:
            frames.append(b"".join(self._parts))
            self._parts = []
            self._remaining = -1
        return pos + take

    def _check(self, size: int) -> None:
        if size > self._max_frame_size:
            error = _too_large(size, self._max_frame_size)
            self._error = error.message
            self._header = b""
            self._parts = []
            self._remaining = -1
            raise error
