from __future__ import annotations

import pytest

from pgqueue.errors import ProtocolError
from pgqueue.protocol import command_name, pack, request_id, unpack


def test_the_command_name_is_read_from_cmd() -> None:
    assert command_name({"cmd": "PUSH", "reqId": "1"}) == "PUSH"


@pytest.mark.parametrize("msg", [{}, {"cmd": ""}, {"cmd": 5}, {"cmd": ["PUSH"]}, {"cmd": None}])
def test_a_missing_or_non_string_cmd_is_invalid_command(msg: dict[str, object]) -> None:
    with pytest.raises(ProtocolError) as caught:
        command_name(msg)
    assert caught.value.message == "Invalid command"


def test_a_string_req_id_is_echoed() -> None:
    assert request_id({"cmd": "Ping", "reqId": "42"}) == "42"
    assert request_id({"reqId": ""}) == ""


@pytest.mark.parametrize("req_id", [42, 1.5, None, ["1"], {"id": "1"}, True])
def test_a_non_string_req_id_is_not_echoed(req_id: object) -> None:
    assert request_id({"cmd": "Ping", "reqId": req_id}) is None


def test_an_undefined_req_id_reads_as_absent() -> None:
    msg = unpack(b"\x82\xa3cmd\xa4Ping\xa5reqId\xd4\x00\x00")
    assert request_id(msg) is None
    assert command_name(msg) == "Ping"


def test_the_req_id_survives_when_cmd_is_missing() -> None:
    msg = unpack(pack({"reqId": "7"}))
    assert request_id(msg) == "7"
    with pytest.raises(ProtocolError, match=r"^Invalid command$"):
        command_name(msg)
