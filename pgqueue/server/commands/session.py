"""Connection-level commands: Auth, Hello, Ping, event subscriptions."""

from __future__ import annotations

import time
from typing import Any

from pgqueue._version import __version__
from pgqueue.errors import AuthError
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request

group = CommandGroup()
command = group.command

PROTOCOL_VERSION = 3
CAPABILITIES = ["pipelining", "separate-job-name", "int64", "job-rows"]


@command("Auth")
async def auth(req: Request) -> dict[str, Any] | None:
    """Authenticate this connection; the token chooses its namespace, or
    ``namespace`` (a pgqueue extension) one of those the token may use.  A
    connection that holds jobs, workers or a subscription keeps its namespace."""
    token = req.fields.get("token")
    wanted = req.fields.opt_str("namespace", max_len=64)
    actor, credential = req.broker.authenticate(token if isinstance(token, str) else "", wanted)
    client = req.client
    moving = client.credential is not None and client.namespace != credential.namespace
    if moving and (client.pulled or client.workers or client.subscription is not None):
        raise AuthError(
            f"This connection works in namespace {client.namespace!r} (it holds jobs, "
            "workers or a subscription): open a new connection for another namespace"
        )
    client.authenticated = True
    client.actor = actor
    client.credential = credential
    client.namespace = credential.namespace
    return {"namespace": credential.namespace}


@command("Hello")
async def hello(req: Request) -> dict[str, Any]:
    """Discovery; a client whose capabilities include ``int64`` gets 64-bit integers
    exactly from now on (bunqueue's clients read msgpack int64 as BigInt: never them),
    one with ``job-rows`` gets PULLB's jobs as rows (see ``pull_batch``).
    The answer is always the server's own (bunqueue); the fields are still typed."""
    req.fields.opt_int("protocolVersion", minimum=0)
    capabilities = req.fields.opt_str_list("capabilities", max_items=100, max_len=256)
    if capabilities is not None and "int64" in capabilities:
        req.client.int64 = True
    if capabilities is not None and "job-rows" in capabilities:
        req.client.job_rows = True
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": CAPABILITIES,
        "server": "pgqueue",
        "version": __version__,
    }


@command("Ping")
async def ping(req: Request) -> dict[str, Any]:
    return {"data": {"pong": True, "time": time.time() * 1000}}


@command("SubscribeEvents")
async def subscribe_events(req: Request) -> dict[str, Any] | None:
    """Events of one queue on this connection (a new subscription replaces the old).

    ``after`` (a pgqueue extension) resumes from the ``eventId`` of the last
    event received, without gaps or duplicates.
    """
    queue = req.fields.queue()
    after = req.fields.opt_str("after", max_len=20_000)
    await req.broker.subscribe(req.client, queue, after)
    subscription = req.client.subscription
    # A pgqueue extension: where the subscription starts, so that a client whose
    # stream drops before its first event can resume from here without a gap.
    return None if subscription is None else {"cursor": str(subscription.token)}


@command("UnsubscribeEvents")
async def unsubscribe_events(req: Request) -> dict[str, Any] | None:
    req.broker.unsubscribe(req.client)
    return None


@command("CompactMemory")
async def compact_memory(req: Request) -> dict[str, Any] | None:
    return None


@command("StorageStatus")
async def storage_status(req: Request) -> dict[str, Any]:
    return {"data": {"diskFull": False, "error": None, "since": None}}
