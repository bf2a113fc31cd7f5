"""The example alert rules and the Grafana board use metrics a real broker exports,
and the alert figures on /metrics follow the jobs (a broker process, real sockets).

``promtool check rules`` runs when promtool is installed (Debian's ``prometheus``
package; ``.ci/run`` installs it, and with CI=1 a missing promtool fails); the parser checks always
run: every rule is well formed and every ``pgqueue_*`` name in an expression exists
on a broker's /metrics."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.acceptance.conftest import BrokerFactory

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
BOARD = ROOT / "deploy" / "grafana" / "pgqueue.json"
METRIC = re.compile(r"\b(pgqueue_[a-z0-9_]+)\b")
QUOTED = re.compile(r'"[^"]*"')  # label values (table names) are not metrics
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(ALERTS.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def board_exprs() -> list[str]:
    board = json.loads(BOARD.read_text())
    return [target["expr"] for panel in board["panels"] for target in panel["targets"]]


def exported_names(text: str) -> set[str]:
    names: set[str] = set()
    histograms: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            names.add(name)
            if kind == "histogram":
                histograms.add(name)
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    for name in histograms:
        names.update(name + suffix for suffix in HISTOGRAM_SUFFIXES)
    return names


def sample(text: str, name: str, **labels: str) -> float | None:
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        if all(f'{key}="{value}"' in line for key, value in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_the_alert_rules_are_well_formed() -> None:
    found = rules()
    assert len(found) >= 8
    for rule in found:
        assert set(rule) >= {"alert", "expr", "labels", "annotations"}, rule
        assert rule["labels"]["severity"] in {"info", "warning", "critical"}
        assert rule["annotations"]["summary"]
        assert rule["expr"].count("(") == rule["expr"].count(")"), rule["alert"]
    assert len({rule["alert"] for rule in found}) == len(found)


def test_promtool_accepts_the_alert_rules() -> None:
    if shutil.which("promtool") is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is not installed (.ci/run installs Debian's prometheus)")
        pytest.skip("promtool is not installed (apt-get install -y prometheus)")
    result = subprocess.run(
        ["promtool", "check", "rules", str(ALERTS)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_grafana_board_is_well_formed() -> None:
    board = json.loads(BOARD.read_text())
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        assert panel["targets"] and set(panel["gridPos"]) == {"x", "y", "w", "h"}
        assert panel["datasource"]["uid"] == "${datasource}"


async def test_every_metric_of_the_rules_and_the_board_is_exported_with_the_alert_figures(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("metrics")
    base = f"http://127.0.0.1:{broker.http_port}"
    async with httpx.AsyncClient(base_url=base) as http:
        for _ in range(2):
            await http.post("/queues/alerting/jobs", json={"name": "n", "data": 1})
        pulled = (await http.get("/queues/alerting/jobs", params={"owner": "w"})).json()
        failed = await http.post(
            f"/jobs/{pulled['job']['id']}/fail",
            json={"token": pulled["token"], "error": "boom", "unrecoverable": True},
        )
        assert failed.json()["ok"]
        await http.post("/workers", json={"name": "w1", "queues": ["alerting"], "concurrency": 4})
        text = (await http.get("/metrics")).text
    exported = exported_names(text)
    exprs = [r["expr"] for r in rules()] + board_exprs()
    used = {name for expr in exprs for name in METRIC.findall(QUOTED.sub("", expr))}
    assert used - exported == set(), f"not on /metrics: {sorted(used - exported)}"
    assert (sample(text, "pgqueue_queue_oldest_waiting_seconds", queue="alerting") or 0) > 0
    assert sample(text, "pgqueue_queue_oldest_retry_seconds", queue="alerting") == 0
    dlq = [
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("pgqueue_dlq_entries{") and 'queue="alerting"' in line
    ]
    assert dlq == [1.0]
    assert sample(text, "pgqueue_worker_slots", queue="alerting") == 4
    assert sample(text, "pgqueue_worker_slots_busy", queue="alerting") == 0
    assert sample(text, "pgqueue_queue_active_jobs", queue="alerting") == 0
    assert sample(text, "pgqueue_queue_paused", queue="alerting") == 0
    assert sample(text, "pgqueue_table_bytes", table="pgqueue_jobs") is not None
