"""The built-in dashboard: static files under ``/ui``, shipped in the package.

No build step: ``static/`` holds HTML, CSS and ES modules, read with
:mod:`importlib.resources` (so a wheel install serves them) and answered with
a strict Content-Security-Policy (same-origin scripts, styles and requests
only; no inline script) and ``no-store`` caching (an upgraded broker serves
its own pages).  The files hold no data and need no token: the page asks for
one in its login form and sends it as ``Authorization: Bearer`` on every API
call, the event stream included (read with ``fetch``, never a token in a URL).
"""

from __future__ import annotations

import posixpath
from importlib import resources
from importlib.resources.abc import Traversable

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

__all__ = ["MOUNT", "asset", "serve_asset", "serve_index"]

MOUNT = "/ui"

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".json": "application/json",
}

HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


def _root() -> Traversable:
    return resources.files("pgqueue.server.http").joinpath("static")


def asset(path: str) -> tuple[bytes, str] | None:
    """(content, content type) of the dashboard file at ``path``, or None."""
    clean = posixpath.normpath("/" + path).lstrip("/")
    if not clean or clean.startswith(".") or "/." in clean:
        return None
    kind = CONTENT_TYPES.get(posixpath.splitext(clean)[1])
    if kind is None:
        return None
    node = _root()
    for part in clean.split("/"):
        node = node.joinpath(part)
    if not node.is_file():
        return None
    return node.read_bytes(), kind


async def serve_index(request: Request) -> Response:
    if request.url.path == MOUNT:
        return RedirectResponse(MOUNT + "/", 308)
    return serve_file("index.html")


async def serve_asset(request: Request) -> Response:
    return serve_file(str(request.path_params["path"]))


def serve_file(path: str) -> Response:
    found = asset(path)
    if found is None:
        return Response("Not found", 404, media_type="text/plain")
    content, kind = found
    return Response(content, 200, HEADERS, media_type=kind)
