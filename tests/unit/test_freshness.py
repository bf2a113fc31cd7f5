"""Request freshness: the deadline a request gets, and seeing that its peer closed."""

from __future__ import annotations

import socket

import pytest

from pgqueue.server.freshness import peer_closed, request_deadline_ms


def test_a_request_gets_the_smaller_of_its_own_timeout_and_the_brokers_max_age() -> None:
    assert request_deadline_ms({"cmd": "PUSH"}, 30_000) == 30_000
    assert request_deadline_ms({"cmd": "PUSH", "reqTimeout": 500}, 30_000) == 500
    assert request_deadline_ms({"cmd": "PUSH", "reqTimeout": 90_000}, 30_000) == 30_000
    assert request_deadline_ms({"cmd": "PUSH", "reqTimeout": 500}, 0) == 500
    assert request_deadline_ms({"cmd": "PUSH"}, 0) is None


@pytest.mark.parametrize("bad", [0, -1, "500", True, [1]])
def test_a_bad_req_timeout_is_refused_by_name(bad: object) -> None:
    with pytest.raises(ValueError, match="reqTimeout must be a positive number"):
        request_deadline_ms({"cmd": "PUSH", "reqTimeout": bad}, 30_000)


def test_a_closed_peer_is_seen_without_consuming_what_it_sent() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        assert not peer_closed(ours), "an open, silent peer"
        theirs.sendall(b"x")
        assert not peer_closed(ours), "bytes still waiting: alive when it sent them"
        assert ours.recv(1) == b"x", "the peek consumed nothing"
        theirs.close()
        assert peer_closed(ours)


def test_the_check_borrows_the_socket_and_leaves_it_open() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        for _ in range(3):
            assert not peer_closed(ours)
        ours.sendall(b"still open")
        assert theirs.recv(10) == b"still open"
