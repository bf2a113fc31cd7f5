"""Named queries: the loader's rules, and every shipped query is well formed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pgqueue.db.queries import Q, Query, QueryBook, load_queries, parse_queries

PLACEHOLDER = re.compile(r"\$(\d+)")


def test_a_file_splits_into_named_queries_with_their_docs() -> None:
    queries = parse_queries(
        "-- file comment before the first query\n"
        "\n"
        "-- name: job_get\n"
        "-- One job.\n"
        "-- $1 namespace, $2 id.\n"
        "SELECT * FROM t WHERE ns = $1 AND id = $2;\n"
        "\n"
        "-- name: job_count\n"
        "SELECT count(*) FROM t\n"
    )
    assert list(queries) == ["job_get", "job_count"]
    assert queries["job_get"] == Query.build(
        "job_get", "SELECT * FROM t WHERE ns = $1 AND id = $2", "One job. $1 namespace, $2 id."
    )
    assert queries["job_count"].sql == "SELECT count(*) FROM t"
    assert queries["job_count"].doc == ""


def test_comment_lines_inside_the_sql_stay_in_the_sql() -> None:
    [query] = parse_queries("-- name: q\n-- doc\nSELECT 1\n-- trailing note\n, 2").values()
    assert query.doc == "doc"
    assert query.sql == "SELECT 1\n-- trailing note\n, 2"


def test_a_name_defined_twice_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^f\.sql: query a defined twice$"):
        parse_queries("-- name: a\nSELECT 1\n-- name: a\nSELECT 2\n", "f.sql")


def test_sql_before_the_first_name_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^f\.sql: SQL before the first '-- name:' line$"):
        parse_queries("SELECT 0;\n-- name: a\nSELECT 1\n", "f.sql")
    with pytest.raises(ValueError, match="SQL before the first"):
        parse_queries("SELECT 0\n")


def test_an_empty_query_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^f\.sql: query a is empty$"):
        parse_queries("-- name: a\n-- only a doc\n\n-- name: b\nSELECT 1\n", "f.sql")
    with pytest.raises(ValueError, match="query b is empty"):
        parse_queries("-- name: b\n  ;  \n")


def test_a_file_with_only_comments_has_no_queries() -> None:
    assert parse_queries("-- nothing here\n\n") == {}


@pytest.mark.parametrize(
    ("sql", "writes"),
    [
        ("SELECT 1", False),
        ("INSERT INTO t VALUES (1)", True),
        ("update t set a = 1", True),
        ("WITH d AS (DELETE FROM t RETURNING *) SELECT count(*) FROM d", True),
        ("SELECT pg_notify('c', 'p')", True),
        ("SELECT nextval('s')", True),
        ("TRUNCATE t", True),
        ("SELECT 1 -- then UPDATE everything", False),
        ("SELECT updated_at, inserted, deleted_rows FROM t", False),
    ],
)
def test_writes_is_detected_from_the_sql_outside_comments(sql: str, writes: bool) -> None:
    [query] = parse_queries(f"-- name: q\n-- INSERT in the doc does not count\n{sql}").values()
    assert query.writes is writes


def test_placeholders_are_rewritten_for_psycopg_and_percent_signs_escaped() -> None:
    query = Query.build("q", "SELECT $1::text || '%' WHERE a LIKE 'x%' AND b = $10 AND c = $2")
    assert query.psycopg_sql == (
        "SELECT %(p1)s::text || '%%' WHERE a LIKE 'x%%' AND b = %(p10)s AND c = %(p2)s"
    )
    assert query.sql == "SELECT $1::text || '%' WHERE a LIKE 'x%' AND b = $10 AND c = $2"


def test_a_query_book_gives_queries_as_attributes_and_refuses_unknown_names() -> None:
    book = QueryBook(parse_queries("-- name: b\nSELECT 2\n-- name: a\nSELECT 1\n"))
    assert book.a.sql == "SELECT 1"
    assert "a" in book and "zzz" not in book
    assert book.names() == ["a", "b"]
    with pytest.raises(AttributeError, match="no query named 'zzz'"):
        _ = book.zzz


def test_every_shipped_query_loads_and_has_a_doc() -> None:
    assert load_queries().names() == Q.names()
    assert len(Q.names()) > 10
    for name in Q.names():
        query = getattr(Q, name)
        assert query.name == name
        assert query.doc, f"{name} has no doc comment"
        assert not query.sql.rstrip().endswith(";"), name


def test_every_shipped_query_numbers_its_parameters_from_1_without_gaps() -> None:
    for name in Q.names():
        query = getattr(Q, name)
        used = {int(n) for n in PLACEHOLDER.findall(query.sql)}
        assert used == set(range(1, len(used) + 1)), f"{name} uses ${sorted(used)}"
        assert "$" not in PLACEHOLDER.sub("", query.sql.replace("$$", "")), name
        psycopg_names = set(re.findall(r"%\(p(\d+)\)s", query.psycopg_sql))
        assert {int(n) for n in psycopg_names} == used, name


def test_every_shipped_query_that_changes_rows_is_marked_as_writing() -> None:
    for name in Q.names():
        query = getattr(Q, name)
        body = "\n".join(line.split("--", 1)[0] for line in query.sql.splitlines())
        if re.search(r"\b(INSERT INTO|UPDATE pgqueue_\w+|DELETE FROM)\b", body, re.IGNORECASE):
            assert query.writes, name


def test_named_parameters_are_numbered_in_the_order_the_header_documents_them() -> None:
    [query] = parse_queries(
        "-- name: q\n-- :ns namespace, :ids ids (:ns again).\n"
        "SELECT * FROM t WHERE ns = :ns AND id = ANY(:ids::text[]) AND ns2 = :ns\n"
        "  AND label = ':not_a_param' AND x::text = 'a' -- :nor_this\n"
    ).values()
    assert query.params == ("ns", "ids")
    assert query.sql == (
        "SELECT * FROM t WHERE ns = $1 AND id = ANY($2::text[]) AND ns2 = $1\n"
        "  AND label = ':not_a_param' AND x::text = 'a' -- :nor_this"
    )
    assert query.psycopg_sql.startswith("SELECT * FROM t WHERE ns = %(p1)s AND id = ANY(%(p2)s")
    assert query.arguments((), {"ids": ["a"], "ns": "n"}) == ("n", ["a"])


def test_a_call_must_name_exactly_the_declared_parameters() -> None:
    [named] = parse_queries("-- name: q\n-- :a and :b.\nSELECT :b, :a").values()
    assert named.sql == "SELECT $2, $1"
    [numbered] = parse_queries("-- name: p\nSELECT $1").values()
    with pytest.raises(TypeError, match=r"query q: missing \['b'\], unknown \['c'\]"):
        named.arguments((), {"a": 1, "c": 2})
    with pytest.raises(TypeError, match=r"query q: missing \[\], unknown \['c'\]"):
        named.arguments((), {"a": 1, "b": 2, "c": 3})
    with pytest.raises(TypeError, match=r"query q: missing \['b'\], unknown \[\]"):
        named.arguments((), {"a": 1})
    assert named.arguments((), {"b": 2, "a": 1}) == (1, 2)
    with pytest.raises(TypeError, match="query q takes named parameters: a, b"):
        named.arguments((1, 2), {})
    with pytest.raises(TypeError, match="query p takes positional parameters"):
        numbered.arguments((), {"x": 1})
    assert numbered.arguments((1,), {}) == (1,)


def test_a_query_uses_one_parameter_style() -> None:
    with pytest.raises(ValueError, match="query q mixes named"):
        parse_queries("-- name: q\n-- :a.\nSELECT :a, $2")


def test_every_named_parameter_is_documented_in_the_header_and_only_those() -> None:
    with pytest.raises(ValueError, match=r"query q: the header documents \['a'\], the SQL uses"):
        parse_queries("-- name: q\n-- :a.\nSELECT :a, :b")
    with pytest.raises(ValueError, match=r"documents \['a', 'c'\], the SQL uses \['a'\]"):
        parse_queries("-- name: q\n-- :a, :c.\nSELECT :a")


def test_a_fragment_is_included_with_its_slots_filled_and_is_not_a_query() -> None:
    queries = parse_queries(
        "-- fragment: page\n-- A page in {order} order.\nSELECT id FROM t\nORDER BY id {order}\n"
        "-- name: asc\n-- Ascending.\nWITH p AS (\n    -- include: page(order=ASC)\n)\n"
        "SELECT * FROM p\n"
        "-- name: desc\n-- include: page(order=DESC)\n"
    )
    assert list(queries) == ["asc", "desc"]
    assert queries["asc"].sql == (
        "WITH p AS (\n    SELECT id FROM t\n    ORDER BY id ASC\n)\nSELECT * FROM p"
    )
    assert queries["asc"].doc == "Ascending."
    assert queries["desc"].sql == "SELECT id FROM t\nORDER BY id DESC"
    assert queries["desc"].doc == ""


def test_an_include_must_name_a_fragment_and_fill_exactly_its_slots() -> None:
    with pytest.raises(ValueError, match=r"f\.sql: q includes unknown fragment nope"):
        parse_queries("-- name: q\n-- include: nope\n", "f.sql")
    frag = "-- fragment: page\nSELECT 1 ORDER BY id {order}\n"
    with pytest.raises(ValueError, match=r"fills \[\] of fragment page, which has slots"):
        parse_queries(frag + "-- name: q\n-- include: page\n")
    with pytest.raises(ValueError, match=r"fills \['order', 'x'\]"):
        parse_queries(frag + "-- name: q\n-- include: page(order=ASC, x=1)\n")
    with pytest.raises(ValueError, match="fragment page defined twice"):
        parse_queries(frag + frag)


# SQL the loader does not number: comments (other than include lines), quoted
# text and dollar-quoted bodies.
_NOT_SQL = re.compile(
    r"--(?!\s*include:)[^\n]*|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\$\$.*?\$\$", re.S
)
# Explicit exceptions: none.  A query that must number its own placeholders is
# listed here with the reason.
POSITIONAL_ALLOWED: dict[str, str] = {}


def test_no_query_file_numbers_its_parameters_itself() -> None:
    root = Path(__file__).resolve().parents[2] / "pgqueue" / "sql"
    positional: list[str] = []
    for path in sorted(root.glob("*.sql")):
        blocks = re.split(r"(?m)^--\s*(?:name|fragment):\s*([a-z][a-z0-9_]*)\s*$", path.read_text())
        for name, text in zip(blocks[1::2], blocks[2::2], strict=True):
            if name not in POSITIONAL_ALLOWED and PLACEHOLDER.search(_NOT_SQL.sub(" ", text)):
                positional.append(f"{path.name}: {name}")
    assert positional == []
    assert all(getattr(Q, name).params for name in Q.names() if "$" in getattr(Q, name).sql)
