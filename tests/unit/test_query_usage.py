"""Every shipped query is used by the code, and every query the code names exists.

``Q.<name>`` fails at attribute access, so a misspelt name would only fail when
its line runs; this test reads the sources instead.  A query no code uses is
dead SQL: delete it (tests may still read the shipped queries, but they do not
keep one alive).
"""

from __future__ import annotations

import re
from pathlib import Path

from pgqueue.db.queries import Q

ROOT = Path(__file__).resolve().parents[2]
USE = re.compile(r"\bQ\.([a-z_][a-z0-9_]*)\b")
NOT_QUERIES = {"names"}


def names_used_in(*folders: str) -> dict[str, list[str]]:
    used: dict[str, list[str]] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for name in USE.findall(path.read_text("utf-8")):
                if name not in NOT_QUERIES:
                    used.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return used


def test_every_query_the_code_names_exists() -> None:
    used = names_used_in("pgqueue", "scripts", "tests")
    unknown = {name: where for name, where in used.items() if name not in Q}
    assert unknown == {}


def test_every_shipped_query_is_used_by_pgqueue_or_its_scripts() -> None:
    used = names_used_in("pgqueue", "scripts")
    assert [name for name in Q.names() if name not in used] == []
