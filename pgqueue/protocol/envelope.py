"""The envelope of a decoded command: its name and its correlation id.

A request is ``{cmd, reqId?, ...fields}``. The server echoes ``reqId`` in the reply so
that a client with many commands in flight can match answers, which may come back out
of order. These two readers apply bunqueue's rules; the fields themselves are read
with :class:`pgqueue.protocol.fields.Fields`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pgqueue.errors import ProtocolError
from pgqueue.protocol.codec import INVALID_COMMAND

__all__ = ["command_name", "request_id"]


def request_id(msg: Mapping[str, Any]) -> str | None:
    """The ``reqId`` to echo, or None.

    Only a string is echoed, as bunqueue does: a number or map in ``reqId`` is treated
    as no id at all rather than as an error, so that the reply to a malformed command
    can still be sent.
    """
    value = msg.get("reqId")
    return value if isinstance(value, str) else None


def command_name(msg: Mapping[str, Any]) -> str:
    """The ``cmd`` of a command map.

    A missing, empty or non-string ``cmd`` is ``ProtocolError("Invalid command")``;
    bunqueue replies so (with the reqId) and keeps the connection open.
    """
    value = msg.get("cmd")
    if not isinstance(value, str) or not value:
        raise ProtocolError(INVALID_COMMAND)
    return value
