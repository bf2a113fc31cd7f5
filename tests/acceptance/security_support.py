"""Helpers of the security tests: token files, self-signed certificates, TCP clients."""

from __future__ import annotations

import secrets
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgqueue.client.connection import Connection
from pgqueue.errors import RemoteError
from pgqueue.server.tokens import TokenEntry, digest_of, format_entry


@dataclass(frozen=True)
class Token:
    name: str
    secret: str
    namespaces: tuple[str, ...] | None
    read_only: bool = False

    def line(self) -> str:
        return format_entry(
            TokenEntry(self.name, digest_of(self.secret), self.namespaces, self.read_only)
        )


def make_token(name: str, *namespaces: str, read_only: bool = False) -> Token:
    return Token(name, secrets.token_urlsafe(24), namespaces or None, read_only)


def write_tokens(path: Path, *tokens: Token) -> Path:
    path.write_text("# test tokens\n" + "".join(t.line() + "\n" for t in tokens))
    return path


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def call(conn: Connection, cmd: str, **fields: Any) -> dict[str, Any]:
    """The answer map, ``{ok: false, error}`` included (no exception)."""
    try:
        return await conn.call(cmd, fields)
    except RemoteError as exc:
        return {"ok": False, "error": exc.message}


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1 and its key (openssl)."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key
