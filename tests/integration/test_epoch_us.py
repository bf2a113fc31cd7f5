"""``pgqueue_epoch_us``, the claim order's clock (``sort_key``, the claim's cut-off):
inlined by the planner, and the same microseconds as ``extract(epoch FROM ts)``.

Every job row written computes ``sort_key`` through it; a body the planner cannot
inline (a STABLE function inside) runs through the SQL-function executor once per
statement (docs/performance.md).  Its values are stored in ``sort_key`` and the claim
indexes, so a new body must give exactly what the old one gave.
"""

from __future__ import annotations

import psycopg

# The body of 0001: the reference for the stored sort_key values.
REFERENCE = "(extract(epoch FROM t) * 1000000)::bigint"

INSTANTS = """
SELECT t FROM (
    SELECT timestamptz '1900-01-01 00:00:00+00'
           + (g * 7919 % 10007 - 5003) * interval '1 day' * 97
           + (g * 104729 % 1000003) * interval '1 microsecond' AS t
    FROM generate_series(1, 20000) g
    UNION ALL
    SELECT timestamptz '1970-01-01 00:00:00+00' + g * interval '1 microsecond'
    FROM generate_series(-2000, 2000) g
    UNION ALL
    VALUES (timestamptz '4713-01-01 00:00:00+00 BC'), (timestamptz '2026-03-29 01:30:00+00'),
           (timestamptz '200000-12-31 23:59:59.999999+00')
) s
"""


def test_epoch_us_is_inlined_into_the_expression(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        [[plan]] = conn.execute(
            "EXPLAIN (VERBOSE, COSTS OFF, FORMAT JSON)"
            " SELECT pgqueue_epoch_us(statement_timestamp())"
        ).fetchall()
    [output] = plan[0]["Plan"]["Output"]
    assert "pgqueue_epoch_us" not in output, output


def test_epoch_us_gives_the_microseconds_of_extract_epoch(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        for zone in ("UTC", "America/New_York", "Asia/Kolkata"):
            conn.execute(f"SET TIME ZONE '{zone}'")
            [[count, differ]] = conn.execute(
                f"SELECT count(*), count(*) FILTER (WHERE pgqueue_epoch_us(t) <> {REFERENCE})"
                f" FROM ({INSTANTS}) i"
            ).fetchall()
            assert (count, differ) == (24004, 0), zone
