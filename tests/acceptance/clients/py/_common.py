"""Shared helpers for the Python SDK scenarios (official ``bunqueue-client`` 0.1.5).

Environment (same as the TypeScript scenarios):
  PGQ_HOST        server host (default 127.0.0.1)
  PGQ_TCP_PORT    server TCP port (default 6789)
  PGQ_TCP_PORT2   optional second broker: workers connect here
  PGQ_TOKEN       optional auth token
  PGQ_TLS_CA      optional PEM file to trust: connect with TLS (``tls={"ca_file": ...}``)
  PGQ_QUEUE       queue name (default pgq-py-<scenario>-<random>)
  PGQ_TIMEOUT_MS  hard timeout of the whole scenario (default 60000)

Every scenario prints exactly one final line ``RESULT <json>`` whose object always has
``ok`` and ``scenario``; the exit code is 0 iff ok. A hard timeout prints an ok=false
RESULT and exits with code 1 even if SDK threads hang.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Env:
    scenario: str
    host: str
    port: int
    port2: int
    token: str | None
    queue: str
    timeout_ms: int
    tls_ca: str | None = None

    def tls(self) -> dict[str, Any]:
        """The ``tls`` keyword when PGQ_TLS_CA is set, else nothing."""
        return {"tls": {"ca_file": self.tls_ca}} if self.tls_ca else {}

    def conn(self, second: bool = False) -> dict[str, Any]:
        """Keyword arguments for bunqueue.Queue / Worker / FlowProducer."""
        out: dict[str, Any] = {"host": self.host, "port": self.port2 if second else self.port}
        if self.token:
            out["token"] = self.token
        return {**out, **self.tls()}


def read_env(scenario: str) -> Env:
    e = os.environ
    port = int(e.get("PGQ_TCP_PORT", "6789"))
    return Env(
        scenario=scenario,
        host=e.get("PGQ_HOST", "127.0.0.1"),
        port=port,
        port2=int(e["PGQ_TCP_PORT2"]) if e.get("PGQ_TCP_PORT2") else port,
        token=e.get("PGQ_TOKEN") or None,
        queue=e.get("PGQ_QUEUE") or f"pgq-py-{scenario.replace('_', '-')}-{uuid.uuid4().hex[:8]}",
        timeout_ms=int(e.get("PGQ_TIMEOUT_MS", "60000")),
        tls_ca=e.get("PGQ_TLS_CA") or None,
    )


_emit_lock = threading.Lock()
_emitted = False


def jsonable(value: Any) -> Any:
    """Render SDK values as JSON: msgpack ExtType (JS undefined is ext 0) becomes
    {"$ext": code, "hex": ...}, bytes {"$bin": hex}, exceptions {type, message}."""
    import msgpack

    if isinstance(value, msgpack.ExtType):  # a namedtuple: must precede the tuple case
        return {"$ext": value.code, "hex": value.data.hex()}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return {"$bin": bytes(value).hex()}
    if isinstance(value, BaseException):
        return {"type": type(value).__name__, "message": str(value)}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def emit(obj: dict[str, Any], code: int) -> None:
    global _emitted
    with _emit_lock:
        if not _emitted:
            _emitted = True
            sys.stdout.write("RESULT " + json.dumps(jsonable(obj)) + "\n")
            sys.stdout.flush()
    os._exit(code)  # SDK worker threads are daemons, but do not wait for any of them


class AssertionFailed(Exception):
    pass


def check(cond: object, message: str) -> None:
    if not cond:
        raise AssertionFailed(f"assertion failed: {message}")


def wait_for(
    what: str, pred: Callable[[], bool], timeout_s: float = 20.0, every_s: float = 0.025
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(every_s)
    raise AssertionFailed(f"timed out waiting for {what}")


def attempt(fn: Callable[[], Any]) -> dict[str, Any]:
    """Run fn; return {ok, value | error, errorType, ms}."""
    t = time.monotonic()
    try:
        value = fn()
        return {"ok": True, "value": value, "ms": round((time.monotonic() - t) * 1000)}
    except Exception as exc:
        return {
            "ok": False,
            "error": str(exc),
            "errorType": type(exc).__name__,
            "ms": round((time.monotonic() - t) * 1000),
        }


def count_commands(connection: Any) -> dict[str, int]:
    """Wrap ``connection.call`` to count the commands sent (before the client starts)."""
    hist: dict[str, int] = {}
    original = connection.call

    def call(command: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        name = str(command.get("cmd"))
        hist[name] = hist.get(name, 0) + 1
        response: dict[str, Any] = original(command, timeout)
        return response

    connection.call = call
    return hist


def main(scenario: str, body: Callable[[Env, dict[str, Any]], dict[str, Any]]) -> None:
    env = read_env(scenario)
    partial: dict[str, Any] = {}
    base = {"scenario": scenario, "queue": env.queue}

    def on_timeout() -> None:
        emit({"ok": False, **base, "error": f"timeout after {env.timeout_ms} ms", **partial}, 1)

    timer = threading.Timer(env.timeout_ms / 1000, on_timeout)
    timer.daemon = True
    timer.start()
    try:
        result = body(env, partial)
    except Exception as exc:
        partial["traceback"] = traceback.format_exc().splitlines()[-8:]
        emit({"ok": False, **base, "error": f"{type(exc).__name__}: {exc}", **partial}, 1)
        return
    timer.cancel()
    emit({"ok": True, **base, **result}, 0)
