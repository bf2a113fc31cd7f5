"""Dependencies point one way (docs/architecture.md): checked on the source.

Every import counts, also one under ``if TYPE_CHECKING:`` or inside a
function: a type-only import is still a dependency of the design.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pgqueue"

# layer (a package or a module of pgqueue) -> what it must never import
FORBIDDEN = {
    "db": (
        "pgqueue.manager",
        "pgqueue.maintenance",
        "pgqueue.runtime",
        "pgqueue.server",
        "pgqueue.client",
        "pgqueue.protocol",
        "pgqueue.cli",
    ),
    "manager": (
        "pgqueue.maintenance",
        "pgqueue.runtime",
        "pgqueue.server",
        "pgqueue.client",
        "pgqueue.protocol",
        "pgqueue.cli",
    ),
    "maintenance": (
        "pgqueue.runtime",
        "pgqueue.server",
        "pgqueue.client",
        "pgqueue.protocol",
        "pgqueue.cli",
    ),
    "runtime.py": ("pgqueue.server", "pgqueue.client", "pgqueue.protocol", "pgqueue.cli"),
    "protocol": (
        "pgqueue.db",
        "pgqueue.manager",
        "pgqueue.maintenance",
        "pgqueue.runtime",
        "pgqueue.server",
        "pgqueue.client",
        "pgqueue.cli",
    ),
    "errors.py": ("pgqueue.",),
    "ssrf.py": ("pgqueue.db", "pgqueue.manager", "pgqueue.maintenance", "pgqueue.server"),
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
    "testing": ("pgqueue.server", "pgqueue.cli", "pgqueue.runtime", "pgqueue.maintenance"),
}

# Modules that load a driver or the engine: a light import must load none of them.
HEAVY = ("asyncpg", "psycopg", "httpx", "pgqueue.db", "pgqueue.manager", "pgqueue.maintenance")


def imports_of(path: Path) -> set[str]:
    """Every absolute import of ``path``, wherever it sits (type-only ones too)."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if (PACKAGE.parent / node.module.replace(".", "/")).is_dir():
                # ``from pgqueue import runtime`` imports a module too
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _matches(name: str, forbidden: str) -> bool:
    if forbidden.endswith("."):
        return name.startswith(forbidden)
    return name == forbidden or name.startswith(forbidden + ".")


def violations(root: Path, forbidden: tuple[str, ...]) -> list[str]:
    paths = [root] if root.is_file() else sorted(root.rglob("*.py"))
    base = root.parent if root.is_file() else root
    offenders = set()
    for path in paths:
        for name in imports_of(path):
            for f in forbidden:
                if _matches(name, f):
                    offenders.add(f"{path.relative_to(base)} imports {name}")
    return sorted(offenders)


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(layer: str) -> None:
    assert violations(PACKAGE / layer, FORBIDDEN[layer]) == []


def test_the_check_finds_a_forbidden_import(tmp_path: Path) -> None:
    (tmp_path / "engine_part.py").write_text("from pgqueue.server.broker import Broker\n")
    (tmp_path / "fine.py").write_text("from pgqueue.client_helpers import x\n")
    assert violations(tmp_path, FORBIDDEN["manager"]) == [
        "engine_part.py imports pgqueue.server.broker"
    ]


def test_the_check_counts_type_only_and_local_imports(tmp_path: Path) -> None:
    (tmp_path / "typed.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pgqueue.maintenance.reaper import Reaper\n"
        "def later():\n"
        "    import pgqueue.runtime\n"
    )
    assert violations(tmp_path, FORBIDDEN["manager"]) == [
        "typed.py imports pgqueue.maintenance.reaper",
        "typed.py imports pgqueue.runtime",
    ]


def test_only_the_broker_and_the_cli_know_the_concrete_broker() -> None:
    """The server's parts type against ``BrokerHost`` (pgqueue/server/host.py)."""
    offenders = [
        line
        for line in violations(PACKAGE / "server", ("pgqueue.server.broker",))
        if not line.startswith("broker.py ")
    ]
    assert offenders == []


def _loaded_after(statement: str) -> set[str]:
    code = f"{statement}\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    return set(out.split())


@pytest.mark.parametrize(
    "statement",
    [
        "import pgqueue",
        "import pgqueue.errors",
        "import pgqueue.protocol",
        "from pgqueue import __version__",
        "import pgqueue.manager, pgqueue.maintenance, pgqueue.server",
    ],
)
def test_a_light_import_loads_no_driver_and_no_engine(statement: str) -> None:
    loaded = _loaded_after(statement)
    heavy = sorted(m for m in loaded if any(_matches(m, h) for h in HEAVY))
    if statement.startswith("import pgqueue.manager"):
        heavy = [m for m in heavy if m not in ("pgqueue.manager", "pgqueue.maintenance")]
    assert heavy == []


def test_the_sdk_does_not_load_the_broker() -> None:
    loaded = _loaded_after("from pgqueue import Queue, Worker")
    assert sorted(m for m in loaded if _matches(m, "pgqueue.server")) == []


def test_every_public_name_resolves() -> None:
    code = (
        "import pgqueue\n"
        "missing = [n for n in pgqueue.__all__ if getattr(pgqueue, n, None) is None]\n"
        "assert pgqueue.__all__ == sorted(pgqueue.__all__), pgqueue.__all__\n"
        "assert not missing, missing\n"
        "assert set(pgqueue.__all__) <= set(dir(pgqueue))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
