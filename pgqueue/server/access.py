"""What a client may do: its namespace, and whether its token is read-only.

Every request is checked here against the token book *as it is now*
(:meth:`~pgqueue.server.tokens.TokenBook.current`): a token revoked or
narrowed by a reload is refused on the next request of a connection that
authenticated with it, not only on new connections.  A read-only token may
send only the commands of :data:`READ_COMMANDS`; every other command (a
new one too, until it is listed) is a write and refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgqueue.errors import AuthError, Forbidden
from pgqueue.server.tokens import TokenBook, TokenEntry

__all__ = ["READ_COMMANDS", "Credential", "check_request", "choose_namespace"]

READ_COMMANDS = frozenset(
    {
        "AlertFigures",
        "Auth",
        "ClusterOverview",
        "Count",
        "CronGet",
        "CronList",
        "DashboardOverview",
        "DashboardQueue",
        "DashboardQueues",
        "Dlq",
        "DlqAudit",
        "GetChildrenValues",
        "GetCountsPerPriority",
        "GetDeduplicationJobId",
        "GetDlqConfig",
        "GetDlqStats",
        "GetFailedChildrenValues",
        "GetGroupActiveCount",
        "GetGroupConcurrency",
        "GetGroupJobsCount",
        "GetGroupRateLimit",
        "GetGroupRateLimitTtl",
        "GetGroupsJobsCount",
        "GetIgnoredChildrenFailures",
        "GetJob",
        "GetJobByCustomId",
        "GetJobCounts",
        "GetJobs",
        "GetLogs",
        "GetProgress",
        "GetQueueLimits",
        "GetResult",
        "GetStallConfig",
        "GetState",
        "Hello",
        "IsGroupPaused",
        "IsPaused",
        "JobInspect",
        "ListBrokers",
        "ListQueues",
        "ListWebhookDeliveries",
        "ListWebhooks",
        "ListWorkers",
        "Metrics",
        "Ping",
        "Prometheus",
        "Stats",
        "StorageStatus",
        "SubscribeEvents",
        "UnsubscribeEvents",
        "WaitJob",
    }
)
"""The commands a read-only token may send (they change nothing)."""


@dataclass(frozen=True, slots=True)
class Credential:
    """What a client authenticated with: its token's digest and the namespace it uses."""

    digest: str
    namespace: str


def choose_namespace(entry: TokenEntry, wanted: str | None, primary: str, served: set[str]) -> str:
    """The namespace a client authenticating with ``entry`` works in.

    ``wanted`` (TCP ``Auth``'s ``namespace``, HTTP's ``X-Pgqueue-Namespace``)
    when given; else the token's first namespace, or ``primary`` for a token
    of every namespace.  One the token does not name, or the broker does not
    serve, is refused."""
    namespace = wanted if wanted is not None else entry.default_namespace(primary)
    if not entry.allows(namespace) or namespace not in served:
        raise AuthError(f"This token may not use namespace {namespace!r}")
    return namespace


def check_request(book: TokenBook, credential: Credential | None, command: str) -> None:
    """Refuse ``command`` unless ``credential`` still grants it (see the module docstring)."""
    if credential is None:
        return
    entry = book.current(credential.digest)
    if entry is None or not entry.allows(credential.namespace):
        raise AuthError("Token revoked: authenticate again")
    if entry.read_only and command not in READ_COMMANDS:
        raise Forbidden(f"Read-only token: {command} changes data and is refused")
