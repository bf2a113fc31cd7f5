"""The official bunqueue clients, unchanged, against two pgqueue brokers.

TypeScript: npm ``bunqueue`` 2.9.5 (``bunqueue/client``) on the npm ``bun`` runtime;
Python: PyPI ``bunqueue-client`` 0.1.5.  Each scenario script (tests/acceptance/clients)
drives Queue / Worker / QueueEvents / FlowProducer and checks what it observes; the
producer talks to one broker, the workers and event listeners to the other.

``scripts/js/install.sh`` installs the JS side; ``scripts/test`` runs it and sets
``PGQUEUE_REQUIRE_JS=1`` so that a missing install fails instead of skipping.
"""

from __future__ import annotations

import os

import psycopg
import pytest

from tests.acceptance.clients.runner import (
    BunNotInstalledError,
    bun_path,
    run_py_scenario,
    run_ts_scenario,
)
from tests.acceptance.conftest import BrokerFactory

TS_SCENARIOS = [
    "add_worker",
    "events",
    "flow",
    "flow_edits",
    "dedup",
    "retry_dlq",
    "data_order",
    "no_locks",
    "schedulers",
    "limits",
]
PY_SCENARIOS = ["add_worker", "flow", "dedup", "retry_dlq", "schedulers", "limits"]
TOKEN = "client-secret"


@pytest.fixture(scope="module")
def bun() -> str:
    try:
        return str(bun_path())
    except BunNotInstalledError as exc:
        if os.environ.get("PGQUEUE_REQUIRE_JS") == "1":
            raise
        pytest.skip(f"the official TS client is not installed ({exc})")


def _env(brokers: BrokerFactory, **extra: str) -> dict[str, str]:
    a = brokers.start("a", *_token_args(extra), http=False)
    b = brokers.start("b", *_token_args(extra), http=False)
    return {
        "PGQ_HOST": "127.0.0.1",
        "PGQ_TCP_PORT": str(a.tcp_port),
        "PGQ_TCP_PORT2": str(b.tcp_port),
        "PGQ_TIMEOUT_MS": "60000",
        **extra,
    }


def _token_args(extra: dict[str, str]) -> tuple[str, ...]:
    token = extra.get("PGQ_TOKEN")
    return ("--auth-token", f"clients={token}") if token else ()


@pytest.mark.parametrize("scenario", TS_SCENARIOS)
def test_the_typescript_client(scenario: str, bun: str, brokers: BrokerFactory) -> None:
    result = run_ts_scenario(scenario, _env(brokers), timeout=90)
    assert result["ok"] is True


@pytest.mark.parametrize("scenario", PY_SCENARIOS)
def test_the_python_client(scenario: str, brokers: BrokerFactory) -> None:
    result = run_py_scenario(scenario, _env(brokers), timeout=90)
    assert result["ok"] is True


def test_the_typescript_client_authenticates(bun: str, brokers: BrokerFactory) -> None:
    assert run_ts_scenario("auth", _env(brokers, PGQ_TOKEN=TOKEN), timeout=90)["ok"] is True


def test_the_python_client_authenticates(brokers: BrokerFactory) -> None:
    assert run_py_scenario("auth", _env(brokers, PGQ_TOKEN=TOKEN), timeout=90)["ok"] is True


@pytest.mark.parametrize("language", ["ts", "py"])
def test_every_job_is_processed_exactly_once_by_the_official_worker(
    language: str,
    brokers: BrokerFactory,
    db_dsn: str,
    namespace: str,
    request: pytest.FixtureRequest,
) -> None:
    if language == "ts":
        request.getfixturevalue("bun")
    env = _env(brokers, PGQ_N="3000", PGQ_CHUNK="500")
    run = run_ts_scenario if language == "ts" else run_py_scenario
    result = run("throughput", env, timeout=120)
    assert result["ok"] is True
    assert result["duplicates"] == 0
    with psycopg.connect(db_dsn) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT id) FROM pgqueue_finished"
            " WHERE namespace = %s AND state = 'completed'",
            (namespace,),
        ).fetchone()
    assert row == (3000, 3000)
