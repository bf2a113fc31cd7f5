"""The first run, without surprises: one clear line instead of a traceback, what to
do next printed at start, logs a worker's operator can read (issue 14)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgqueue.client import Queue
from pgqueue.embedded import HANDLES_FILE, dsn_for_database
from pgqueue.testing import eventually
from tests.acceptance.cli_support import cli_env, run_cli_process
from tests.acceptance.conftest import ROOT, BrokerFactory, free_port


class Serving:
    """A ``pgqueue`` process whose output is read line by line."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []

    async def read_until(self, words: str, timeout: float = 90) -> str:
        assert self.process.stdout is not None
        async with asyncio.timeout(timeout):
            while True:
                raw = await self.process.stdout.readline()
                if not raw:
                    raise AssertionError(f"exited before {words!r}: {self.lines}")
                self.lines.append(raw.decode(errors="replace").rstrip())
                if words in self.lines[-1]:
                    return self.lines[-1]

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), 30)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


async def start(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> Serving:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pgqueue",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=cli_env(env),
        cwd=str(cwd),
    )
    return Serving(process)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, lines
    assert "Traceback" not in text and "ERROR" not in text
    return lines[0]


async def test_a_worker_given_a_wrong_scheme_exits_at_once_with_one_line(
    tmp_path: Path,
) -> None:
    (tmp_path / "first_run_tasks.py").write_text("def handle(job):\n    return 1\n")
    ran = await run_cli_process(
        "worker",
        "first_run_tasks:handle",
        "--queue",
        "q",
        "--connection",
        "redis://localhost:6379",
        cwd=str(tmp_path),
        timeout=30,
    )
    assert ran.code == 1
    assert "connection must start with postgresql://" in one_line(ran.err)


async def test_a_port_in_use_is_refused_in_one_line_with_exit_code_1(db_dsn: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = await run_cli_process(
            "serve", "--dsn", db_dsn, "--tcp-port", str(port), "--http-port", "0", timeout=60
        )
    assert ran.code == 1
    assert f"TCP port {port} on 127.0.0.1 is already in use" in one_line(ran.err)


async def test_a_duplicate_broker_id_is_refused_in_one_line_with_exit_code_1(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    brokers.start("twin")
    ran = await run_cli_process(
        "serve",
        "--dsn",
        db_dsn,
        "--namespace",
        namespace,
        "--broker-id",
        "twin",
        "--tcp-port",
        "0",
        "--http-port",
        "0",
        timeout=60,
    )
    assert ran.code == 1
    assert 'broker id "twin" is already active' in one_line(ran.err)


async def test_a_missing_database_is_named_and_created_when_asked(pg_server_dsn: str) -> None:
    name = f"app_{uuid.uuid4().hex[:8]}"
    dsn = dsn_for_database(pg_server_dsn, name)
    refused = await run_cli_process("migrate", "--dsn", dsn, timeout=60)
    assert refused.code == 1
    assert f'database "{name}" does not exist' in one_line(refused.err)
    assert "--create-db" in refused.err
    try:
        created = await run_cli_process("migrate", "--dsn", dsn, "--create-db", timeout=120)
        assert created.code == 0, created.err
        assert "schema at revision" in created.out
    finally:
        with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def test_serve_says_how_to_stop_and_binds_loopback_without_a_token(
    db_dsn: str, namespace: str
) -> None:
    broker = await start(
        "serve",
        "--dsn",
        db_dsn,
        "--namespace",
        namespace,
        "--tcp-port",
        "0",
        "--http-port",
        "0",
    )
    try:
        line = await broker.read_until("serving namespace")
        assert "TCP on 127.0.0.1:" in line
        await broker.read_until("Ctrl-C or SIGTERM drains")
        assert not any("WARNING" in seen for seen in broker.lines)
    finally:
        await broker.stop()
    assert broker.process.returncode == 0


async def test_serve_warns_when_it_listens_beyond_loopback_without_a_token(
    db_dsn: str, namespace: str
) -> None:
    broker = await start(
        "serve",
        "--dsn",
        db_dsn,
        "--namespace",
        namespace,
        "--host",
        "0.0.0.0",
        "--tcp-port",
        "0",
        "--http-port",
        "0",
    )
    try:
        warning = await broker.read_until("WARNING")
        assert "listening on 0.0.0.0 with no token (--auth-token or --tokens-file)" in warning
    finally:
        await broker.stop()


FLAKY = textwrap.dedent(
    """
    def handle(job):
        if job.data.get("fail"):
            raise ValueError("cannot handle " + str(job.data["fail"]))
        return "ok"
    """
)


async def test_the_worker_logs_failures_with_their_traceback_and_each_job_at_debug(
    brokers: BrokerFactory, namespace: str, tmp_path: Path
) -> None:
    broker = brokers.start("logs")
    connection = f"pgqueue://{broker.address}"
    queue_name = f"q-{uuid.uuid4().hex[:8]}"
    (tmp_path / "flaky_tasks.py").write_text(FLAKY)
    worker = await start(
        "worker",
        "flaky_tasks:handle",
        "--queue",
        queue_name,
        "--connection",
        connection,
        "--log-level",
        "DEBUG",
        "--log-format",
        "json",
        cwd=tmp_path,
    )
    try:
        await worker.read_until("processing queue")
        async with Queue(queue_name, connection) as queue:
            good = await queue.add("good", {})
            bad = await queue.add("bad", {"fail": 7}, attempts=1)
            records: list[dict[str, Any]] = []

            async def both_logged() -> bool:
                line = await worker.read_until('"level":')
                records.append(json.loads(line))
                failed = any(r["level"] == "WARNING" for r in records)
                done = any(f"job {good.id} (good) completed" in r["message"] for r in records)
                return failed and done

            await eventually(both_logged, timeout=30)
            await eventually(lambda: _both_done(queue, good.id, bad.id), timeout=30)
    finally:
        await worker.stop()
    [failure] = [r for r in records if r["level"] == "WARNING"]
    assert failure["job_id"] == bad.id and failure["queue"] == queue_name
    assert "ValueError: cannot handle 7" in failure["message"]
    assert "Traceback" in failure["exc"] and '  File "' in failure["exc"]
    debug = [r["message"] for r in records if r["level"] == "DEBUG" and r.get("job_id")]
    assert any(f"job {good.id} (good) started" in m for m in debug)
    assert any(f"job {good.id} (good) completed" in m for m in debug)


async def _both_done(queue: Queue, *ids: str) -> bool:
    return {await queue.get_state(i) for i in ids} == {"completed", "failed"}


async def test_serve_without_a_dsn_names_its_data_dir_and_dsn_and_a_kill_9_stops_the_server(
    tmp_path: Path,
) -> None:
    data_root = tmp_path / "data"
    env = {"PGQUEUE_DATA_DIR": str(data_root)}
    migrated = await run_cli_process("migrate", env=env, timeout=180)
    assert migrated.code == 0, migrated.err
    data_dir = data_root / "postgres"
    assert f"embedded PostgreSQL in {data_dir} (chosen by $PGQUEUE_DATA_DIR)" in migrated.out
    assert "schema at revision" in migrated.out

    broker = await start(
        "serve", "--tcp-port", str(free_port()), "--http-port", str(free_port()), env=env
    )
    try:
        await broker.read_until("chosen by $PGQUEUE_DATA_DIR")
        dsn_line = await broker.read_until("embedded database: postgresql://")
        await broker.read_until("serving namespace")
        await broker.read_until("Ctrl-C or SIGTERM")
        dsn = dsn_line.split("embedded database: ", 1)[1].strip()
        with psycopg.connect(dsn) as conn:  # the printed DSN reaches the database
            assert conn.execute("SELECT 1").fetchone() == (1,)
        postmaster = (data_dir / "postmaster.pid").read_text().split()[0]
        broker.process.kill()  # kill -9: no atexit, no cleanup of its own
        await broker.process.wait()
        await eventually(lambda: not _alive(int(postmaster)), timeout=60)
        handles = json.loads((data_dir / HANDLES_FILE).read_text())
        assert broker.process.pid not in handles
    finally:
        await broker.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.mark.parametrize(
    ("env", "flag", "expected", "chosen_by"),
    [
        ({"PGQUEUE_DATA_DIR": "/srv/q", "XDG_DATA_HOME": "/x"}, "/flag", "/flag", "--data-dir"),
        (
            {"PGQUEUE_DATA_DIR": "/srv/q", "XDG_DATA_HOME": "/x"},
            None,
            "/srv/q/postgres",
            "$PGQUEUE_DATA_DIR",
        ),
        ({"XDG_DATA_HOME": "/x"}, None, "/x/pgqueue/postgres", "$XDG_DATA_HOME"),
    ],
)
def test_the_data_dir_follows_the_flag_then_pgqueue_data_dir_then_xdg(
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    flag: str | None,
    expected: str,
    chosen_by: str,
) -> None:
    from pgqueue.embedded import choose_data_dir

    for name in ("PGQUEUE_DATA_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert choose_data_dir(flag) == (Path(expected), chosen_by)
