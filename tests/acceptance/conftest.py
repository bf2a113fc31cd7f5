"""Real broker processes on free ports, sharing one migrated database.

``brokers`` starts ``python -m pgqueue serve`` subprocesses (the same entry
point users run) and stops them with SIGTERM at the end of the test.  Tests
talk to them over real sockets: our own protocol client
(:mod:`tests.acceptance.wire_client`), httpx, and the official bunqueue clients.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


READY_LINE = b"serving namespace"


def _tee(process: subprocess.Popen[bytes], log_path: Path, ready: threading.Event) -> None:
    """Copy the broker's output to its log; signal when it says it is serving."""
    assert process.stdout is not None
    with open(log_path, "ab") as log:
        for line in process.stdout:
            log.write(line)
            log.flush()
            if READY_LINE in line:
                ready.set()
    ready.set()


@dataclass
class BrokerProcess:
    """One running broker."""

    name: str
    tcp_port: int
    http_port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    extra: list[str] = field(default_factory=list)
    tee: threading.Thread | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.tcp_port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def terminate(self, timeout: float = 30) -> int:
        """SIGTERM (the drain path) and wait; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(10)
        self._release_pipe()
        return code

    def kill(self) -> None:
        """SIGKILL: no drain, nothing released."""
        self.process.kill()
        self.process.wait(10)
        self._release_pipe()

    def _release_pipe(self) -> None:
        if self.tee is not None:
            self.tee.join(10)
        if self.process.stdout is not None:
            self.process.stdout.close()


class BrokerFactory:
    def __init__(self, dsn: str, namespace: str, tmp: Path) -> None:
        self.dsn = dsn
        self.namespace = namespace
        self.tmp = tmp
        self.started: list[BrokerProcess] = []

    def start(
        self,
        name: str,
        *args: str,
        http: bool = True,
        env: dict[str, str] | None = None,
        tcp_port: int | None = None,
    ) -> BrokerProcess:
        tcp_port = tcp_port or free_port()
        http_port = free_port()
        log_path = self.tmp / f"broker-{name}-{tcp_port}.log"
        command = [
            sys.executable,
            "-m",
            "pgqueue",
            "--log-level",
            "INFO",
            "serve",
            "--dsn",
            self.dsn,
            "--namespace",
            self.namespace,
            "--broker-id",
            name,
            "--host",
            "127.0.0.1",
            "--tcp-port",
            str(tcp_port),
            "--http-port",
            str(http_port),
            *([] if http else ["--no-http"]),
            *args,
        ]
        process_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=process_env, cwd=ROOT
        )
        broker = BrokerProcess(name, tcp_port, http_port, process, log_path, list(args))
        self.started.append(broker)
        ready = threading.Event()
        broker.tee = threading.Thread(target=_tee, args=(process, log_path, ready), daemon=True)
        broker.tee.start()
        if not ready.wait(60) or process.poll() is not None:
            broker.kill()
            raise RuntimeError(f"broker {name} did not start:\n{broker.log()}")
        return broker

    def stop_all(self) -> None:
        for broker in self.started:
            with contextlib.suppress(Exception):
                broker.terminate(timeout=15)


@pytest.fixture
def brokers(db_dsn: str, namespace: str) -> Iterator[BrokerFactory]:
    tmp = Path(tempfile.mkdtemp(prefix="pgqueue-brokers-"))
    factory = BrokerFactory(db_dsn, namespace, tmp)
    try:
        yield factory
    finally:
        factory.stop_all()
