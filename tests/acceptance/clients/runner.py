"""Run the official bunqueue clients' scenario scripts, and the reference server.

Used by the acceptance tests and the side-by-side benchmarks:

- :func:`bun_path` finds the pinned Bun binary installed by ``scripts/js/install.sh``
  (it never installs anything itself);
- :func:`run_ts_scenario` / :func:`run_py_scenario` run one scenario script against a
  server (``PGQ_*`` environment), enforce a timeout and return the parsed ``RESULT``;
- :func:`start_reference_bunqueue` starts the real bunqueue server (npm ``bunqueue`` on
  Bun), in PostgreSQL mode when a DSN is given and in memory mode otherwise, and waits
  until its TCP port answers a ``Ping``.

Scenario names are the file stems under ``ts/`` and ``py/`` (``add_worker``, ``events``,
``flow``, ``dedup``, ``retry_dlq``, ``auth``, ``throughput``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import msgpack

__all__ = [
    "BunNotInstalledError",
    "ReferenceServer",
    "ScenarioError",
    "bun_path",
    "free_port",
    "js_dir",
    "ping",
    "run_py_scenario",
    "run_ts_scenario",
    "start_reference_bunqueue",
]

CLIENTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = CLIENTS_DIR.parents[2]
TS_DIR = CLIENTS_DIR / "ts"
PY_DIR = CLIENTS_DIR / "py"
INSTALL_SCRIPT = REPO_ROOT / "scripts" / "js" / "install.sh"
RESULT_PREFIX = "RESULT "


class BunNotInstalledError(RuntimeError):
    """The pinned Bun/bunqueue install is missing: run scripts/js/install.sh."""


class ScenarioError(RuntimeError):
    """A scenario script failed, timed out or printed no RESULT line."""

    def __init__(
        self,
        message: str,
        *,
        stdout: str,
        stderr: str,
        returncode: int | None,
        result: dict[str, Any] | None,
    ) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.returncode = returncode
        self.result = result
        super().__init__(
            f"{message}\n--- exit code: {returncode}\n--- stdout (tail):\n{_tail(stdout)}"
            f"\n--- stderr (tail):\n{_tail(stderr)}"
        )


def _tail(text: str, lines: int = 40, chars: int = 8000) -> str:
    return "\n".join(text.splitlines()[-lines:])[-chars:]


def js_dir() -> Path:
    """The JS install directory: ``$PGQUEUE_JS_DIR`` or ``<repo>/.cache/js``."""
    configured = os.environ.get("PGQUEUE_JS_DIR")
    return Path(configured).resolve() if configured else REPO_ROOT / ".cache" / "js"


def _runs(binary: Path) -> bool:
    try:
        proc = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and bool(proc.stdout.strip())


def bun_path() -> Path:
    """The Bun binary installed by ``scripts/js/install.sh`` (honours PGQUEUE_JS_DIR).

    Looks at ``$PGQUEUE_JS_DIR/bin/bun`` (the installer's symlink), then the ``bun``
    package's binary, then the platform package ``@oven/bun-*`` (used when npm blocked
    the bun postinstall). Raises :class:`BunNotInstalledError` when none runs.
    """
    base = js_dir()
    candidates = [base / "bin" / "bun", base / "node_modules" / "bun" / "bin" / "bun.exe"]
    candidates += sorted((base / "node_modules" / "@oven").glob("bun-*/bin/bun"))
    for candidate in candidates:
        if candidate.exists() and os.access(candidate, os.X_OK) and _runs(candidate):
            return candidate
    raise BunNotInstalledError(
        f"no runnable bun binary under {base} (looked at {', '.join(map(str, candidates))}); "
        f"install it with: PGQUEUE_JS_DIR={base} {INSTALL_SCRIPT}"
    )


def _bunqueue_main() -> Path:
    main = js_dir() / "node_modules" / "bunqueue" / "dist" / "main.js"
    if not main.exists():
        raise BunNotInstalledError(f"{main} is missing; run {INSTALL_SCRIPT}")
    return main


def _parse_result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            parsed = json.loads(line[len(RESULT_PREFIX) :])
            return parsed if isinstance(parsed, dict) else {"value": parsed}
    return None


def _run_scenario(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None, timeout: float
) -> dict[str, Any]:
    full_env = dict(os.environ)
    full_env["PGQUEUE_JS_DIR"] = str(js_dir())
    # The script's own hard timeout fires first, so a slow run still reports a RESULT.
    full_env["PGQ_TIMEOUT_MS"] = str(max(1000, int((timeout - 5) * 1000)))
    full_env.update({k: str(v) for k, v in (env or {}).items()})
    try:
        proc = subprocess.run(
            list(argv),
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ScenarioError(
            f"{' '.join(argv)} timed out after {timeout} s",
            stdout=_text(exc.stdout),
            stderr=_text(exc.stderr),
            returncode=None,
            result=None,
        ) from None
    result = _parse_result(proc.stdout)
    if result is None:
        raise ScenarioError(
            f"{' '.join(argv)} printed no RESULT line",
            stdout=proc.stdout,
            stderr=proc.stderr,
            returncode=proc.returncode,
            result=None,
        )
    if proc.returncode != 0 or result.get("ok") is not True:
        raise ScenarioError(
            f"{' '.join(argv)} failed: {result.get('error')}",
            stdout=proc.stdout,
            stderr=proc.stderr,
            returncode=proc.returncode,
            result=result,
        )
    return result


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def run_ts_scenario(
    name: str, env: Mapping[str, str] | None = None, timeout: float = 120.0
) -> dict[str, Any]:
    """Run ``ts/<name>.ts`` with the pinned Bun (``--no-install``) and return its RESULT.

    ``env`` adds ``PGQ_*`` variables (PGQ_HOST, PGQ_TCP_PORT, PGQ_TOKEN, PGQ_QUEUE...).
    Raises :class:`ScenarioError` on a non-zero exit, ``ok != true``, a missing RESULT
    line or a timeout.
    """
    script = TS_DIR / f"{name}.ts"
    if not script.exists():
        raise FileNotFoundError(script)
    return _run_scenario([str(bun_path()), "--no-install", str(script)], TS_DIR, env, timeout)


def run_py_scenario(
    name: str, env: Mapping[str, str] | None = None, timeout: float = 120.0
) -> dict[str, Any]:
    """Run ``py/<name>.py`` with this interpreter (``$PGQUEUE_PYTHON`` overrides), which
    must have ``bunqueue-client==0.1.5`` installed, and return its RESULT."""
    script = PY_DIR / f"{name}.py"
    if not script.exists():
        raise FileNotFoundError(script)
    python = os.environ.get("PGQUEUE_PYTHON", sys.executable)
    return _run_scenario([python, str(script)], PY_DIR, env, timeout)


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return buf


def _call(sock: socket.socket, command: dict[str, Any]) -> dict[str, Any]:
    body = msgpack.packb(command, use_bin_type=True)
    sock.sendall(struct.pack(">I", len(body)) + body)
    while True:
        (length,) = struct.unpack(">I", _read_exact(sock, 4))
        reply = msgpack.unpackb(_read_exact(sock, length), raw=False, strict_map_key=False)
        if isinstance(reply, dict) and reply.get("reqId") == command.get("reqId"):
            return reply


def ping(host: str, port: int, token: str | None = None, timeout: float = 2.0) -> bool:
    """True when a bunqueue-protocol server at host:port answers Ping (after Auth)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            auth = {"cmd": "Auth", "token": token, "reqId": "auth"}
            if token and _call(sock, auth).get("ok") is not True:
                return False
            reply = _call(sock, {"cmd": "Ping", "reqId": "ping"})
    except (OSError, ValueError, msgpack.UnpackException):
        return False
    data = reply.get("data")
    return reply.get("ok") is True and isinstance(data, dict) and data.get("pong") is True


@dataclass
class ReferenceServer:
    """A running reference bunqueue server (see :func:`start_reference_bunqueue`)."""

    process: subprocess.Popen[bytes]
    host: str
    tcp_port: int
    http_port: int
    broker_id: str
    namespace: str
    dsn: str | None
    auth_tokens: tuple[str, ...]
    log_path: Path
    _log: IO[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def token(self) -> str | None:
        return self.auth_tokens[0] if self.auth_tokens else None

    def client_env(self) -> dict[str, str]:
        """PGQ_* variables that point a scenario at this server."""
        env = {"PGQ_HOST": self.host, "PGQ_TCP_PORT": str(self.tcp_port)}
        if self.token:
            env["PGQ_TOKEN"] = self.token
        return env

    def log_tail(self, lines: int = 40) -> str:
        try:
            return _tail(self.log_path.read_text("utf-8", "replace"), lines)
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (graceful shutdown), then SIGKILL after ``timeout``; returns the exit code."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                self.process.wait(10)
        if self._log is not None:
            self._log.close()
            self._log = None
        return self.process.returncode

    def __enter__(self) -> ReferenceServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


_STRIPPED_ENV_PREFIXES = ("BUNQUEUE_", "BQ_")
_STRIPPED_ENV = {
    "TCP_PORT",
    "HTTP_PORT",
    "HOST",
    "AUTH_TOKENS",
    "DATA_PATH",
    "SQLITE_PATH",
    "TLS_CERT_FILE",
    "TLS_KEY_FILE",
}


def start_reference_bunqueue(
    dsn_or_none: str | None,
    tcp_port: int,
    http_port: int,
    broker_id: str,
    namespace: str,
    auth_tokens: Sequence[str] | None = None,
    *,
    host: str = "127.0.0.1",
    extra_env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    startup_timeout: float = 60.0,
) -> ReferenceServer:
    """Start the real bunqueue server (npm ``bunqueue`` on the pinned Bun).

    PostgreSQL mode when ``dsn_or_none`` is a ``postgres://`` URL (the schema is created on
    first start; ``broker_id`` and ``namespace`` become BUNQUEUE_BROKER_ID /
    BUNQUEUE_POSTGRES_NAMESPACE), memory mode when it is None. ``auth_tokens`` enables
    token auth. ``extra_env`` passes further server settings (e.g. LOG_LEVEL,
    RATE_LIMIT_MAX_REQUESTS, BUNQUEUE_POSTGRES_POOL_SIZE). Output goes to ``log_path``
    (a temp file by default). Returns once the TCP port answers a Ping; raises
    RuntimeError (with the log tail) if the server exits or does not answer in time.
    """
    bun = bun_path()
    main = _bunqueue_main()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_STRIPPED_ENV_PREFIXES) and k not in _STRIPPED_ENV
    }
    env.update(
        {
            "TCP_PORT": str(tcp_port),
            "HTTP_PORT": str(http_port),
            "HOST": host,
            "BUNQUEUE_BROKER_ID": broker_id,
            "BUNQUEUE_POSTGRES_NAMESPACE": namespace,
        }
    )
    if dsn_or_none:
        env["BUNQUEUE_POSTGRES_URL"] = dsn_or_none
    tokens = tuple(auth_tokens or ())
    if tokens:
        env["AUTH_TOKENS"] = ",".join(tokens)
    env.update({k: str(v) for k, v in (extra_env or {}).items()})
    if log_path is None:
        fd, name = tempfile.mkstemp(prefix=f"bunqueue-{broker_id}-", suffix=".log")
        os.close(fd)
        log_path = Path(name)
    log = open(log_path, "ab")  # noqa: SIM115 - owned by the returned handle
    process = subprocess.Popen(
        [str(bun), str(main)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=str(js_dir()),
    )
    server = ReferenceServer(
        process=process,
        host=host,
        tcp_port=tcp_port,
        http_port=http_port,
        broker_id=broker_id,
        namespace=namespace,
        dsn=dsn_or_none,
        auth_tokens=tokens,
        log_path=log_path,
        _log=log,
    )
    deadline = time.monotonic() + startup_timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            server.stop()
            raise RuntimeError(
                f"bunqueue ({broker_id}) exited with {process.returncode} during startup:\n"
                f"{server.log_tail()}"
            )
        if ping(host, tcp_port, server.token, timeout=1.0):
            return server
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(
        f"bunqueue ({broker_id}) did not answer Ping on {host}:{tcp_port} within "
        f"{startup_timeout} s:\n{server.log_tail()}"
    )
