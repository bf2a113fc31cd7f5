"""Request bodies: JSON objects only, size-limited, read before anything runs.

An empty body reads as "no fields" (bunqueue's optional-body routes).  A
write request whose Content-Type is not JSON gets 415 whether or not the route
reads a body: that also keeps a browser's cross-site form post (a "simple"
request, no CORS preflight) from reaching an open, token-less broker.  A body
over ``limit`` bytes gets 413 and is never parsed: it is read up to the limit
and the rest discarded, so that the client can still read the answer; a body
declared (or found) much larger than that is refused without reading it all.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import ClientDisconnect, Request

from pgqueue import jsontext

__all__ = ["BodyError", "is_json", "read_json_object"]

_DISCARD_FACTOR = 4


class BodyError(Exception):
    """A body the API refuses; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def is_json(content_type: str) -> bool:
    """Whether a Content-Type names JSON (an absent one counts as JSON)."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media in ("", "application/json") or media.endswith("+json")


async def _read(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit * _DISCARD_FACTOR:
        raise BodyError(413, f"Request body too large (limit {limit} bytes)")
    chunks: list[bytes] = []
    size = 0
    too_large = False
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                too_large = True
                if size > limit * _DISCARD_FACTOR:
                    break
                continue
            chunks.append(chunk)
    except ClientDisconnect:
        raise BodyError(400, "Request body incomplete: the client disconnected") from None
    if too_large:
        raise BodyError(413, f"Request body too large (limit {limit} bytes)")
    return b"".join(chunks)


async def read_json_object(request: Request, limit: int) -> dict[str, Any]:
    """The JSON object of the body (``{}`` when empty), or raise :class:`BodyError`."""
    raw = await _read(request, limit)
    if not raw.strip():
        return {}
    try:
        value = jsontext.loads(raw)  # integers exact at any size, keys in order
    except (ValueError, RecursionError) as exc:
        raise BodyError(400, f"Invalid JSON body: {exc}") from None
    if not isinstance(value, dict):
        raise BodyError(400, "Request body must be a JSON object")
    return value
