"""What several commands share: the DSN from flags or the environment."""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from pgqueue.config import Config
from pgqueue.errors import ConfigError

__all__ = ["add_dsn_argument", "dsn_from", "engine_settings"]


def add_dsn_argument(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    help_text = "PostgreSQL URL (default: $PGQUEUE_DSN)"
    if not required:
        help_text += "; without one, an embedded PostgreSQL is started"
    parser.add_argument("--dsn", default=os.environ.get("PGQUEUE_DSN"), help=help_text)


def dsn_from(args: argparse.Namespace) -> str:
    if not args.dsn:
        raise ConfigError("no database: pass --dsn postgresql://... or set PGQUEUE_DSN")
    return str(args.dsn)


_SETTABLE = {
    f.name: f.type
    for f in dataclasses.fields(Config)
    if f.name not in ("dsn", "namespace", "broker_id", "server_settings")
}


def engine_settings(pairs: Sequence[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs as :class:`~pgqueue.config.Config` fields (ints and booleans)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or name not in _SETTABLE:
            known = ", ".join(sorted(_SETTABLE))
            raise ConfigError(f"--set {pair!r}: expected NAME=VALUE with NAME one of {known}")
        if _SETTABLE[name] in (bool, "bool"):
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ConfigError(f"--set {name} must be true or false")
            out[name] = raw.lower() in ("true", "1", "yes")
        else:
            try:
                out[name] = int(raw)
            except ValueError:
                raise ConfigError(f"--set {name} must be an integer") from None
    return out
