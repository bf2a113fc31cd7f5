"""The bunqueue wire protocol, with no I/O: framing, MessagePack, and command fields.

Shared by the broker and the SDK's TCP transport. A frame is a 4-byte big-endian length
and a MessagePack map (:mod:`~pgqueue.protocol.framing`); :mod:`~pgqueue.protocol.codec`
encodes and decodes the map with bunqueue's traps (wide integers as float64, ext 0 as
``undefined``); :mod:`~pgqueue.protocol.envelope` reads ``cmd`` and ``reqId``;
:mod:`~pgqueue.protocol.fields` reads and checks the rest before the broker acts on it.
"""

from __future__ import annotations

from pgqueue.protocol.codec import (
    DEFAULT_DECODE_LIMITS,
    INVALID_COMMAND,
    INVALID_COMMAND_FORMAT,
    UNDEFINED,
    DecodeLimits,
    Undefined,
    pack,
    request_id_of_undecodable,
    unpack,
)
from pgqueue.protocol.envelope import command_name, request_id
from pgqueue.protocol.fields import JSON_MAX_DEPTH, MAX_SAFE_INTEGER, Fields, json_value_error
from pgqueue.protocol.framing import HEADER_SIZE, MAX_FRAME_SIZE, FrameReader, encode_frame
from pgqueue.vocabulary.names import (
    MAX_NAME_LENGTH,
    job_id_error,
    job_name_error,
    queue_name_error,
)

__all__ = [
    "DEFAULT_DECODE_LIMITS",
    "HEADER_SIZE",
    "INVALID_COMMAND",
    "INVALID_COMMAND_FORMAT",
    "JSON_MAX_DEPTH",
    "MAX_FRAME_SIZE",
    "MAX_NAME_LENGTH",
    "MAX_SAFE_INTEGER",
    "UNDEFINED",
    "DecodeLimits",
    "Fields",
    "FrameReader",
    "Undefined",
    "command_name",
    "encode_frame",
    "job_id_error",
    "job_name_error",
    "json_value_error",
    "pack",
    "queue_name_error",
    "request_id",
    "request_id_of_undecodable",
    "unpack",
]
