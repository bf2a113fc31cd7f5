"""Bearer tokens for the HTTP API (the broker's ``--auth-token`` list).

With no token configured every route is open.  With tokens, every route but
the health probes and the API documents needs ``Authorization: Bearer
<secret>``; the name of the matching token is the request's actor (what
audits record).  The comparison is constant-time (``Broker.check_token``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost

__all__ = ["ANONYMOUS", "authenticate", "bearer_token"]

ANONYMOUS = "anonymous"


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    value = headers.get("authorization")
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def authenticate(broker: BrokerHost, headers: Mapping[str, str]) -> str | None:
    """The actor of a request, or None when a token is required and missing or wrong."""
    if not broker.auth_required:
        return ANONYMOUS
    token = bearer_token(headers)
    if token is None:
        return None
    return broker.check_token(token)
