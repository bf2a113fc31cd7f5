"""What every engine flow needs: the database, the settings and who we are."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pgqueue.config import Config
from pgqueue.db.executor import Database

if TYPE_CHECKING:
    from pgqueue.manager.notifier import Notifier
    from pgqueue.manager.sessions import BrokerSession

__all__ = ["EngineContext"]


@dataclass(slots=True)
class EngineContext:
    """Shared by the flows of one manager (admission, claim, completion, ...)."""

    db: Database
    config: Config
    session: BrokerSession
    notifier: Notifier
    # Queues whose last claim needed the planned path (a limit or groups): a hint
    # that saves the plain claim's round trip, never a rule (the SQL decides).
    planned_queues: set[str] = field(default_factory=set)
    # Claims a full rate window held back, by queue, since this manager started: the
    # throttle figure (this broker's own; others' come from their status reports).
    rate_throttled: dict[str, int] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        return self.config.namespace

    @property
    def broker_id(self) -> str:
        return self.session.broker_id

    @property
    def session_id(self) -> str:
        return self.session.session_id
