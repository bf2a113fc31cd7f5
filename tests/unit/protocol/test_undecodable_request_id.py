"""A refused frame's answer carries its reqId when the top-level map can be walked."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from pgqueue.errors import ProtocolError
from pgqueue.protocol import pack, request_id_of_undecodable, unpack


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("levels", [129, 500, 1000])
def test_the_req_id_of_a_too_deep_request_is_found_wherever_it_sits(levels: int) -> None:
    for message in (
        {"cmd": "PUSH", "data": deep(levels), "reqId": "r1"},
        {"reqId": "r1", "cmd": "PUSH", "data": deep(levels)},
    ):
        body = msgpack.packb(message)
        with pytest.raises(ProtocolError, match="nested deeper"):
            unpack(body)
        assert request_id_of_undecodable(body) == "r1"


@pytest.mark.parametrize(
    "body",
    [b"", b"\xc1", b"\x91\x01", pack({"cmd": "Ping"}), pack({"reqId": 7}), b"\x81\xa5reqId"],
)
def test_no_req_id_when_there_is_none_to_read(body: bytes) -> None:
    assert request_id_of_undecodable(body) is None
