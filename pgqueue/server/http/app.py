"""The Starlette application: command routes, event streams, probes, metrics, docs.

A command route authenticates, reads its JSON body, builds the command map
(:func:`~pgqueue.server.http.binding.build_command`) and serves it through
:func:`~pgqueue.server.dispatch.dispatch` with a per-request
:class:`~pgqueue.server.request.ClientState`.  Jobs pulled over HTTP are
*detached*: they stay leased after the request (ack them with the token, or
on this broker without one); the lease expiry covers a client that vanishes.
A pull whose client disconnected before its reply was written gives the jobs
it claimed back at once (no attempt, no stall), as on TCP.
While the broker drains, every route but the probes answers 503.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from pgqueue.errors import AuthError, PgQueueError, ValidationError
from pgqueue.server.access import Credential, check_request
from pgqueue.server.dispatch import dispatch
from pgqueue.server.http import console, debug, health
from pgqueue.server.http.auth import authenticate
from pgqueue.server.http.binding import Endpoint, build_command
from pgqueue.server.http.body import BodyError, is_json, read_json_object
from pgqueue.server.http.bunqueue_sse import BunqueueStreamResponse
from pgqueue.server.http.feed import Feed
from pgqueue.server.http.jsonio import dumps
from pgqueue.server.http.openapi import openapi_document, render_docs
from pgqueue.server.http.routes import ENDPOINTS, SYSTEM_ROUTES, unknown_job_field
from pgqueue.server.http.sse import EventStreamResponse
from pgqueue.server.http.status import status_for_answer, status_for_error
from pgqueue.server.http.telemetry import HttpMetrics
from pgqueue.server.http.ws import WS_PATHS, serve_socket
from pgqueue.server.request import ClientState

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost
    from pgqueue.server.tokens import TokenBook

__all__ = ["HttpState", "build_app"]

log = logging.getLogger("pgqueue.http")

Handler = Callable[[Request], Awaitable[Response]]


@dataclass(eq=False)
class HttpState:
    """What the routes share: the broker, the drain signal, the collectors."""

    broker: BrokerHost
    metrics: HttpMetrics | None = None
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    connections: dict[str, int] = field(default_factory=lambda: {"websocket": 0, "sse": 0})
    streams: dict[asyncio.Event, Credential | None] = field(default_factory=dict)

    @property
    def draining(self) -> bool:
        return self.closing.is_set() or self.broker.draining

    def opened(self, transport: str) -> None:
        """A WebSocket or an event stream opened (``/health``, ``pgqueue_connections``)."""
        self.connections[transport] += 1
        self.broker.metrics.connections.labels(transport).inc()

    def closed(self, transport: str) -> None:
        self.connections[transport] -= 1
        self.broker.metrics.connections.labels(transport).dec()

    def stream_closing(self, client: ClientState) -> asyncio.Event:
        """The event that ends one stream or WebSocket: the drain, or its token revoked."""
        event = asyncio.Event()
        if self.closing.is_set():
            event.set()
        self.streams[event] = client.credential
        return event

    def stream_ended(self, event: asyncio.Event) -> None:
        self.streams.pop(event, None)

    def end_streams(self, book: TokenBook | None = None) -> int:
        """End every stream (the drain), or those whose token ``book`` no longer grants."""
        ended = 0
        for event, credential in list(self.streams.items()):
            if book is not None:
                entry = None if credential is None else book.current(credential.digest)
                if credential is None or (entry is not None and entry.allows(credential.namespace)):
                    continue
            if not event.is_set():
                event.set()
                ended += 1
        return ended


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    try:
        content = dumps(body)
    except TypeError:
        log.exception("cannot encode an HTTP answer")
        status, content = 500, dumps({"ok": False, "error": "Internal server error"})
    return Response(content, status, headers, media_type="application/json")


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return json_response({"ok": False, "error": message}, status, headers)


METRICS_REFRESH_TIMEOUT = 5.0  # a scrape answers with older gauges rather than hang
UNAUTHORIZED = {"www-authenticate": 'Bearer realm="pgqueue"'}


def _refusal(state: HttpState, request: Request) -> tuple[Response | None, ClientState]:
    """(a 401/503 answer or None, the client) for a route that needs a token."""
    nobody = ClientState(transport="http")
    if state.draining:
        return error_response(
            503, "Broker is draining, retry on another broker", {"connection": "close"}
        ), nobody
    try:
        return None, authenticate(state.broker, request.headers, "http")
    except AuthError as exc:
        return error_response(status_for_error(exc), exc.message, UNAUTHORIZED), nobody


def _observed(state: HttpState, method: str, route: str, handler: Handler) -> Handler:
    async def observed(request: Request) -> Response:
        try:
            response = await handler(request)
        except Exception:
            log.exception("%s %s failed unexpectedly", method, route)
            response = error_response(500, "Internal server error")
        if state.metrics is not None:
            state.metrics.observe(method, route, response.status_code)
        return response

    return observed


LONG_POLLS = frozenset({"PULL", "PULLB"})
"""Commands that may wait: they watch for the client leaving (see ``_pull``)."""


async def _watch_disconnect(request: Request, client: ClientState) -> None:
    """Mark ``client`` closed when its HTTP connection goes away (the body was read)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    client.closed = True


async def _dispatch(
    broker: BrokerHost,
    request: Request,
    client: ClientState,
    msg: dict[str, Any],
    errors: list[Exception],
) -> dict[str, Any]:
    if msg.get("cmd") not in LONG_POLLS:
        return await dispatch(broker, client, msg, on_error=errors.append)
    watcher = asyncio.create_task(_watch_disconnect(request, client), name="pgqueue:http-gone")
    try:
        return await dispatch(broker, client, msg, on_error=errors.append)
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)


def _command_handler(state: HttpState, endpoint: Endpoint) -> Handler:
    broker = state.broker

    async def serve(request: Request) -> Response:
        refused, client = _refusal(state, request)
        if refused is not None:
            return refused
        if endpoint.method != "GET" and not is_json(request.headers.get("content-type", "")):
            return error_response(415, "Request body must be JSON (Content-Type: application/json)")
        body: dict[str, Any] | None = None
        if endpoint.reads_body:
            try:
                body = await read_json_object(request, broker.settings.max_http_body_bytes)
            except BodyError as exc:
                return error_response(exc.status, exc.message)
            unknown = unknown_job_field(endpoint.command, body)
            if unknown is not None:
                return error_response(400, unknown)
        path = {name: str(value) for name, value in request.path_params.items()}
        query = {name: request.query_params.getlist(name) for name in request.query_params}
        msg = build_command(endpoint, path, query, body)
        errors: list[Exception] = []
        answer = await _dispatch(broker, request, client, msg, errors)
        answer.pop("reqId", None)
        status = status_for_answer(endpoint.command, answer, errors)
        if status == 200 and endpoint.shape is not None:
            answer = endpoint.shape(answer, path)
        return json_response(answer, status)

    return serve


def _system_handlers(state: HttpState) -> dict[str, Handler]:
    broker = state.broker

    async def live(request: Request) -> Response:
        return json_response(health.liveness(broker))

    async def ready(request: Request) -> Response:
        timeout = broker.settings.readiness_timeout_ms / 1000
        is_ready, body = await health.readiness(broker, timeout)
        return json_response(body, 200 if is_ready else 503)

    async def metrics(request: Request) -> Response:
        try:
            client = authenticate(broker, request.headers, "http")
        except AuthError as exc:
            return error_response(status_for_error(exc), exc.message, UNAUTHORIZED)
        served = broker.for_namespace(client.namespace).metrics  # its namespace's only
        try:
            await asyncio.wait_for(served.refresh(), METRICS_REFRESH_TIMEOUT)
        except (PgQueueError, TimeoutError) as exc:
            log.warning("metrics: the database gauges were not refreshed: %s", exc)
        return Response(served.render(), media_type=CONTENT_TYPE_LATEST)

    async def openapi(request: Request) -> Response:
        return json_response(openapi_document())

    async def docs(request: Request) -> Response:
        return HTMLResponse(render_docs())

    async def events(request: Request) -> Response:
        refused, client = _refusal(state, request)
        if refused is not None:
            return refused
        host = broker.for_namespace(client.namespace)
        queue = request.path_params.get("queue") or request.query_params.get("queue") or None
        after = request.headers.get("last-event-id") or request.query_params.get("after") or None
        try:
            subscription = await host.manager.subscribe_events(queue, after=after)
        except PgQueueError as exc:
            return error_response(status_for_error(exc), exc.message)
        gauge = state.metrics.streams if state.metrics is not None else None
        if gauge is not None:
            gauge.inc()
        state.opened("sse")
        closing = state.stream_closing(client)

        def closed() -> None:
            state.stream_ended(closing)
            state.closed("sse")
            if gauge is not None:
                gauge.dec()

        return EventStreamResponse(
            subscription,
            closing=closing,
            keepalive=broker.settings.sse_keepalive_ms / 1000,
            on_close=closed,
        )

    async def bunqueue_events(request: Request) -> Response:
        refused, client = _refusal(state, request)
        if refused is not None:
            return refused
        host = broker.for_namespace(client.namespace)
        queue = request.path_params.get("queue")
        after = request.headers.get("last-event-id") or request.query_params.get("after") or None
        try:
            try:
                subscription = await host.manager.subscribe_events(queue, after=after)
            except ValidationError as exc:
                if after is None or exc.field == "queue":
                    raise
                subscription = await host.manager.subscribe_events(queue)  # not our token
        except PgQueueError as exc:
            return error_response(status_for_error(exc), exc.message)
        state.opened("sse")
        closing = state.stream_closing(client)
        feed = Feed(
            host,
            subscription,
            keepalive=broker.settings.sse_keepalive_ms / 1000,
            connections=lambda: {"sse": state.connections["sse"]},
        )

        def closed() -> None:
            state.stream_ended(closing)
            state.closed("sse")

        return BunqueueStreamResponse(feed, closing=closing, on_close=closed)

    async def bunqueue_health(request: Request) -> Response:
        timeout = broker.settings.readiness_timeout_ms / 1000
        is_ready, body = await health.readiness(broker, timeout)
        extra = await health.bunqueue_fields(broker, timeout, dict(state.connections))
        answer = {**body, **extra, "status": "healthy" if is_ready else "degraded"}
        return json_response(answer, 200 if is_ready else 503)

    async def gc(request: Request) -> Response:
        refused, client = _refusal(state, request)
        if refused is not None:
            return refused
        try:
            check_request(broker.tokens, client.credential, "POST /gc")
        except AuthError as exc:
            return error_response(status_for_error(exc), exc.message)
        try:
            body = await read_json_object(request, broker.settings.max_http_body_bytes)
        except BodyError as exc:
            return error_response(exc.status, exc.message)
        tracing = body.get("tracemalloc")
        if tracing is not None and not isinstance(tracing, bool):
            return error_response(400, "tracemalloc must be a boolean")
        if tracing is not None:
            debug.set_tracing(tracing)
        return json_response(debug.collect())

    async def heapstats(request: Request) -> Response:
        refused, _ = _refusal(state, request)
        if refused is not None:
            return refused
        top = request.query_params.get("top", str(debug.TOP_LINES))
        if not top.isdigit() or not 1 <= int(top) <= debug.MAX_TOP_LINES:
            return error_response(400, f"top must be an integer from 1 to {debug.MAX_TOP_LINES}")
        return json_response(debug.heap_stats(broker, top=int(top)))

    return {
        "live": live,
        "ready": ready,
        "metrics": metrics,
        "openapi": openapi,
        "docs": docs,
        "events": events,
        "bunqueue_events": bunqueue_events,
        "health": bunqueue_health,
        "gc": gc,
        "heapstats": heapstats,
        "ui": console.serve_index,
        "ui_asset": console.serve_asset,
    }


async def _http_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException):
        message = "Not found" if exc.status_code == 404 else str(exc.detail)
        return error_response(exc.status_code, message, dict(exc.headers or {}))
    log.error("unhandled HTTP error", exc_info=exc)
    return error_response(500, "Internal server error")


def build_app(state: HttpState) -> Starlette:
    """The application serving ``state.broker``."""
    routes: list[Route] = []
    for endpoint in ENDPOINTS:
        handler = _observed(
            state, endpoint.method, endpoint.path, _command_handler(state, endpoint)
        )
        served = Route(endpoint.path, handler, methods=[endpoint.method])
        if served.methods is not None:  # HEAD would run the command and drop its answer
            served.methods.discard("HEAD")
        routes.append(served)
    system = _system_handlers(state)
    for extra in SYSTEM_ROUTES:
        # An event stream is observed when it opens (its answer is the stream).
        handler = _observed(state, extra.method, extra.path, system[extra.handler])
        served = Route(extra.path, handler, methods=[extra.method])
        if extra.handler in ("events", "bunqueue_events") and served.methods is not None:
            served.methods.discard("HEAD")  # a HEAD must not open a stream
        routes.append(served)

    async def socket(websocket: WebSocket) -> None:
        await serve_socket(state, websocket)

    sockets = [WebSocketRoute(path, socket) for path in WS_PATHS]
    return Starlette(
        routes=[*routes, *sockets],
        exception_handlers={HTTPException: _http_error, Exception: _http_error},
    )
