"""What the server's modules need of the broker that hosts them.

Connections, command handlers, the HTTP API, health and metrics type against
:class:`BrokerHost`, not against :class:`~pgqueue.server.broker.Broker`: the
broker is the composition root of the server (it builds the engine, the TCP
and HTTP servers, the projection and the metrics) and nothing it builds
depends on how it does so.  Only :mod:`pgqueue.server.broker` and the CLI
know the concrete class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pgqueue.config import Config
    from pgqueue.manager.completion import FailItem
    from pgqueue.manager.models import AckItem, ItemOutcome
    from pgqueue.manager.options import JobSpec
    from pgqueue.manager.projection import Projection
    from pgqueue.runtime import PostgresQueueManager
    from pgqueue.server.access import Credential
    from pgqueue.server.claims import ClaimBook
    from pgqueue.server.groupcommit import Coalescer
    from pgqueue.server.metrics import BrokerMetrics
    from pgqueue.server.request import ClientState
    from pgqueue.server.settings import BrokerSettings
    from pgqueue.server.tcp import TcpServer
    from pgqueue.server.tokens import TokenBook
    from pgqueue.service import Service

__all__ = ["BrokerHost"]


class BrokerHost(Protocol):
    """The broker as its parts see it (see the module docstring)."""

    config: Config

    @property
    def manager(self) -> PostgresQueueManager: ...

    @property
    def claims(self) -> ClaimBook: ...

    @property
    def metrics(self) -> BrokerMetrics: ...

    @property
    def projection(self) -> Projection | None: ...

    @property
    def pushes(self) -> Coalescer[JobSpec, str]: ...

    @property
    def acks(self) -> Coalescer[AckItem, ItemOutcome]: ...

    @property
    def fails(self) -> Coalescer[FailItem, ItemOutcome]: ...

    @property
    def settings(self) -> BrokerSettings: ...

    @property
    def draining(self) -> bool: ...

    @property
    def started_at(self) -> float: ...

    @property
    def tcp(self) -> TcpServer: ...

    @property
    def tokens(self) -> TokenBook: ...

    @property
    def warnings(self) -> dict[str, str]: ...

    @property
    def auth_required(self) -> bool: ...

    def check_token(self, token: str) -> str | None: ...

    def authenticate(self, token: str | None, namespace: str | None) -> tuple[str, Credential]: ...

    def for_namespace(self, namespace: str | None) -> BrokerHost: ...

    async def push(self, spec: JobSpec) -> str: ...

    async def ack(self, item: AckItem) -> ItemOutcome: ...

    async def fail(self, item: FailItem) -> ItemOutcome: ...

    def count_stale(self, outcomes: list[ItemOutcome]) -> None: ...

    async def subscribe(self, client: ClientState, queue: str, after: str | None) -> None: ...

    def unsubscribe(self, client: ClientState) -> None: ...

    async def client_closed(self, client: ClientState) -> None: ...

    def services(self) -> list[Service]: ...

    def observe(self, command: str, seconds: float, ok: bool) -> None: ...
