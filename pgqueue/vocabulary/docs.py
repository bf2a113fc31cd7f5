"""The job options table of ``docs/protocol.md``, rendered from the declarations.

The page holds the table between ``<!-- job-options:start -->`` and
``<!-- job-options:end -->``; ``scripts/docs_job_options`` rewrites it and a unit
test fails when the committed page and the declarations differ.
"""

from __future__ import annotations

import math
from typing import Final

from pgqueue.vocabulary.checks import js_number
from pgqueue.vocabulary.job_options import JOB_OPTIONS, JobOption

__all__ = ["END", "START", "job_options_table", "replace_section"]

START: Final = "<!-- job-options:start -->"
END: Final = "<!-- job-options:end -->"

_STORED: Final = {"column": "job column", "opts": "`opts`", "ignored": "not acted on"}


def _names(option: JobOption) -> tuple[str, str]:
    wire = ", ".join(f"`{n}`" for n in (option.wire, *option.wire_aliases) if n) or "—"
    python = ", ".join(f"`{n}`" for n in (option.python, *option.python_aliases) if n) or "—"
    return wire, python


def _bounds(option: JobOption) -> str:
    if option.kind in ("integer", "number", "backoff"):
        hi = "∞" if math.isinf(option.hi) else js_number(option.hi)
        return f"{js_number(option.lo)} .. {hi}"
    if option.kind in ("ids", "texts"):
        return f"≤ {js_number(option.hi)} items"
    if option.kind in ("text", "group") and option.hi:
        return f"≤ {js_number(option.hi)} chars"
    return ""


def _transports(option: JobOption) -> str:
    names = []
    if "sdk" in option.transports:
        names.append("SDK")
    if "internal" in option.transports:
        names.append("SDK (internal)")
    if "wire" in option.transports and option.wire is not None:
        names.append("TCP, HTTP")
    return ", ".join(names)


def _default(option: JobOption) -> str:
    if option.default is None:
        return ""
    if isinstance(option.default, bool):
        return "`true`" if option.default else "`false`"
    return f"`{option.default}`"


def job_options_table() -> str:
    """The Markdown table of every job option, one row per declaration."""
    lines = [
        "| wire | Python | type | bounds | default | transports | kept in | meaning |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for option in JOB_OPTIONS:
        wire, python = _names(option)
        default = _default(option)
        meaning = option.description.replace("|", "\\|")
        lines.append(
            f"| {wire} | {python} | {option.json_type} | {_bounds(option)} | {default} "
            f"| {_transports(option)} | {_STORED[option.stored]} | {meaning} |"
        )
    return "\n".join(lines)


def replace_section(page: str, table: str) -> str:
    """``page`` with the text between the markers replaced by ``table``."""
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table}\n{END}{tail}"
