"""The OpenAPI 3 document and the ``/docs`` page, both generated from the route table."""

from __future__ import annotations

import html
import re
from typing import Any

from pgqueue._version import __version__
from pgqueue.server.http.binding import Endpoint, Param, path_params
from pgqueue.server.http.routes import ENDPOINTS, SYSTEM_ROUTES, SystemRoute

__all__ = ["openapi_document", "openapi_path", "render_docs"]

_ERRORS = {
    "400": "Bad input (nothing was written)",
    "401": "Missing or refused token",
    "404": "No such job",
    "409": "Stale lease or token, already finalized, wrong state, duplicate",
    "413": "Request body over the limit",
    "415": "Request body is not JSON",
    "500": "Internal error (details in the broker log)",
    "501": "Command not implemented yet",
    "503": "Database unavailable, commit outcome unknown, broker fenced or draining",
}
_ANSWER = {"$ref": "#/components/schemas/Answer"}
_ERROR = {"$ref": "#/components/schemas/Error"}


def _schema(param: Param) -> dict[str, Any]:
    schema: dict[str, Any] = {} if param.kind == "any" else {"type": param.kind}
    if param.kind == "array":
        schema["items"] = {}
    if param.description:
        schema["description"] = param.description
    return schema


def openapi_path(path: str) -> str:
    """A route path as OpenAPI writes it: ``{path:path}`` (a router converter) is ``{path}``."""
    return re.sub(r"{(\w+):\w+}", r"{\1}", path)


def _parameters(path: str, query: tuple[Param, ...]) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in path_params(openapi_path(path))
    ]
    for param in query:
        params.append(
            {
                "name": param.name,
                "in": "query",
                "required": param.required,
                "description": param.description,
                "schema": _schema(param),
            }
        )
    return params


def _body(endpoint: Endpoint) -> dict[str, Any]:
    fields = endpoint.body or ()
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {p.name: _schema(p) for p in fields},
        "additionalProperties": endpoint.open_body or endpoint.config_body,
    }
    required = [p.name for p in fields if p.required]
    if required:
        schema["required"] = required
    if endpoint.config_body:
        schema["description"] = "the settings, or {config: {...}}"
    return {"required": bool(required), "content": {"application/json": {"schema": schema}}}


def _command_operation(endpoint: Endpoint) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": endpoint.operation_id,
        "summary": endpoint.summary,
        "description": f"Runs the `{endpoint.command}` command.",
        "tags": [endpoint.tag],
        "x-command": endpoint.command,
        "parameters": _parameters(endpoint.path, endpoint.query),
        "responses": {
            "200": {
                "description": "`{ok: true, ...}`",
                "content": {"application/json": {"schema": endpoint.answer_schema or _ANSWER}},
            },
            **{
                code: {"description": text, "content": {"application/json": {"schema": _ERROR}}}
                for code, text in _ERRORS.items()
            },
        },
    }
    if endpoint.reads_body:
        operation["requestBody"] = _body(endpoint)
    return operation


def _system_operation(route: SystemRoute) -> dict[str, Any]:
    responses: dict[str, Any] = {
        "200": {"description": route.summary, "content": {route.media_type: {}}},
    }
    if route.auth == "tokens":
        responses["401"] = {"description": _ERRORS["401"]}
    if path_params(openapi_path(route.path)):
        responses["404"] = {"description": "Nothing at this path"}
    if route.handler == "ready":
        responses["503"] = {"description": "Not ready: the body names each degraded part"}
    operation: dict[str, Any] = {
        "operationId": (
            "get" + route.path.replace("/", "_").replace("{", "").replace("}", "").replace(".", "_")
        ),
        "summary": route.summary,
        "tags": [route.tag],
        "parameters": _parameters(route.path, route.query),
        "responses": responses,
    }
    if route.auth == "never":
        operation["security"] = []
    return operation


def openapi_document() -> dict[str, Any]:
    """Every route of the API: method, path parameters, summary, request body."""
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in ENDPOINTS:
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = _command_operation(endpoint)
    for route in SYSTEM_ROUTES:
        path = openapi_path(route.path)
        paths.setdefault(path, {})[route.method.lower()] = _system_operation(route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "pgqueue broker HTTP API",
            "version": __version__,
            "description": "bunqueue-compatible REST routes; each runs one protocol command. "
            "Bearer auth applies when the broker has tokens.",
        },
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Answer": {
                    "type": "object",
                    "required": ["ok"],
                    "properties": {"ok": {"const": True}},
                    "additionalProperties": True,
                },
                "Error": {
                    "type": "object",
                    "required": ["ok", "error"],
                    "properties": {"ok": {"const": False}, "error": {"type": "string"}},
                },
            },
        },
        "paths": paths,
    }


def _fields(params: tuple[Param, ...]) -> str:
    return ", ".join(
        f"<code>{html.escape(p.name)}</code>{'*' if p.required else ''}" for p in params
    )


def render_docs() -> str:
    """A self-contained HTML page listing every route (no external scripts)."""
    rows: list[str] = []
    for endpoint in ENDPOINTS:
        body = _fields(endpoint.body or ())
        if endpoint.open_body:
            body = (body + ", …") if body else "any job option"
        if endpoint.config_body:
            body = "settings object (or <code>{config}</code>)"
        rows.append(
            f"<tr><td>{endpoint.method}</td><td><code>{html.escape(endpoint.path)}</code></td>"
            f"<td>{html.escape(endpoint.summary)}</td><td><code>{endpoint.command}</code></td>"
            f"<td>{_fields(endpoint.query)}</td><td>{body}</td></tr>"
        )
    for route in SYSTEM_ROUTES:
        auth = "" if route.auth == "tokens" else " (no auth)"
        rows.append(
            f"<tr><td>{route.method}</td><td><code>{html.escape(route.path)}</code></td>"
            f"<td>{html.escape(route.summary)}{auth}</td><td>—</td>"
            f"<td>{_fields(route.query)}</td><td></td></tr>"
        )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>pgqueue HTTP API</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
        "</style></head><body><h1>pgqueue HTTP API</h1>"
        f"<p>Version {html.escape(__version__)}. Machine-readable: "
        "<a href='/openapi.json'>/openapi.json</a>. With broker tokens, send "
        "<code>Authorization: Bearer &lt;token&gt;</code>. Fields marked * are required.</p>"
        "<table><tr><th>Method</th><th>Path</th><th>Summary</th><th>Command</th>"
        "<th>Query</th><th>JSON body</th></tr>" + "".join(rows) + "</table></body></html>"
    )
