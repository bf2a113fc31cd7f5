"""The HAProxy configuration shared by docker-compose and scripts/cluster.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from scripts.haproxy_config import BrokerAddress, HealthCheck, compose_config, render

ROOT = Path(__file__).resolve().parents[2]


def test_the_compose_load_balancer_config_is_the_generated_one() -> None:
    assert (ROOT / "deploy" / "haproxy.cfg").read_text() == compose_config(), (
        "regenerate it: python -m scripts.haproxy_config > deploy/haproxy.cfg"
    )


def test_tcp_is_balanced_by_least_connections_and_checked_on_readyz() -> None:
    text = render([BrokerAddress("b1", "127.0.0.1", 7001, 7002)], check=HealthCheck(500, 3, 1))
    tcp = text.split("backend brokers_tcp", 1)[1].split("frontend", 1)[0]
    assert "balance leastconn" in tcp
    assert "option httpchk GET /readyz" in tcp
    assert "server b1 127.0.0.1:7001 check inter 500ms fall 3 rise 1 port 7002" in tcp
    assert HealthCheck(500, 3, 1).detection_ms == 2000


def test_a_config_without_brokers_or_with_duplicate_names_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one broker"):
        render([])
    with pytest.raises(ValueError, match="distinct"):
        render([BrokerAddress("b", "h1"), BrokerAddress("b", "h2")])
    with pytest.raises(ValueError, match="at least 100 ms"):
        HealthCheck(inter_ms=10)


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed")
def test_haproxy_accepts_the_generated_config(tmp_path: Path) -> None:
    brokers = [BrokerAddress(f"broker{i}", "127.0.0.1", 7000 + 2 * i, 7001 + 2 * i) for i in (1, 2)]
    config = tmp_path / "haproxy.cfg"
    config.write_text(
        render(
            brokers,
            tcp_bind="127.0.0.1:17001",
            http_bind="127.0.0.1:17002",
            maxconn=1000,
            stats_socket=str(tmp_path / "s.sock"),
        )
    )
    checked = subprocess.run(["haproxy", "-c", "-f", str(config)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
