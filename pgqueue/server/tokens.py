"""Client tokens: who may use which namespaces, read-only or not (docs/security.md).

A token is a secret the client sends (TCP ``Auth``, HTTP ``Authorization:
Bearer``); the broker keeps only its SHA-256 digest.  Each entry names the
namespaces it may use (``*``: every namespace the broker serves) and whether
it is read-only.  Entries come from two places: ``--auth-token NAME=SECRET``
(every namespace, read-write: the flag as it always was) and the tokens file
(``--tokens-file``, re-read on SIGHUP), one entry a line::

    # name   digest                namespaces     mode
    billing  sha256:9f86d081884c...  billing        rw
    audit    sha256:60303ae22b99...  billing,shop   ro

Blank lines and ``#`` comments are skipped; a wrong line is refused naming
its file and line number, never its content (it holds a digest).  Secrets are
random strings of at least 128 bits (``pgqueue token add`` makes them), so a
plain SHA-256 is enough: a slow password hash guards guessable secrets, and
these are not.  Pure: no I/O but :func:`read_tokens_file`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pgqueue.config import NAMESPACE_PATTERN
from pgqueue.errors import ConfigError

__all__ = [
    "ALL_NAMESPACES",
    "TokenBook",
    "TokenEntry",
    "checked_entry",
    "digest_of",
    "format_entry",
    "new_secret",
    "parse_tokens",
    "read_tokens_file",
]

ALL_NAMESPACES = "*"
DIGEST_PREFIX = "sha256:"
MODES = {"rw": False, "ro": True}
MIN_SECRET_CHARS = 16


def digest_of(secret: str) -> str:
    """``sha256:<hex>`` of a secret (what the tokens file holds)."""
    return DIGEST_PREFIX + hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> str:
    """A fresh random secret (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class TokenEntry:
    """One token: its name (what audits record), digest, namespaces and mode.

    ``namespaces`` is None for every namespace the broker serves; otherwise the
    first listed is the one a client lands in when it does not choose."""

    name: str
    digest: str
    namespaces: tuple[str, ...] | None
    read_only: bool = False

    def allows(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces

    def default_namespace(self, primary: str) -> str:
        """Where a client lands without choosing: the first namespace listed, or
        the broker's own (``--namespace``) for an every-namespace token."""
        return primary if self.namespaces is None else self.namespaces[0]


def format_entry(entry: TokenEntry) -> str:
    """The tokens-file line of ``entry``."""
    spaces = ALL_NAMESPACES if entry.namespaces is None else ",".join(entry.namespaces)
    return f"{entry.name} {entry.digest} {spaces} {'ro' if entry.read_only else 'rw'}"


def _check_name(name: str) -> None:
    if not (0 < len(name) <= 200 and name.isprintable() and " " not in name):
        raise ConfigError("a token name must be 1-200 printable characters without spaces")


def _entry(fields: list[str]) -> TokenEntry:
    if len(fields) not in (3, 4):
        raise ConfigError("expected NAME DIGEST NAMESPACES [rw|ro]")
    name, digest, spaces = fields[:3]
    _check_name(name)
    hex_part = digest.removeprefix(DIGEST_PREFIX)
    if not digest.startswith(DIGEST_PREFIX) or len(hex_part) != 64:
        raise ConfigError("the digest must be sha256: and 64 hex digits (pgqueue token hash)")
    try:
        bytes.fromhex(hex_part)
    except ValueError:
        raise ConfigError("the digest must be sha256: and 64 hex digits") from None
    mode = fields[3] if len(fields) == 4 else "rw"
    if mode not in MODES:
        raise ConfigError("the mode must be rw or ro")
    namespaces: tuple[str, ...] | None = None
    if spaces != ALL_NAMESPACES:
        listed = tuple(dict.fromkeys(spaces.split(",")))
        bad = [ns for ns in listed if not NAMESPACE_PATTERN.match(ns)]
        if bad:
            raise ConfigError(
                "namespaces must be * or a comma-separated list of 1-64 letters, digits, "
                "'_', '.', ':' or '-'"
            )
        namespaces = listed
    return TokenEntry(name, DIGEST_PREFIX + hex_part.lower(), namespaces, MODES[mode])


def parse_tokens(text: str, source: str) -> list[TokenEntry]:
    """The entries of a tokens file's text; :class:`ConfigError` names ``source:line``."""
    entries: list[TokenEntry] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.split("#", 1)[0].strip()
        if not stripped:
            continue
        try:
            entries.append(_entry(stripped.split()))
        except ConfigError as exc:
            raise ConfigError(f"{source}:{number}: {exc.message}") from None
    return entries


def checked_entry(
    name: str, digest: str, namespaces: list[str] | None, read_only: bool, source: str
) -> TokenEntry:
    """An entry from elsewhere (a database row), held to the file's rules."""
    spaces = ALL_NAMESPACES if namespaces is None else ",".join(namespaces)
    line = f"{name} {digest} {spaces} {'ro' if read_only else 'rw'}"
    if len(line.split()) != 4:
        raise ConfigError(f"{source}: token {name[:40]!r} is not a valid entry")
    return parse_tokens(line, source)[0]


def read_tokens_file(path: str) -> list[TokenEntry]:
    """The entries of the tokens file at ``path``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the tokens file {path}: {exc}") from None
    return parse_tokens(text, path)


class TokenBook:
    """The tokens a broker accepts, by digest (replaced whole on a reload).

    ``required``: a broker with a tokens file always asks for a token, even
    when the file lists none (an emptied file locks clients out; it never
    opens the broker)."""

    def __init__(self, entries: Iterable[TokenEntry], *, required: bool = False) -> None:
        self.entries = tuple(entries)
        names = [e.name for e in self.entries]
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise ConfigError(f"token names must be unique: {', '.join(dupes)}")
        digests = [e.digest for e in self.entries]
        if len(set(digests)) != len(digests):
            raise ConfigError("two token entries have the same digest (the same secret)")
        self._by_digest = {e.digest: e for e in self.entries}
        self.required = required or bool(self.entries)

    def match(self, secret: str) -> TokenEntry | None:
        """The entry of ``secret``, else None (digests compared in constant time)."""
        if not isinstance(secret, str) or not secret:
            return None
        wanted = digest_of(secret)
        found = self._by_digest.get(wanted)
        if found is None or not hmac.compare_digest(found.digest, wanted):
            return None
        return found

    def current(self, digest: str) -> TokenEntry | None:
        """The entry with ``digest`` now (None once it is revoked)."""
        return self._by_digest.get(digest)

    def namespaces(self) -> set[str]:
        """Every namespace some entry names (``*`` entries name none)."""
        return {ns for e in self.entries if e.namespaces is not None for ns in e.namespaces}
