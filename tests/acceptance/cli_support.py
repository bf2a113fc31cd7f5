"""Running ``pgqueue ...`` as an operator would, on the test's connection (embedded
or brokers): its exit code, stdout and stderr, with no terminal on stdin.

:func:`run_cli` calls the entry point :func:`pgqueue.cli.main.main` in a thread of
this process with its own stdin, stdout, stderr and environment (click's
isolation): the same code path as the ``pgqueue`` script without paying the
interpreter start for every command.  :func:`run_cli_process` runs the real
``python -m pgqueue`` process (exit codes, signals, first-run messages).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.acceptance.conftest import ROOT

CLEAN_ENV = ("PGQUEUE_CONNECTION", "PGQUEUE_DSN", "PGQUEUE_TOKEN", "PGQUEUE_NAMESPACE")


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV}
    return {**env, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", **(extra or {})}


_CLI_LOCK = asyncio.Lock()  # isolation swaps the process-wide stdout: one at a time


async def run_cli(
    *args: str,
    connection: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> Ran:
    """``pgqueue ARGS --connection CONNECTION`` run through the entry point."""
    from click.testing import CliRunner

    from pgqueue.cli.main import main

    argv = [*args, *(["--connection", connection] if connection is not None else [])]
    unset: dict[str, str | None] = dict.fromkeys(CLEAN_ENV)
    runner = CliRunner()

    def call() -> Ran:
        with runner.isolation(input=None, env={**unset, **(env or {})}) as (out, err, _):
            code = main(argv)
            sys.stdout.flush()
            sys.stderr.flush()
            return Ran(code, out.getvalue().decode(), err.getvalue().decode())

    async with _CLI_LOCK:
        return await asyncio.wait_for(asyncio.to_thread(call), timeout)


async def run_cli_process(
    *args: str,
    connection: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
    cwd: str | None = None,
) -> Ran:
    """``pgqueue ARGS --connection CONNECTION`` with no stdin (as in a script or CI)."""
    command = [sys.executable, "-m", "pgqueue", *args]
    if connection is not None:
        command += ["--connection", connection]
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(env),
        cwd=cwd or str(ROOT),
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(errors="replace"), err.decode(errors="replace"))
