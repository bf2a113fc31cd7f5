#!/usr/bin/env python3
"""The docker-compose topology without Docker: PostgreSQL, N brokers, HAProxy.

    scripts/cluster.py up [--brokers 3] [--dsn URL] [-- pgqueue serve flags ...]
    scripts/cluster.py status [--json]
    scripts/cluster.py kill N [--signal TERM]   # SIGKILL by default: no drain
    scripts/cluster.py stop N                   # SIGTERM: drain, wait for the exit
    scripts/cluster.py restart N
    scripts/cluster.py logs N|haproxy [--lines 40]
    scripts/cluster.py down

PostgreSQL is ``--dsn`` (or ``$PGQUEUE_DSN``), else an embedded server whose data
lives in the run directory.  The brokers (``pgqueue serve``, ids ``broker1`` ...,
one namespace) listen on 127.0.0.1; HAProxy (Debian's ``haproxy``) listens on
``--tcp-port`` (6789) and ``--http-port`` (6790), balances TCP by least
connections and health-checks every broker on ``GET /readyz``.  Its configuration
is the one of ``deploy/haproxy.cfg`` (``scripts/haproxy_config.py``), plus a
stats socket in the run directory.

Everything started is recorded in ``<run dir>/cluster.json`` (``--run-dir``,
``$PGQUEUE_CLUSTER_DIR``, default ``<pgqueue data dir>/cluster``), so each
subcommand works from its own invocation; logs are ``<run dir>/<name>.log``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue.embedded import EmbeddedPostgres, default_data_dir  # noqa: E402
from scripts.haproxy_config import BrokerAddress, HealthCheck, render  # noqa: E402
from scripts.haproxy_stats import ServerStat, show_stat  # noqa: E402

STATE_FILE = "cluster.json"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 45.0


class ClusterError(Exception):
    """A subcommand that cannot be carried out; the message says why."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def process_alive(pid: int | None, marker: str = "") -> bool:
    """Whether ``pid`` runs (not a zombie) and its command line contains ``marker``
    (so that a reused pid is not mistaken for ours)."""
    if not pid:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X") and marker in cmdline


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def http_status(url: str, timeout: float = 2.0) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return None


@dataclass
class BrokerState:
    number: int
    broker_id: str
    tcp_port: int
    http_port: int
    log: str
    pid: int | None = None

    def alive(self) -> bool:
        return process_alive(self.pid, f"--broker-id {self.broker_id} ")

    def ready(self) -> bool:
        return http_status(f"http://127.0.0.1:{self.http_port}/readyz") == 200


@dataclass
class ClusterState:
    run_dir: str
    dsn: str
    namespace: str
    embedded_data_dir: str | None
    tcp_port: int
    http_port: int
    bind: str
    check: dict[str, int]
    serve_args: list[str]
    brokers: list[BrokerState] = field(default_factory=list)
    haproxy_pid: int | None = None

    @property
    def path(self) -> Path:
        return Path(self.run_dir)

    @property
    def stats_socket(self) -> str:
        return str(self.path / "haproxy.sock")

    @property
    def haproxy_config(self) -> str:
        return str(self.path / "haproxy.cfg")

    def save(self) -> None:
        tmp = self.path / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        tmp.replace(self.path / STATE_FILE)

    @classmethod
    def load(cls, run_dir: Path) -> ClusterState:
        try:
            raw = json.loads((run_dir / STATE_FILE).read_text())
        except FileNotFoundError:
            raise ClusterError(f"no cluster in {run_dir} (run `up` first)") from None
        raw["brokers"] = [BrokerState(**b) for b in raw["brokers"]]
        return cls(**raw)

    def broker(self, number: int) -> BrokerState:
        for broker in self.brokers:
            if broker.number == number:
                return broker
        raise ClusterError(f"no broker {number}: this cluster has brokers 1..{len(self.brokers)}")


class Cluster:
    """The processes of one run directory."""

    def __init__(self, state: ClusterState, out: Callable[[str], None] = print) -> None:
        self.state = state
        self.out = out

    # -- up and down ----------------------------------------------------------------

    @classmethod
    def up(
        cls,
        run_dir: Path,
        *,
        brokers: int,
        dsn: str | None,
        namespace: str,
        tcp_port: int,
        http_port: int,
        broker_port_base: int,
        bind: str,
        check: HealthCheck,
        serve_args: Sequence[str],
        out: Callable[[str], None] = print,
    ) -> Cluster:
        if brokers < 1:
            raise ClusterError("--brokers must be at least 1")
        if (run_dir / STATE_FILE).exists():
            raise ClusterError(f"a cluster is already recorded in {run_dir}: run `down` first")
        if shutil.which("haproxy") is None:
            raise ClusterError("haproxy is not installed (Debian: apt-get install -y haproxy)")
        run_dir.mkdir(parents=True, exist_ok=True)
        embedded_dir = None
        if not dsn:
            embedded_dir = str(run_dir / "postgres")
            out(f"postgres: embedded, data in {embedded_dir}")
            dsn = EmbeddedPostgres(Path(embedded_dir), cleanup=None).start()
        out(f"postgres: {dsn}")
        migrated = subprocess.run(
            [sys.executable, "-m", "pgqueue", "migrate", "--dsn", dsn],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if migrated.returncode != 0:
            raise ClusterError(f"pgqueue migrate failed:\n{migrated.stderr[-4000:]}")
        out(f"postgres: {migrated.stdout.strip()}")
        state = ClusterState(
            run_dir=str(run_dir),
            dsn=dsn,
            namespace=namespace,
            embedded_data_dir=embedded_dir,
            tcp_port=tcp_port,
            http_port=http_port,
            bind=bind,
            check=asdict(check),
            serve_args=list(serve_args),
        )
        for n in range(1, brokers + 1):
            if broker_port_base:
                ports = broker_port_base + 2 * (n - 1), broker_port_base + 2 * (n - 1) + 1
            else:
                ports = 0, 0  # picked right before the broker starts
            log = str(run_dir / f"broker{n}.log")
            state.brokers.append(BrokerState(n, f"broker{n}", ports[0], ports[1], log))
        state.save()
        cluster = cls(state, out)
        try:
            for broker in state.brokers:
                cluster.start_broker(broker)
            cluster.start_haproxy()
        except BaseException:
            cluster.down()
            raise
        return cluster

    def down(self) -> None:
        for broker in self.state.brokers:
            if broker.alive():
                self.stop(broker.number)
        self._stop_haproxy()
        if self.state.embedded_data_dir:
            server = EmbeddedPostgres(Path(self.state.embedded_data_dir), cleanup=None)
            server.start()
            server.stop_server()
            self.out(f"postgres: stopped (data kept in {self.state.embedded_data_dir})")
        (self.state.path / STATE_FILE).unlink(missing_ok=True)

    # -- brokers --------------------------------------------------------------------

    def broker_command(self, broker: BrokerState) -> list[str]:
        return [
            sys.executable,
            "-m",
            "pgqueue",
            "--log-level",
            "INFO",
            "serve",
            "--dsn",
            self.state.dsn,
            "--namespace",
            self.state.namespace,
            "--broker-id",
            broker.broker_id,
            "--host",
            "127.0.0.1",
            "--tcp-port",
            str(broker.tcp_port),
            "--http-port",
            str(broker.http_port),
            *self.state.serve_args,
        ]

    def start_broker(self, broker: BrokerState) -> None:
        if broker.alive():
            raise ClusterError(f"broker {broker.number} already runs (pid {broker.pid})")
        if not broker.tcp_port:
            broker.tcp_port, broker.http_port = free_port(), free_port()
        with open(broker.log, "ab") as log:
            process = subprocess.Popen(
                self.broker_command(broker),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                start_new_session=True,
            )
        broker.pid = process.pid
        self.state.save()

        def ready() -> bool:
            if process.poll() is not None:
                raise ClusterError(
                    f"broker {broker.number} exited with {process.returncode}:\n"
                    + tail(broker.log, 20)
                )
            return broker.ready()

        wait_until(ready, START_TIMEOUT_S, f"broker {broker.number} to be ready")
        self.out(
            f"broker{broker.number}: pid {broker.pid}, TCP 127.0.0.1:{broker.tcp_port}, "
            f"HTTP 127.0.0.1:{broker.http_port}, log {broker.log}"
        )

    def kill(self, number: int, signum: signal.Signals = signal.SIGKILL) -> None:
        broker = self.state.broker(number)
        if not broker.alive():
            raise ClusterError(f"broker {number} is not running")
        assert broker.pid is not None
        os.kill(broker.pid, signum)
        self.out(f"broker{number}: sent {signum.name} to pid {broker.pid}")

    def stop(self, number: int) -> None:
        """SIGTERM (the drain) and wait for the process to end."""
        broker = self.state.broker(number)
        if not broker.alive():
            raise ClusterError(f"broker {number} is not running")
        self.kill(number, signal.SIGTERM)
        wait_until(lambda: not broker.alive(), STOP_TIMEOUT_S, f"broker {number} to drain")
        self.out(f"broker{number}: drained and stopped")

    def restart(self, number: int) -> None:
        broker = self.state.broker(number)
        if broker.alive():
            self.stop(number)
        self.start_broker(broker)

    # -- haproxy --------------------------------------------------------------------

    def health_check(self) -> HealthCheck:
        return HealthCheck(**self.state.check)

    def start_haproxy(self) -> None:
        """Start HAProxy; free ports (0) are picked here, again if one was taken meanwhile."""
        s = self.state
        auto = not s.tcp_port, not s.http_port
        for attempt in range(5):
            if auto[0]:
                s.tcp_port = free_port()
            if auto[1]:
                s.http_port = free_port()
            try:
                self._start_haproxy()
                return
            except ClusterError as exc:
                if not any(auto) or "Address already in use" not in str(exc) or attempt == 4:
                    raise

    def _start_haproxy(self) -> None:
        s = self.state
        config = render(
            [BrokerAddress(b.broker_id, "127.0.0.1", b.tcp_port, b.http_port) for b in s.brokers],
            tcp_bind=f"{s.bind}:{s.tcp_port}",
            http_bind=f"{s.bind}:{s.http_port}",
            check=self.health_check(),
            stats_socket=s.stats_socket,
            maxconn=haproxy_maxconn(),
            title=f"scripts/cluster.py in {s.run_dir}",
        )
        Path(s.haproxy_config).write_text(config)
        check = subprocess.run(
            ["haproxy", "-c", "-q", "-f", s.haproxy_config], capture_output=True, text=True
        )
        if check.returncode != 0:
            raise ClusterError(f"haproxy refused {s.haproxy_config}:\n{check.stderr}")
        log_path = s.path / "haproxy.log"
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                ["haproxy", "-db", "-f", s.haproxy_config],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        s.haproxy_pid = process.pid
        s.save()

        def routing() -> bool:
            if process.poll() is not None:
                raise ClusterError(f"haproxy exited:\n{tail(str(log_path), 20)}")
            with contextlib.suppress(OSError):
                servers = show_stat(s.stats_socket)
                return bool(servers) and all(stat.up for stat in servers)
            return False

        wait_until(routing, START_TIMEOUT_S, "haproxy to see every broker up")
        self.out(
            f"haproxy: pid {process.pid}, TCP {s.bind}:{s.tcp_port}, HTTP {s.bind}:{s.http_port}"
            f" (leastconn, /readyz every {self.health_check().inter_ms} ms),"
            f" stats socket {s.stats_socket}, log {log_path}"
        )

    def _stop_haproxy(self) -> None:
        pid = self.state.haproxy_pid
        if process_alive(pid, self.state.haproxy_config):
            assert pid is not None
            os.kill(pid, signal.SIGTERM)
            wait_until(lambda: not process_alive(pid, "haproxy"), 10, "haproxy to stop")
            self.out("haproxy: stopped")

    def stats(self) -> list[ServerStat]:
        return show_stat(self.state.stats_socket)

    # -- status ---------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        s = self.state
        try:
            seen = {(st.backend, st.server): st for st in self.stats()}
        except OSError:
            seen = {}
        brokers = []
        for b in s.brokers:
            tcp = seen.get(("brokers_tcp", b.broker_id))
            brokers.append(
                {
                    "number": b.number,
                    "broker_id": b.broker_id,
                    "pid": b.pid,
                    "running": b.alive(),
                    "ready": b.ready(),
                    "tcp": f"127.0.0.1:{b.tcp_port}",
                    "http": f"127.0.0.1:{b.http_port}",
                    "haproxy": tcp.status if tcp else "unknown",
                    "sessions": tcp.current_sessions if tcp else None,
                    "log": b.log,
                }
            )
        return {
            "run_dir": s.run_dir,
            "dsn": s.dsn,
            "namespace": s.namespace,
            "haproxy": {
                "pid": s.haproxy_pid,
                "running": process_alive(s.haproxy_pid, s.haproxy_config),
                "tcp": f"{s.bind}:{s.tcp_port}",
                "http": f"{s.bind}:{s.http_port}",
                "stats_socket": s.stats_socket,
            },
            "brokers": brokers,
        }


def haproxy_maxconn() -> int:
    """As many connections as this process's file limit lets HAProxy hold (two
    descriptors each), at most the 20,000 of deploy/haproxy.cfg."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = hard if hard != resource.RLIM_INFINITY else soft
    return max(256, min(20_000, (limit - 200) // 2))


def tail(path: str, lines: int) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def format_status(status: dict[str, Any]) -> str:
    lb = status["haproxy"]
    rows = [
        f"cluster in {status['run_dir']} (namespace {status['namespace']!r})",
        f"postgres: {status['dsn']}",
        f"haproxy:  {'running' if lb['running'] else 'NOT RUNNING'} pid {lb['pid']},"
        f" TCP {lb['tcp']}, HTTP {lb['http']}",
    ]
    for b in status["brokers"]:
        state = "running" if b["running"] else "stopped"
        ready = "ready" if b["ready"] else "not ready"
        rows.append(
            f"broker{b['number']}: {state}, {ready}, pid {b['pid']}, TCP {b['tcp']},"
            f" HTTP {b['http']}, haproxy {b['haproxy']}, sessions {b['sessions']}"
        )
    return "\n".join(rows)


def default_run_dir() -> Path:
    configured = os.environ.get("PGQUEUE_CLUSTER_DIR")
    return Path(configured) if configured else default_data_dir().parent / "cluster"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="scripts/cluster.py",
        description="PostgreSQL, N pgqueue brokers and HAProxy on this machine.",
        epilog="Arguments after `--` (with `up`) go to every `pgqueue serve`.",
    )
    p.add_argument("--run-dir", type=Path, default=None, help="state and logs (see module doc)")
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start PostgreSQL (unless --dsn), the brokers and HAProxy")
    up.add_argument("--brokers", type=int, default=3)
    up.add_argument("--dsn", default=os.environ.get("PGQUEUE_DSN"), help="else embedded")
    up.add_argument("--namespace", default="default")
    up.add_argument("--tcp-port", type=int, default=6789, help="HAProxy TCP port (0: free)")
    up.add_argument("--http-port", type=int, default=6790, help="HAProxy HTTP port (0: free)")
    up.add_argument(
        "--broker-port-base",
        type=int,
        default=16789,
        help="broker N listens on base+2(N-1) (TCP) and the next port (HTTP); 0: free ports",
    )
    up.add_argument("--bind", default="127.0.0.1", help="HAProxy listen address")
    up.add_argument("--check-interval-ms", type=int, default=2000)
    up.add_argument("--check-fall", type=int, default=2)
    up.add_argument("--check-rise", type=int, default=2)
    sub.add_parser("down", help="stop everything (brokers drain first)")
    status = sub.add_parser("status", help="processes, readiness, HAProxy's view")
    status.add_argument("--json", action="store_true")
    kill = sub.add_parser("kill", help="signal broker N (SIGKILL unless --signal)")
    kill.add_argument("number", type=int)
    kill.add_argument("--signal", default="KILL", choices=["KILL", "TERM", "STOP", "CONT"])
    stop = sub.add_parser("stop", help="drain broker N (SIGTERM) and wait for it to exit")
    stop.add_argument("number", type=int)
    restart = sub.add_parser("restart", help="stop broker N if it runs, start it again")
    restart.add_argument("number", type=int)
    logs = sub.add_parser("logs", help="the end of broker N's log (or haproxy's)")
    logs.add_argument("target", help="a broker number or `haproxy`")
    logs.add_argument("--lines", type=int, default=40)
    return p


def run(argv: Sequence[str]) -> int:
    argv = list(argv)
    serve_args: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, serve_args = argv[:at], argv[at + 1 :]
    args = parser().parse_args(argv)
    run_dir = (args.run_dir or default_run_dir()).resolve()
    if args.command == "up":
        check = HealthCheck(args.check_interval_ms, args.check_fall, args.check_rise)
        Cluster.up(
            run_dir,
            brokers=args.brokers,
            dsn=args.dsn,
            namespace=args.namespace,
            tcp_port=args.tcp_port,
            http_port=args.http_port,
            broker_port_base=args.broker_port_base,
            bind=args.bind,
            check=check,
            serve_args=serve_args,
        )
        print(f"cluster up; state in {run_dir / STATE_FILE}")
        return 0
    if serve_args:
        raise ClusterError("arguments after `--` are for `up` only")
    cluster = Cluster(ClusterState.load(run_dir))
    if args.command == "down":
        cluster.down()
    elif args.command == "status":
        status = cluster.status()
        print(json.dumps(status, indent=2) if args.json else format_status(status))
    elif args.command == "kill":
        cluster.kill(args.number, signal.Signals[f"SIG{args.signal}"])
    elif args.command == "stop":
        cluster.stop(args.number)
    elif args.command == "restart":
        cluster.restart(args.number)
    elif args.command == "logs":
        if args.target == "haproxy":
            path = str(cluster.state.path / "haproxy.log")
        elif args.target.isdigit():
            path = cluster.state.broker(int(args.target)).log
        else:
            raise ClusterError(f"logs of what? a broker number or `haproxy`, not {args.target!r}")
        print(tail(path, args.lines))
    return 0


def main() -> int:
    try:
        return run(sys.argv[1:])
    except (ClusterError, ValueError) as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
