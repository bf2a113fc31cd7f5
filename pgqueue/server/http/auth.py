"""Bearer tokens and namespaces for the HTTP API, the event streams and ``/ws``.

With no token configured every route is open.  With tokens, every route but
the health probes and the API documents needs ``Authorization: Bearer
<secret>``; the name of the matching token is the request's actor (what
audits record).  The namespace of a request is its token's
(:mod:`pgqueue.server.tokens`), or the one an ``X-Pgqueue-Namespace`` header
chooses among those the token may use (docs/security.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pgqueue.errors import AuthError
from pgqueue.server.request import ClientState

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost

__all__ = ["ANONYMOUS", "NAMESPACE_HEADER", "authenticate", "bearer_token"]

ANONYMOUS = "anonymous"
NAMESPACE_HEADER = "x-pgqueue-namespace"


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    value = headers.get("authorization")
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def authenticate(broker: BrokerHost, headers: Mapping[str, str], transport: str) -> ClientState:
    """The client of one request (or WebSocket); :class:`AuthError` when a token
    is required and missing or wrong, or the namespace is not the token's."""
    wanted = headers.get(NAMESPACE_HEADER) or None
    if not broker.auth_required:
        broker.for_namespace(wanted)  # refuses a namespace this broker does not serve
        return ClientState(transport=transport, authenticated=True, namespace=wanted)
    token = bearer_token(headers)
    if token is None or broker.check_token(token) is None:
        raise AuthError("Unauthorized")
    actor, credential = broker.authenticate(token, wanted)
    return ClientState(
        transport=transport,
        authenticated=True,
        actor=actor,
        namespace=credential.namespace,
        credential=credential,
    )
