"""The OpenAPI document describes what the broker answers (schemathesis findings,
reproduced as plain tests on a real broker)."""

from __future__ import annotations

import re

import httpx

from tests.acceptance.conftest import BrokerFactory


def test_every_path_parameter_of_the_document_is_declared_and_plain(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("doc")
    document = httpx.get(f"http://127.0.0.1:{broker.http_port}/openapi.json", timeout=10).json()
    for path, item in document["paths"].items():
        names = re.findall(r"{([^}]*)}", path)
        for method, operation in item.items():
            declared = [p["name"] for p in operation["parameters"] if p["in"] == "path"]
            assert declared == names, f"{method.upper()} {path}"


def test_the_queues_summary_answer_matches_its_documented_schema(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("doc")
    base = f"http://127.0.0.1:{broker.http_port}"
    document = httpx.get(f"{base}/openapi.json", timeout=10).json()
    ok = document["paths"]["/queues/summary"]["get"]["responses"]["200"]
    schema = ok["content"]["application/json"]["schema"]
    if "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    answer = httpx.get(f"{base}/queues/summary", timeout=10)
    assert answer.status_code == 200
    documented = {"object": dict, "array": list}[schema["type"]]
    assert isinstance(answer.json(), documented), (schema, answer.json())


def test_a_missing_dashboard_file_is_a_documented_404(brokers: BrokerFactory) -> None:
    broker = brokers.start("doc")
    base = f"http://127.0.0.1:{broker.http_port}"
    document = httpx.get(f"{base}/openapi.json", timeout=10).json()
    assert httpx.get(f"{base}/ui/no-such-file", timeout=10).status_code == 404
    assert "404" in document["paths"]["/ui/{path}"]["get"]["responses"]
