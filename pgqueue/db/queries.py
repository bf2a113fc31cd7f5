"""Named queries: every statement lives once in a ``pgqueue/sql/*.sql`` file.

A file holds blocks that start with ``-- name: <query_name>``; the comment
lines right after it document the parameters.  Queries use asyncpg's ``$n``
placeholders; :attr:`Query.psycopg_sql` is the same text rewritten for
psycopg (``%(pN)s``), computed once at load time.

Queries are loaded once at import and exposed as attributes of :data:`Q`, so
a typo in a query name fails at import, not on the first call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources

__all__ = ["Q", "Query", "QueryBook", "load_queries", "parse_queries"]

_NAME = re.compile(r"^--\s*name:\s*([a-z][a-z0-9_]*)\s*$", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\$(\d+)")
_WRITES = re.compile(r"\b(INSERT|UPDATE|DELETE|pg_notify|nextval|TRUNCATE)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Query:
    """One named statement."""

    name: str
    sql: str
    doc: str = ""
    writes: bool = False
    psycopg_sql: str = field(default="", repr=False)

    @classmethod
    def build(cls, name: str, sql: str, doc: str = "") -> Query:
        escaped = sql.replace("%", "%%")
        return cls(
            name=name,
            sql=sql,
            doc=doc,
            writes=bool(_WRITES.search(_strip_comments(sql))),
            psycopg_sql=_PLACEHOLDER.sub(lambda m: f"%(p{m.group(1)})s", escaped),
        )


class QueryBook:
    """Queries by name, as attributes (``Q.job_claim_batch``)."""

    def __init__(self, queries: dict[str, Query]) -> None:
        self._queries = dict(queries)

    def __getattr__(self, name: str) -> Query:
        try:
            return self._queries[name]
        except KeyError:
            raise AttributeError(f"no query named {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._queries

    def names(self) -> list[str]:
        return sorted(self._queries)


def _strip_comments(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


def parse_queries(text: str, source: str = "<string>") -> dict[str, Query]:
    """Split one ``.sql`` file into its named queries."""
    out: dict[str, Query] = {}
    matches = list(_NAME.finditer(text))
    preamble = text[: matches[0].start()] if matches else text
    if any(line.strip() and not line.strip().startswith("--") for line in preamble.splitlines()):
        raise ValueError(f"{source}: SQL before the first '-- name:' line")
    for i, match in enumerate(matches):
        name = match.group(1)
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[match.end() : end]
        doc_lines: list[str] = []
        sql_lines: list[str] = []
        for line in body.strip("\n").splitlines():
            if not sql_lines and line.startswith("--"):
                doc_lines.append(line[2:].strip())
            else:
                sql_lines.append(line)
        sql = "\n".join(sql_lines).strip().rstrip(";").strip()
        if not sql:
            raise ValueError(f"{source}: query {name} is empty")
        if name in out:
            raise ValueError(f"{source}: query {name} defined twice")
        out[name] = Query.build(name, sql, " ".join(doc_lines))
    return out


def load_queries() -> QueryBook:
    """Load every ``pgqueue/sql/*.sql`` file."""
    queries: dict[str, Query] = {}
    root = resources.files("pgqueue") / "sql"
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sql"):
            continue
        for name, query in parse_queries(entry.read_text("utf-8"), entry.name).items():
            if name in queries:
                raise ValueError(f"{entry.name}: query {name} already defined in another file")
            queries[name] = query
    return QueryBook(queries)


Q = load_queries()
