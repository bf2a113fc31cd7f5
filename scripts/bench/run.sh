#!/usr/bin/env bash
# Run pgqueue's adapters (scripts/bench/*_adapter.py) with the peers of the shared
# harness (../shared/bench/peers, or PEERS_HARNESS) in one run each, BENCH_RUNS times
# (3), on an already running PostgreSQL (PGHOST/PGPORT, default 127.0.0.1:5432; the
# harness's own run.sh would start its own cluster instead), then rewrite the peers
# section of docs/benchmarks.md: medians, ratios to the fastest peer and to rawsql,
# the machine and PostgreSQL settings, cost per job, and docs/images/benchmarks.png.
#
#   scripts/bench/run.sh                              # pgqueuer, rawsql and ours, 3 runs
#   BENCH_PEERS=pgqueuer,oban,rawsql,pgqueue_tcp BENCH_RUNS=1 scripts/bench/run.sh
#
# The Python peers must be importable by PEERS_PYTHON (default: this repository's
# .venv, with `pip install pgqueuer==1.6.0` once).  The harness creates and drops
# databases named bench_<peer> on the server.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HARNESS="${PEERS_HARNESS:-$ROOT/../../shared/bench/peers}"
[ -d "$HARNESS" ] || HARNESS=/work/shared/bench/peers
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
export BENCH_ADAPTER_DIRS="$ROOT/scripts/bench"
export BENCH_PEERS="${BENCH_PEERS:-pgqueuer,rawsql,pgqueue_engine,pgqueue_embedded,pgqueue_tcp}"
export BENCH_SCRATCH="${BENCH_SCRATCH:-/tmp/pgqueue-bench-scratch}"
PY="${PEERS_PYTHON:-$ROOT/.venv/bin/python}"
RUNS="${BENCH_RUNS:-3}"
OUT="${BENCH_RESULTS_DIR:-$ROOT/docs/benchmark-runs}"  # the run files the report is made from
mkdir -p "$BENCH_SCRATCH" "$OUT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

"$PY" -c 'import pgqueuer, asyncpg, psycopg' || { echo "pip install pgqueuer==1.6.0 into $PY's environment" >&2; exit 2; }

baseline="$BENCH_SCRATCH/baseline.json"
psql -qX -d postgres -c 'DROP DATABASE IF EXISTS bench_baseline' -c 'CREATE DATABASE bench_baseline' >/dev/null
psql -qX -d bench_baseline -c 'CREATE TABLE t (id bigserial PRIMARY KEY, payload jsonb)' >/dev/null
echo "INSERT INTO t (payload) VALUES ('{\"i\": 1}');" > "$BENCH_SCRATCH/baseline.sql"
tps() { pgbench -n -c "$1" -j "$2" -T 5 -f "$BENCH_SCRATCH/baseline.sql" bench_baseline 2>/dev/null \
          | sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
b1="$(tps 1 1)"; b8="$(tps 8 2)"
psql -qX -d postgres -c 'DROP DATABASE bench_baseline' >/dev/null
printf '{"1 client": %s, "8 clients": %s}\n' "${b1:-0}" "${b8:-0}" > "$baseline"
echo "[bench] baseline INSERT tps: 1 client ${b1}, 8 clients ${b8}" >&2

files=()
for i in $(seq 1 "$RUNS"); do
  out="$OUT/run-$(date -u +%Y%m%dT%H%M%SZ).json"
  echo "[bench] run $i of $RUNS -> $out" >&2
  "$PY" "$HARNESS/lib/coordinator.py" --out "$out" --baseline "$baseline"
  files+=("$out")
done
"$PY" "$ROOT/scripts/bench/report.py" "${files[@]}"
"$PY" "$ROOT/scripts/bench_cost.py" --jobs 5000
