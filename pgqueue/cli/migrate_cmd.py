"""``pgqueue migrate``: bring the schema to the version this pgqueue needs.

Safe to run from several hosts at once: the migration takes an advisory lock.
"""

from __future__ import annotations

import argparse

from pgqueue.cli.common import add_dsn_argument, dsn_from
from pgqueue.db.schema import SCHEMA_VERSION, migrate

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("migrate", help="create or upgrade the pgqueue schema")
    add_dsn_argument(parser)
    parser.add_argument(
        "--revision", default="head", help="target revision (default: head); older = downgrade"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    migrate(dsn_from(args), args.revision)
    target = SCHEMA_VERSION if args.revision == "head" else args.revision
    print(f"pgqueue schema at revision {target}")
    return 0
