#!/usr/bin/env python3
"""Peers harness runs (JSON) -> the peers section of docs/benchmarks.md and a chart.

    .venv/bin/python scripts/bench/report.py RUN.json [RUN.json ...] [--no-write]

Medians over the runs given (each run has every peer and pgqueue in it), the ratio of
each pgqueue adapter to the fastest peer of each column (rawsql left out: it is the
bare-SQL ceiling, not a queue) and to rawsql, the machine and PostgreSQL settings,
and a bar chart (docs/images/benchmarks.png).  Called by scripts/bench/run.sh.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.benchlib import write_section  # noqa: E402

CHART = ROOT / "docs" / "images" / "benchmarks.png"
OURS = ("pgqueue_engine", "pgqueue_embedded", "pgqueue_tcp")
CEILING = "rawsql"

Getter = Callable[[dict[str, Any]], float | None]


def _step(key: str, step: str) -> Getter:
    def get(peer: dict[str, Any]) -> float | None:
        s = peer.get("steps", {}).get(step)
        if not s or not s.get("ok"):
            return None
        value = s.get(key) if key != "db_mib" else (s.get("db") or {}).get("db_bytes")
        if value is None:
            return None
        return float(value) / (1024 * 1024) if key == "db_mib" else float(value)

    return get


# (column title, getter, higher is better)
COLUMNS: list[tuple[str, Getter, bool]] = [
    ("W1 single jobs/s", _step("jobs_per_s", "w1_single"), True),
    ("W1 bulk jobs/s", _step("jobs_per_s", "w1_bulk"), True),
    ("W2 default jobs/s", _step("jobs_per_s", "w2_default"), True),
    ("W2 2x10 jobs/s", _step("jobs_per_s", "w2_2x10"), True),
    ("W3 default p99 ms", _step("p99_ms", "w3_default"), False),
    ("W3 2x10 p99 ms", _step("p99_ms", "w3_2x10"), False),
    ("DB after W2 MiB", _step("db_mib", "w2_default"), False),
]


def _fmt(value: float | None, title: str) -> str:
    if value is None:
        return "-"
    if "ms" in title or "MiB" in title:
        return f"{value:.1f}"
    return f"{value:,.0f}"


def medians(runs: list[dict[str, Any]]) -> dict[str, list[float | None]]:
    names: list[str] = []
    for run in runs:
        names += [n for n in run["peers"] if n not in names]
    out: dict[str, list[float | None]] = {}
    for name in names:
        row: list[float | None] = []
        for _, get, _ in COLUMNS:
            values = [v for run in runs if name in run["peers"] if (v := get(run["peers"][name]))]
            row.append(statistics.median(values) if values else None)
        out[name] = row
    return out


def _label(runs: list[dict[str, Any]], name: str) -> str:
    describe = runs[-1]["peers"].get(name, {}).get("describe", {})
    version = describe.get("version")
    if name in OURS:
        return f"**{name}**"
    return f"{name} {version}" if version and version not in ("n/a", "unknown") else name


def render(runs: list[dict[str, Any]]) -> tuple[str, dict[str, list[float | None]]]:
    table = medians(runs)
    peers = [n for n in table if n not in OURS and n != CEILING]
    ours = [n for n in OURS if n in table]
    order = ours + sorted(peers) + ([CEILING] if CEILING in table else [])
    lines = ["| | " + " | ".join(t for t, _, _ in COLUMNS) + " |"]
    lines.append("|---" * (len(COLUMNS) + 1) + "|")
    for name in order:
        cells = [_fmt(v, t) for v, (t, _, _) in zip(table[name], COLUMNS, strict=True)]
        label = _label(runs, name) + (" (bare-SQL ceiling)" if name == CEILING else "")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    ratio = ["", "Ratios (medians): to the fastest peer of each column (a latency or size"]
    ratio[-1] += " column: the best peer's value divided by ours, so > 1 is better) and to rawsql:"
    ratio += ["", "| | " + " | ".join(t for t, _, _ in COLUMNS) + " |"]
    ratio.append("|---" * (len(COLUMNS) + 1) + "|")
    best: list[tuple[str, float] | None] = []
    for i, (_, _, higher) in enumerate(COLUMNS):
        candidates = [(n, table[n][i]) for n in peers if table[n][i] is not None]
        pick = max if higher else min
        found = pick(candidates, key=lambda kv: kv[1]) if candidates else None
        best.append((found[0], float(found[1])) if found and found[1] is not None else None)
    fastest = [
        f"{b[0]} {_fmt(b[1], t)}" if b else "-" for b, (t, _, _) in zip(best, COLUMNS, strict=True)
    ]
    ratio.append("| fastest peer | " + " | ".join(fastest) + " |")
    for name in ours:
        cells = []
        for i, (_, _, higher) in enumerate(COLUMNS):
            value, b = table[name][i], best[i]
            if value is None or b is None or not value:
                cells.append("-")
                continue
            r = value / b[1] if higher else b[1] / value
            cells.append(f"x{r:.2f}")
        ratio.append(f"| {name} vs fastest peer | " + " | ".join(cells) + " |")
    if CEILING in table:
        for name in ours:
            cells = []
            for i, (_, _, higher) in enumerate(COLUMNS):
                value, ceiling = table[name][i], table[CEILING][i]
                if value is None or ceiling is None or not value or not higher:
                    cells.append("-")
                    continue
                cells.append(f"{value / ceiling:.0%}")
            ratio.append(f"| {name} share of rawsql | " + " | ".join(cells) + " |")
    return "\n".join(lines + ratio), table


def chart(table: dict[str, list[float | None]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = [i for i, (_, _, higher) in enumerate(COLUMNS) if higher]
    names = list(table)
    fig, ax = plt.subplots(figsize=(10, 4.8))
    width = 0.8 / max(len(names), 1)
    for k, name in enumerate(names):
        xs = [c + (k - len(names) / 2 + 0.5) * width for c in range(len(columns))]
        ys = [table[name][i] or 0 for i in columns]
        ax.bar(xs, ys, width, label=name)
    ax.set_xticks(range(len(columns)), [COLUMNS[i][0].removesuffix(" jobs/s") for i in columns])
    ax.set_yscale("log")
    ax.set_ylabel("jobs/s (median, log scale)")
    ax.set_title("pgqueue and the peers: medians of the harness runs (one PostgreSQL, 2 cores)")
    ax.legend(fontsize=8, ncols=3)
    fig.tight_layout()
    CHART.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(CHART, dpi=110)
    plt.close(fig)


def section(runs: list[dict[str, Any]]) -> str:
    text, table = render(runs)
    last = runs[-1]
    env, params = last["environment"], last["parameters"]
    settings = ", ".join(f"`{k}={v}`" for k, v in env["pg_settings"].items())
    baselines = [run.get("baseline") or {} for run in runs]
    b1 = statistics.median(b.get("1 client", 0) for b in baselines)
    b8 = statistics.median(b.get("8 clients", 0) for b in baselines)
    when = ", ".join(run["started_utc"] for run in runs)
    noise = [
        (s.get("noise") or {}).get("foreign_cpu_pct_of_machine") or 0.0
        for run in runs
        for peer in run["peers"].values()
        for s in peer.get("steps", {}).values()
    ]
    noisy = sum(1 for n in noise if n > 25)
    chart(table)
    return (
        "### Against the other PostgreSQL queues (the peers harness)\n\n"
        "`scripts/bench/run.sh` runs the shared peers harness (`lib/coordinator.py`, with "
        "`BENCH_ADAPTER_DIRS=scripts/bench`) on the server at `PGHOST:PGPORT`, "
        f"{len(runs)} time(s), every peer and pgqueue in each run (order shuffled per run); "
        f"medians of the runs ({when}).  Workloads: W1 enqueue {params['n']:,} jobs one by "
        f"one (one awaited call at a time, capped at {params['w1_max_s']:.0f} s) / in bulk "
        f"chunks of {params['batch']:,}; W2 drain {params['n']:,} preloaded no-op jobs with "
        "the `default` worker setup and with 2 processes x 10; W3 latency from enqueue to "
        f"handler start, {params['lat_n']} jobs at {params['lat_rate']}/s.  `pgqueue_engine` is "
        "the `PostgresQueueManager` directly, `pgqueue_embedded` the SDK's `Queue` / `Worker` "
        "on the embedded transport, `pgqueue_tcp` the SDK over TCP through two "
        "`pgqueue serve` brokers.\n\n"
        f"- Machine: {env['nproc']} CPUs, `{env['cpu_model']}`, shared with other work "
        "(wall-clock numbers are noisy: read ratios within a run)\n"
        f"- PostgreSQL: `{env['pg_version']}`; {settings}\n"
        f"- pgbench baseline (one-row INSERT per transaction, median): 1 client {b1:,.0f} tps, "
        f"8 clients {b8:,.0f} tps\n"
        f"- Python {env['python']}\n"
        f"- Other work on the machine during the steps (the harness's noise meter): up to "
        f"{max(noise, default=0):.0f} % of the machine's CPU; {noisy} of {len(noise)} steps "
        "above 25 %\n\n"
        f"{text}\n\n"
        "![jobs/s per workload](images/benchmarks.png)\n\n"
        "Cost per job (statements, WAL, rows, NOTIFYs) is in the `scripts/bench_cost.py` "
        "section below; the profile findings are in [performance.md](performance.md).\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    runs = [json.loads(p.read_text()) for p in args.runs]
    text = section(runs)
    print(text)
    if not args.no_write:
        write_section(text, "peers")


if __name__ == "__main__":
    main()
