"""``pgqueue token hash|add``: entries of a tokens file (``pgqueue serve --tokens-file``).

``token add NAME --namespace A [--read-only] --file PATH`` makes a random
secret, appends its entry (the digest, never the secret) to the file and
prints the secret once on stdout: give it to the client, then ``kill -HUP``
the brokers.  With ``--dsn`` instead of ``--file`` the entry goes in the
``pgqueue_tokens`` table (brokers with ``--tokens-from-db``).  ``token hash
NAME --namespace A`` reads a secret you chose from stdin and prints the entry
line.  The format is in docs/security.md.
"""

from __future__ import annotations

import asyncio
import os
import sys

import click

from pgqueue.errors import ConfigError
from pgqueue.server.tokens import (
    ALL_NAMESPACES,
    MIN_SECRET_CHARS,
    TokenEntry,
    digest_of,
    format_entry,
    new_secret,
    parse_tokens,
    read_tokens_file,
)

__all__ = ["register", "token"]

_namespace_option = click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    required=True,
    metavar="NS",
    help=f"a namespace the token may use (repeatable; {ALL_NAMESPACES!r}: every namespace)",
)
_read_only_option = click.option(
    "--read-only", is_flag=True, default=False, help="refuse every write of this token"
)


def _entry(name: str, secret: str, namespaces: tuple[str, ...], read_only: bool) -> TokenEntry:
    spaces = ALL_NAMESPACES if ALL_NAMESPACES in namespaces else ",".join(namespaces)
    line = f"{name} {digest_of(secret)} {spaces} {'ro' if read_only else 'rw'}"
    return parse_tokens(line, "the new entry")[0]  # the file's own rules check it


@click.group("token")
def token() -> None:
    """Make entries of a tokens file (hashed tokens bound to namespaces)."""


@token.command("hash")
@click.argument("name")
@_namespace_option
@_read_only_option
def hash_cmd(name: str, namespaces: tuple[str, ...], read_only: bool) -> None:
    """Print the entry line of a secret read from stdin (one line)."""
    secret = sys.stdin.readline().strip()
    if len(secret) < MIN_SECRET_CHARS:
        raise ConfigError(f"the secret must be at least {MIN_SECRET_CHARS} characters")
    click.echo(format_entry(_entry(name, secret, namespaces, read_only)))


@token.command("add")
@click.argument("name")
@_namespace_option
@_read_only_option
@click.option(
    "--file", "path", default=None, metavar="PATH", help="the tokens file  [default: none]"
)
@click.option(
    "--dsn",
    default=None,
    metavar="URL",
    help="the database instead (table pgqueue_tokens)  [default: none]",
)
def add_cmd(
    name: str, namespaces: tuple[str, ...], read_only: bool, path: str | None, dsn: str | None
) -> None:
    """Add a new token to the tokens file (or the database); print its secret once."""
    if (path is None) == (dsn is None):
        raise ConfigError("give --file PATH or --dsn URL (one of them)")
    if dsn is not None:
        secret = new_secret()
        asyncio.run(_insert(dsn, _entry(name, secret, namespaces, read_only)))
        click.echo(secret)
        click.echo(
            f"pgqueue: token {name} added to pgqueue_tokens; send SIGHUP to the brokers "
            "(--tokens-from-db) to load it",
            err=True,
        )
        return
    assert path is not None
    existing = read_tokens_file(path) if os.path.exists(path) else []
    if any(entry.name == name for entry in existing):
        raise ConfigError(f"the tokens file {path} has a token named {name} already")
    secret = new_secret()
    line = format_entry(_entry(name, secret, namespaces, read_only))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        out.write(line + "\n")
    click.echo(secret)
    click.echo(
        f"pgqueue: token {name} added to {path}; send SIGHUP to the brokers to load it",
        err=True,
    )


async def _insert(dsn: str, entry: TokenEntry) -> None:
    from pgqueue.db.asyncpg_db import connect_asyncpg
    from pgqueue.db.queries import Q

    db = await connect_asyncpg(dsn, min_size=1, max_size=1, application_name="pgqueue:token")
    try:
        added = await db.fetchval(
            Q.token_insert,
            name=entry.name,
            digest=entry.digest,
            namespaces=None if entry.namespaces is None else list(entry.namespaces),
            read_only=entry.read_only,
        )
    finally:
        await db.close()
    if added is None:
        raise ConfigError(f"pgqueue_tokens has a token named {entry.name} (or that secret)")


def register(group: click.Group) -> None:
    group.add_command(token)
