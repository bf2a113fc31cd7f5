"""How operator commands answer: rich tables for people, JSON for scripts.

Tables and messages go to stdout; progress bars to stderr, so that
``pgqueue dlq redrive --all --json | jq`` reads clean JSON.  Times on the
wire are epoch milliseconds (database clock); tables show them as local
``HH:MM:SS`` (with the date when not today) and ages as ``3.2s`` / ``4m``.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from pgqueue.vocabulary.states import JOB_STATES

__all__ = [
    "age",
    "dumps",
    "moment",
    "out",
    "plural",
    "print_json",
    "progress_bar",
    "table",
]

PIPED_WIDTH = 200  # piped output is not squeezed into 80 columns

out = Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else PIPED_WIDTH)
err = Console(stderr=True, highlight=False)


def dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()


def print_json(value: Any) -> None:
    """One JSON document on stdout (plain, no markup)."""
    print(dumps(value), flush=True)


def table(
    columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None
) -> Table:
    shown = Table(title=title, title_justify="left", header_style="bold")
    for column in columns:
        numeric = column in NUMERIC_COLUMNS
        shown.add_column(
            column,
            justify="right" if numeric else "left",
            no_wrap=not numeric,
            min_width=len(column),
        )
    for row in rows:
        shown.add_row(*("" if cell is None else str(cell) for cell in row))
    return shown


RATE_COLUMNS = ("in/s", "done/s", "fail/s", "wait p50", "wait p95", "run p50", "run p95")
"""The live columns of ``pgqueue top``: rates and latencies."""

NUMERIC_COLUMNS = frozenset(
    {
        *JOB_STATES,
        "children",
        "dlq",
        "attempts",
        "priority",
        "progress",
        "count",
        "concurrency",
        "processed",
        "pid",
        "entries",
        *RATE_COLUMNS,
    }
)


def plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def moment(ms: float | None) -> str:
    """Epoch ms as local time: ``14:03:07.120`` today, else with the date."""
    if ms is None:
        return ""
    when = dt.datetime.fromtimestamp(ms / 1000)
    if when.date() == dt.date.today():
        return when.strftime("%H:%M:%S.%f")[:-3]
    return when.strftime("%Y-%m-%d %H:%M:%S")


def age(ms: float | None, now_ms: float | None = None) -> str:
    """How long ago ``ms`` was (``2.5s``, ``3m``, ``2h``, ``4d``)."""
    if ms is None:
        return ""
    return duration((now_ms if now_ms is not None else time.time() * 1000) - ms)


def duration(ms: float | None) -> str:
    if ms is None:
        return ""
    seconds = max(0.0, ms / 1000)
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def progress_bar() -> Progress:
    """A progress bar on stderr (transient only where stderr is no terminal)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("•"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=err,
    )
