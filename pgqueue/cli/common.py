"""What several commands share: the DSN from flags or the environment."""

from __future__ import annotations

import argparse
import os

from pgqueue.errors import ConfigError

__all__ = ["add_dsn_argument", "dsn_from"]


def add_dsn_argument(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    help_text = "PostgreSQL URL (default: $PGQUEUE_DSN)"
    if not required:
        help_text += "; without one, an embedded PostgreSQL is started"
    parser.add_argument("--dsn", default=os.environ.get("PGQUEUE_DSN"), help=help_text)


def dsn_from(args: argparse.Namespace) -> str:
    if not args.dsn:
        raise ConfigError("no database: pass --dsn postgresql://... or set PGQUEUE_DSN")
    return str(args.dsn)
