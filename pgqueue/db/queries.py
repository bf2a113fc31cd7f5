"""Named queries: every statement lives once in a ``pgqueue/sql/*.sql`` file.

A file holds blocks that start with ``-- name: <query_name>`` (a query) or
``-- fragment: <fragment_name>`` (a piece of SQL that queries include); the
comment lines right after it document the parameters.

- **Includes.**  A line ``-- include: <fragment>`` inside a query stands for the
  fragment's text; ``-- include: <fragment>(slot=text, ...)`` fills the
  fragment's ``{slot}`` places first (a sort direction, the parameter that holds
  the namespace).  A fragment is written once, in any file; a slot left unfilled,
  an unknown slot or an unknown fragment fails at load.
- **Parameters.**  A query names its parameters (``:namespace``, ``:ids``) and its
  header documents each one; the loader numbers them ``$1, $2, ...`` in the
  order the header names them (so a raw ``EXPLAIN`` of ``Q.<name>.sql`` knows the
  positions), and callers
  pass them by name (``tx.fetch(Q.job_get_by_ids, namespace=ns, ids=ids)``): a
  missing or unknown name is a ``TypeError`` at the call.  The loader still
  accepts a query that numbers its placeholders itself (``$n``, positional
  arguments), but no shipped query does (``tests/unit/test_queries.py``).
  :attr:`Query.psycopg_sql` is the text rewritten for psycopg (``%(pN)s``),
  computed once at load time.

Queries are loaded once at import and exposed as attributes of :data:`Q`, so
a typo in a query name fails at import, not on the first call (and
``tests/unit/test_query_usage.py`` checks every name the code asks for).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

__all__ = ["Q", "Query", "QueryBook", "load_queries", "parse_queries"]

_BLOCK = re.compile(r"^--\s*(name|fragment):\s*([a-z][a-z0-9_]*)\s*$", re.MULTILINE)
_INCLUDE = re.compile(r"^(\s*)--\s*include:\s*([a-z][a-z0-9_]*)\s*(?:\((.*)\))?\s*$")
_SLOT = re.compile(r"\{([a-z][a-z0-9_]*)\}")
_PLACEHOLDER = re.compile(r"\$(\d+)")
_NAMED = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")
_WRITES = re.compile(r"\b(INSERT|UPDATE|DELETE|pg_notify|nextval|TRUNCATE)\b", re.IGNORECASE)
# Comments, string literals, quoted identifiers and dollar-quoted bodies: no parameters inside.
_NOT_CODE = re.compile(r"--[^\n]*|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\$\$.*?\$\$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Query:
    """One named statement.  ``params``: its parameter names, in ``$n`` order
    (empty for a query that numbers its placeholders itself)."""

    name: str
    sql: str
    doc: str = ""
    writes: bool = False
    params: tuple[str, ...] = ()
    psycopg_sql: str = field(default="", repr=False)

    @classmethod
    def build(cls, name: str, sql: str, doc: str = "") -> Query:
        sql, params = _number_named_parameters(name, sql, doc)
        escaped = sql.replace("%", "%%")
        return cls(
            name=name,
            sql=sql,
            doc=doc,
            writes=bool(_WRITES.search(_strip_comments(sql))),
            params=params,
            psycopg_sql=_PLACEHOLDER.sub(lambda m: f"%(p{m.group(1)})s", escaped),
        )

    def arguments(self, args: tuple[Any, ...], named: Mapping[str, Any]) -> tuple[Any, ...]:
        """The positional values for ``$1 ... $n``: ``args`` for a query with
        numbered placeholders, ``named`` (every name, no other) for one with names."""
        if not self.params:
            if named:
                raise TypeError(f"query {self.name} takes positional parameters, not names")
            return args
        if args:
            raise TypeError(f"query {self.name} takes named parameters: {', '.join(self.params)}")
        if len(named) == len(self.params):
            try:  # every name given (its names are distinct): one pass, in C
                return tuple(map(named.__getitem__, self.params))
            except KeyError:
                pass
        missing = [p for p in self.params if p not in named]
        unknown = sorted(set(named) - set(self.params))
        raise TypeError(f"query {self.name}: missing {missing}, unknown {unknown}")


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


def _code_spans(sql: str) -> Iterator[tuple[bool, str]]:
    """``sql`` cut into (is_code, text) pieces: comments and quoted text are not code."""
    pos = 0
    for match in _NOT_CODE.finditer(sql):
        yield True, sql[pos : match.start()]
        yield False, match.group(0)
        pos = match.end()
    yield True, sql[pos:]


def _number_named_parameters(name: str, sql: str, doc: str) -> tuple[str, tuple[str, ...]]:
    """``:name`` → ``$n``, numbered in the order the header documents them."""
    used: list[str] = []
    for code, text in _code_spans(sql):
        if code:
            used.extend(n for n in _NAMED.findall(text) if n not in used)
    if not used:
        return sql, ()
    if any(code and _PLACEHOLDER.search(text) for code, text in _code_spans(sql)):
        raise ValueError(f"query {name} mixes named (:name) and numbered ($n) parameters")
    params = tuple(dict.fromkeys(_NAMED.findall(doc)))
    if set(params) != set(used):
        raise ValueError(
            f"query {name}: the header documents {sorted(params)}, the SQL uses {sorted(used)}"
        )
    number = {param: f"${i}" for i, param in enumerate(params, start=1)}
    pieces = [
        _NAMED.sub(lambda m: number[m.group(1)], text) if code else text
        for code, text in _code_spans(sql)
    ]
    return "".join(pieces), params


@dataclass(frozen=True, slots=True)
class _Block:
    kind: str  # "name" or "fragment"
    name: str
    doc: str
    text: str
    source: str


def _parse_blocks(text: str, source: str) -> list[_Block]:
    blocks: list[_Block] = []
    matches = list(_BLOCK.finditer(text))
    preamble = text[: matches[0].start()] if matches else text
    if any(line.strip() and not line.strip().startswith("--") for line in preamble.splitlines()):
        raise ValueError(f"{source}: SQL before the first '-- name:' line")
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[match.end() : end]
        doc_lines: list[str] = []
        sql_lines: list[str] = []
        for line in body.strip("\n").splitlines():
            if not sql_lines and line.startswith("--") and not _INCLUDE.match(line):
                doc_lines.append(line[2:].strip())
            else:
                sql_lines.append(line)
        sql = "\n".join(sql_lines).strip().rstrip(";").strip()
        kind, name = match.group(1), match.group(2)
        if not sql:
            raise ValueError(f"{source}: {'query' if kind == 'name' else kind} {name} is empty")
        blocks.append(_Block(kind, name, " ".join(doc_lines), sql, source))
    return blocks


def _expand(block: _Block, fragments: Mapping[str, _Block], depth: int = 0) -> str:
    if depth > 8:
        raise ValueError(f"{block.source}: includes nest too deep in {block.name}")
    out: list[str] = []
    for line in block.text.splitlines():
        match = _INCLUDE.match(line)
        if match is None:
            out.append(line)
            continue
        indent, name, arg_text = match.groups()
        fragment = fragments.get(name)
        if fragment is None:
            raise ValueError(f"{block.source}: {block.name} includes unknown fragment {name}")
        slots = dict(_parse_slots(arg_text or "", block))
        wanted = set(_SLOT.findall(fragment.text))
        if set(slots) != wanted:
            raise ValueError(
                f"{block.source}: {block.name} fills {sorted(slots)} of fragment {name}, "
                f"which has slots {sorted(wanted)}"
            )
        text = _fill(_expand(fragment, fragments, depth + 1), slots)
        out.extend(indent + piece if piece else piece for piece in text.splitlines())
    return "\n".join(out)


def _fill(text: str, slots: Mapping[str, str]) -> str:
    return _SLOT.sub(lambda m: slots[m.group(1)], text)


def _parse_slots(arg_text: str, block: _Block) -> Iterator[tuple[str, str]]:
    for item in filter(None, (part.strip() for part in arg_text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[a-z][a-z0-9_]*", key.strip()):
            raise ValueError(f"{block.source}: {block.name}: bad include argument {item!r}")
        yield key.strip(), value.strip()


def _build(blocks: list[_Block], known: Mapping[str, _Block] | None = None) -> dict[str, Query]:
    fragments: dict[str, _Block] = dict(known or {})
    queries: dict[str, _Block] = {}
    for block in blocks:
        table = queries if block.kind == "name" else fragments
        if block.name in table:
            what = "query" if block.kind == "name" else "fragment"
            raise ValueError(f"{block.source}: {what} {block.name} defined twice")
        table[block.name] = block
    return {
        name: Query.build(name, _expand(block, fragments), block.doc)
        for name, block in queries.items()
    }


def parse_queries(text: str, source: str = "<string>") -> dict[str, Query]:
    """Split one ``.sql`` file into its named queries (its fragments included)."""
    return _build(_parse_blocks(text, source))


def load_queries() -> QueryBook:
    """Load every ``pgqueue/sql/*.sql`` file; a fragment may serve queries of any file."""
    blocks: list[_Block] = []
    root = resources.files("pgqueue") / "sql"
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql"):
            blocks.extend(_parse_blocks(entry.read_text("utf-8"), entry.name))
    return QueryBook(_build(blocks))


Q = load_queries()
