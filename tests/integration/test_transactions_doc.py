"""docs/transactions.md runs as written: every ``<!-- run -->`` block is a script,
run with the page's ``postgresql://localhost/app`` (and its SQLAlchemy
spellings) pointing at this module's database; each asserts what it shows."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "transactions.md"
BLOCK = re.compile(r"<!-- run -->\s*```python\n(?P<code>.*?)```", re.DOTALL)


def blocks() -> list[tuple[int, str]]:
    text = PAGE.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m["code"]) for m in BLOCK.finditer(text)]


def test_the_page_has_an_example_of_each_pattern() -> None:
    code = "\n".join(c for _, c in blocks())
    for needle in (
        "AsyncSession",
        "asyncpg.connect",
        "pgqueue.sync",
        "Session(engine)",
        "pgqueue.enqueue",
        "complete_in",
        "LeaseLost",
        'job_id=f"receipt:',
    ):
        assert needle in code, needle


@pytest.mark.parametrize(("line", "code"), blocks(), ids=[f"line{n}" for n, _ in blocks()])
async def test_the_example_runs(line: int, code: str, db_dsn: str, tmp_path: Path) -> None:
    rest = db_dsn.split("://", 1)[1]
    script = tmp_path / f"example_{line}.py"
    script.write_text(code.replace("://localhost/app", f"://{rest}"))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    async with asyncio.timeout(120):
        output, _ = await process.communicate()
    assert process.returncode == 0, f"docs/transactions.md line {line}:\n{output.decode()}"
