"""One request: its fields, its connection's state, the broker serving it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pgqueue.protocol import Fields

if TYPE_CHECKING:
    from pgqueue.manager.outbox import Subscription
    from pgqueue.runtime import PostgresQueueManager
    from pgqueue.server.access import Credential
    from pgqueue.server.host import BrokerHost

__all__ = ["ClientState", "Request"]


@dataclass(eq=False)
class ClientState:
    """What a broker keeps per client connection (bunqueue §1.3).

    ``pulled`` maps the jobs claimed on this connection to their tokens: they go
    back to waiting when the connection closes (unless the pull said
    ``detach``).  ``workers`` are the worker registrations made on it.
    ``namespace`` is the one its requests are served in (None: the broker's
    own) and ``credential`` the token it authenticated with, checked again on
    every request (docs/security.md).  ``int64``: the client said so in
    ``Hello``; answers carry 64-bit integers exactly instead of as float64 (see
    :mod:`pgqueue.protocol.codec`).  ``job_rows``: its ``Hello`` listed ``job-rows``;
    PULLB answers its jobs as rows of one ``columns`` list (a pgqueue extension).
    """

    transport: str = "tcp"
    client_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    authenticated: bool = False
    actor: str = "anonymous"
    namespace: str | None = None
    credential: Credential | None = None
    pulled: dict[str, str] = field(default_factory=dict)
    workers: set[str] = field(default_factory=set)
    subscription: Subscription | None = None
    forwarder: asyncio.Task[None] | None = None
    send: Callable[[dict[str, Any]], None] | None = None
    closed: bool = False
    int64: bool = False
    job_rows: bool = False


@dataclass(eq=False)
class Request:
    """A decoded command being served."""

    broker: BrokerHost
    client: ClientState
    name: str
    fields: Fields

    @property
    def manager(self) -> PostgresQueueManager:
        return self.broker.manager

    @property
    def msg(self) -> Any:
        return self.fields.message
