"""The rules of a ``pgqueue_jobs`` row, whichever form holds them (migration 0030).

Since 0030 the one-column rules are domain types (``pgqueue_job_state``,
``pgqueue_backoff_type``, ``pgqueue_count``, ``pgqueue_max_attempts``), whose
constraints the server caches per backend instead of reading a table CHECK's text
back per statement; the LIFO rule is the generated ``sort_key``'s NOT NULL, the lease
rule a table CHECK.  Every write that could break a rule still fails, with the
SQLSTATE it failed with before: an insert, and an update of the column.  A client
sees the base types.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors

INSERT = """
INSERT INTO pgqueue_jobs (namespace, id, queue, name, data, state, lifo, lifo_seq, run_at,
                          created_at, attempts, max_attempts, backoff_type, dlq_retry_count)
VALUES ('rules', %(id)s, 'q', 'n', '{}', %(state)s, %(lifo)s, %(lifo_seq)s,
        statement_timestamp(), statement_timestamp(), %(attempts)s, %(max_attempts)s,
        %(backoff_type)s, %(dlq_retry_count)s)
"""

VALID = {
    "id": "valid",
    "state": "pending",
    "lifo": False,
    "lifo_seq": None,
    "attempts": 0,
    "max_attempts": 1,
    "backoff_type": "fixed",
    "dlq_retry_count": 0,
}

BROKEN = [
    ({"state": "done"}, errors.CheckViolation),
    ({"state": "active"}, errors.CheckViolation),  # no lease
    ({"backoff_type": "linear"}, errors.CheckViolation),
    ({"attempts": -1}, errors.CheckViolation),
    ({"max_attempts": 0}, errors.CheckViolation),
    ({"dlq_retry_count": -1}, errors.CheckViolation),
    ({"lifo": True}, errors.NotNullViolation),  # no lifo_seq: sort_key is NULL
]

UPDATES = [
    ("state = 'done'", errors.CheckViolation),
    ("state = 'active'", errors.CheckViolation),
    ("backoff_type = 'linear'", errors.CheckViolation),
    ("attempts = attempts - 1", errors.CheckViolation),
    ("max_attempts = 0", errors.CheckViolation),
    ("dlq_retry_count = -1", errors.CheckViolation),
    ("lifo = true", errors.NotNullViolation),
]


def test_a_valid_row_is_taken_and_read_back_in_the_base_types(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute(INSERT, VALID)
        conn.execute(INSERT, {**VALID, "id": "lifo", "lifo": True, "lifo_seq": 7})
        cur = conn.execute(
            "SELECT state, backoff_type, attempts, max_attempts, dlq_retry_count"
            " FROM pgqueue_jobs WHERE namespace = 'rules' AND id = 'valid'"
        )
        assert cur.fetchone() == ("pending", "fixed", 0, 1, 0)
        assert cur.description is not None
        assert [c.type_code for c in cur.description] == [25, 25, 23, 23, 23]  # text, int4


@pytest.mark.parametrize(("change", "error"), BROKEN, ids=[str(c) for c, _ in BROKEN])
def test_an_insert_that_breaks_a_rule_fails(
    db_dsn: str, change: dict[str, object], error: type[Exception]
) -> None:
    with psycopg.connect(db_dsn) as conn, pytest.raises(error):
        conn.execute(INSERT, {**VALID, "id": f"broken {change}", **change})


@pytest.mark.parametrize(("assignment", "error"), UPDATES, ids=[a for a, _ in UPDATES])
def test_an_update_that_breaks_a_rule_fails(
    db_dsn: str, assignment: str, error: type[Exception]
) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute(INSERT, {**VALID, "id": assignment})
        conn.commit()
        with pytest.raises(error):
            conn.execute(
                f"UPDATE pgqueue_jobs SET {assignment} WHERE namespace = 'rules' AND id = %s",
                (assignment,),
            )
