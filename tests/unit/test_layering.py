"""Dependencies point one way (docs/architecture.md): checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pgqueue"

# layer -> packages it must never import
FORBIDDEN = {
    "db": (
        "pgqueue.manager",
        "pgqueue.maintenance",
        "pgqueue.server",
        "pgqueue.client",
        "pgqueue.protocol",
        "pgqueue.cli",
    ),
    "manager": ("pgqueue.server", "pgqueue.client", "pgqueue.protocol", "pgqueue.cli"),
    "maintenance": ("pgqueue.server", "pgqueue.client", "pgqueue.protocol", "pgqueue.cli"),
    "protocol": (
        "pgqueue.db",
        "pgqueue.manager",
        "pgqueue.maintenance",
        "pgqueue.server",
        "pgqueue.client",
        "pgqueue.cli",
    ),
    "client": ("pgqueue.server", "pgqueue.cli"),
    "vocabulary": (
        "pgqueue.db",
        "pgqueue.manager",
        "pgqueue.maintenance",
        "pgqueue.server",
        "pgqueue.client",
        "pgqueue.protocol",
        "pgqueue.cli",
        "pgqueue.config",
        "asyncpg",
        "psycopg",
        "httpx",
    ),
    "server": ("pgqueue.client", "pgqueue.cli"),
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def violations(root: Path, forbidden: tuple[str, ...]) -> list[str]:
    offenders = []
    for path in sorted(root.rglob("*.py")):
        for name in imports_of(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                offenders.append(f"{path.relative_to(root)} imports {name}")
    return offenders


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(layer: str) -> None:
    assert violations(PACKAGE / layer, FORBIDDEN[layer]) == []


def test_the_check_finds_a_forbidden_import(tmp_path: Path) -> None:
    (tmp_path / "engine_part.py").write_text("from pgqueue.server.broker import Broker\n")
    (tmp_path / "fine.py").write_text("from pgqueue.client_helpers import x\n")
    assert violations(tmp_path, FORBIDDEN["manager"]) == [
        "engine_part.py imports pgqueue.server.broker"
    ]
