"""TLS on the TCP and HTTP listeners, and the warning of an open broker (docs/security.md).

The certificate is self-signed, made by the test (openssl) for localhost and
127.0.0.1; every client trusts it explicitly and verifies the host name.  The
pgqueue SDK (``tls_ca``), the official Python client (``tls={"ca_file": ...}``)
and the official TS client (``tls: {caFile}``) run against the TLS port, and
httpx against HTTPS.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import httpx
import pytest

from pgqueue import Queue, Worker
from pgqueue.client.connection import Connection
from pgqueue.errors import ConnectionLost
from tests.acceptance.clients.runner import (
    BunNotInstalledError,
    bun_path,
    run_py_scenario,
    run_ts_scenario,
)
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.acceptance.security_support import make_token, self_signed, unique, write_tokens

JS_DIR = os.environ.get("PGQUEUE_JS_DIR", "/work/main/.cache/js")


def tls_broker(brokers: BrokerFactory, tmp_path: Path, *args: str) -> tuple[BrokerProcess, Path]:
    cert, key = self_signed(tmp_path)
    broker = brokers.start("tls", "--tls-cert", str(cert), "--tls-key", str(key), *args)
    return broker, cert


async def test_the_sdk_speaks_tls_and_a_plain_client_gets_nothing(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    broker, cert = tls_broker(brokers, tmp_path)
    url = f"pgqueue://127.0.0.1:{broker.tcp_port}?tls_ca={cert}"

    async def double(job: object) -> int:
        return 2 * int(job.data["n"])  # type: ignore[attr-defined]

    async with Queue("tls", url) as queue, Worker("tls", double, url):
        job = await queue.add("double", {"n": 21})
        assert await queue.wait_for(job, timeout=30) == 42
    with pytest.raises(ConnectionLost):  # plain TCP on the TLS port: no answer
        await Connection.open("127.0.0.1", broker.tcp_port, timeout=2)
    untrusted = ssl.create_default_context()  # the self-signed cert is not trusted
    with pytest.raises(ConnectionLost, match="CERTIFICATE_VERIFY_FAILED"):
        await Connection.open("127.0.0.1", broker.tcp_port, ssl=untrusted, timeout=5)
    assert "with TLS" in broker.log()


async def test_the_http_api_is_served_over_https_only(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    broker, cert = tls_broker(brokers, tmp_path)
    base = f"127.0.0.1:{broker.http_port}"
    async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=str(cert))) as http:
        ready = await http.get(f"https://{base}/readyz")
        assert ready.status_code == 200
        assert ready.json()["checks"]["auth"]["tls"] is True
        pushed = await http.post(f"https://{base}/queues/q/jobs", json={"name": "x", "data": {}})
        assert pushed.status_code == 200
    async with httpx.AsyncClient() as plain:
        with pytest.raises(httpx.HTTPError):
            await plain.get(f"http://{base}/readyz", timeout=5)


def _client_env(broker: BrokerProcess, cert: Path, token: str) -> dict[str, str]:
    return {
        "PGQ_HOST": "localhost",
        "PGQ_TCP_PORT": str(broker.tcp_port),
        "PGQ_TOKEN": token,
        "PGQ_TLS_CA": str(cert),
        "PGQ_TIMEOUT_MS": "60000",
        "PGQUEUE_JS_DIR": JS_DIR,
    }


def test_the_official_python_client_over_tls_with_a_namespace_token(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    token = make_token("py", unique("ns-py"))
    path = write_tokens(tmp_path / "tokens", token)
    broker, cert = tls_broker(brokers, tmp_path, "--tokens-file", str(path))
    result = run_py_scenario("auth", _client_env(broker, cert, token.secret), timeout=90)
    assert result["ok"] is True


def test_the_official_typescript_client_over_tls_with_a_namespace_token(
    brokers: BrokerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGQUEUE_JS_DIR", JS_DIR)
    try:
        bun_path()
    except BunNotInstalledError as exc:
        if os.environ.get("PGQUEUE_REQUIRE_JS") == "1":
            raise
        pytest.skip(f"the official TS client is not installed ({exc})")
    token = make_token("ts", unique("ns-ts"))
    path = write_tokens(tmp_path / "tokens", token)
    broker, cert = tls_broker(brokers, tmp_path, "--tokens-file", str(path))
    result = run_ts_scenario("auth", _client_env(broker, cert, token.secret), timeout=90)
    assert result["ok"] is True


async def test_a_broker_on_a_public_address_without_a_token_warns_loudly(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("open", "--host", "0.0.0.0")
    log = broker.log()
    warning = "WARNING: listening on 0.0.0.0 with no token"
    assert f"pgqueue: {warning}" in log  # stderr, before anything else
    assert f"WARNING pgqueue.broker: {warning}" in log  # the log
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{broker.http_port}") as http:
        ready = (await http.get("/readyz")).json()
        assert "auth" in ready["warnings"]
        assert ready["checks"]["auth"]["warning"].startswith(warning)
        assert "auth" in (await http.get("/health")).json()["warnings"]


async def test_a_broker_on_loopback_or_with_tokens_does_not_warn(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    path = write_tokens(tmp_path / "tokens", make_token("t", "ns"))
    for broker in (
        brokers.start("local"),
        brokers.start("guarded", "--host", "0.0.0.0", "--tokens-file", str(path)),
    ):
        assert "WARNING: listening" not in broker.log()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{broker.http_port}") as http:
            assert "auth" not in (await http.get("/readyz")).json()["warnings"]
