"""How one HTTP route speaks the protocol: its table entry and the command it builds.

An :class:`Endpoint` names a bunqueue command and where its fields come from:
the path (``/jobs/{id}`` fills ``id``), the query string (typed by
:class:`Param`), and the JSON body (declared fields, or every field for the
job-input routes).  :func:`build_command` is pure: the handlers validate the
fields exactly as they do for TCP, so a query value that does not parse as
its kind is passed on as text and refused there with the protocol's message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Endpoint", "Kind", "Param", "Shape", "build_command", "path_params"]

Kind = Literal["string", "integer", "number", "boolean", "array", "object", "any"]
Shape = Callable[[dict[str, Any], Mapping[str, str]], Any]

_RESERVED = frozenset({"cmd", "reqId"})
_INTEGER = re.compile(r"-?\d{1,20}")
_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no"})


@dataclass(frozen=True, slots=True)
class Param:
    """A query parameter or body field.

    ``target`` is the command field it fills (default: ``name``); a dotted
    target (``filter.limit``) fills a nested map.  ``aliases`` are other
    names accepted for it (query parameters only).
    """

    name: str
    kind: Kind
    description: str = ""
    required: bool = False
    target: str | None = None
    aliases: tuple[str, ...] = ()

    @property
    def field(self) -> str:
        return self.target or self.name


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One REST route served by one command.

    ``body`` lists the JSON fields the route reads (None: it reads no body);
    with ``open_body`` every field of the body passes on (job inputs and their
    options); with ``config_body`` the body (or its ``config`` member) becomes
    the command's ``config``.  ``fixed`` fields are set last and win.
    ``shape`` rewrites a successful answer (presentation only).
    """

    method: str
    path: str
    command: str
    summary: str
    tag: str
    query: tuple[Param, ...] = ()
    body: tuple[Param, ...] | None = None
    open_body: bool = False
    config_body: bool = False
    fixed: Mapping[str, Any] = field(default_factory=dict)
    shape: Shape | None = None
    answer_schema: Mapping[str, Any] | None = None
    """The JSON schema of a shaped answer (None: ``{ok: true, ...}``)."""

    @property
    def reads_body(self) -> bool:
        return self.body is not None or self.open_body or self.config_body

    @property
    def operation_id(self) -> str:
        words = re.findall(r"[A-Za-z0-9]+", self.path.replace("{", "by-").replace("}", ""))
        return self.method.lower() + "".join(w[:1].upper() + w[1:] for w in words)


def path_params(path: str) -> list[str]:
    """The ``{name}`` parameters of a route path, in order."""
    return re.findall(r"{([A-Za-z_][A-Za-z0-9_]*)}", path)


def _query_value(param: Param, values: Sequence[str]) -> Any:
    if param.kind == "array":
        items = [item.strip() for value in values for item in value.split(",")]
        return [item for item in items if item]
    text = values[-1]
    if param.kind == "integer" or param.kind == "number":
        if _INTEGER.fullmatch(text):
            return int(text)
        try:
            return float(text)
        except ValueError:
            return text  # refused by the handler: "<name> must be a number"
    if param.kind == "boolean":
        lowered = text.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        return text  # refused by the handler: "<name> must be a boolean"
    return text


def _put(msg: dict[str, Any], target: str, value: Any) -> None:
    *parents, last = target.split(".")
    node = msg
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[last] = value


def build_command(
    endpoint: Endpoint,
    path: Mapping[str, str],
    query: Mapping[str, Sequence[str]],
    body: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The command map for one request (path fields and ``fixed`` win)."""
    msg: dict[str, Any] = {}
    if body is not None:
        if endpoint.open_body:
            msg.update({k: v for k, v in body.items() if k not in _RESERVED})
        elif endpoint.config_body:
            config = body.get("config") if "config" in body else body
            msg["config"] = dict(config) if isinstance(config, Mapping) else config
        for param in endpoint.body or ():
            if param.name in body:
                _put(msg, param.field, body[param.name])
    for param in endpoint.query:
        values = [v for name in (param.name, *param.aliases) for v in query.get(name, ())]
        if values:
            _put(msg, param.field, _query_value(param, values))
    msg.update(path)
    msg.update(endpoint.fixed)
    msg["cmd"] = endpoint.command
    return msg
