"""The wheel ships every package, the SQL files and the migrations."""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_lists_every_package_of_the_source_tree() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = set(find_packages(str(ROOT), include=["pgqueue*"]))
    assert found <= listed
    assert {"pgqueue._migrations", "pgqueue._migrations.versions"} <= listed
    assert config["package-dir"] == {"pgqueue._migrations": "migrations"}
    assert (ROOT / "migrations" / "versions" / "__init__.py").exists()
    assert (ROOT / "migrations" / "__init__.py").exists()


def test_the_package_data_ships_every_file_of_the_dashboard() -> None:
    """A wheel install serves /ui: every static file matches a package-data glob."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = config["package-data"]["pgqueue.server.http"]
    package = ROOT / "pgqueue" / "server" / "http"
    files = {p for p in (package / "static").rglob("*") if p.is_file()}
    shipped = {p for pattern in globs for p in package.glob(pattern)}
    assert files, "no dashboard files"
    assert files == shipped, sorted(str(p.relative_to(package)) for p in files - shipped)
    assert (package / "static" / "index.html") in shipped
