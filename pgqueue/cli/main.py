"""``pgqueue <command>``: one module per command (or group of commands), registered here.

Exit codes: 0 ok, 1 the command failed (a :class:`~pgqueue.errors.PgQueueError`:
one line on stderr, no traceback), 2 usage (a bad flag or argument, or a
destructive command with no terminal to confirm on and no ``--yes``), 130
interrupted.

Extension point: a feature adds its commands by adding its module to
:data:`COMMAND_MODULES` (each has ``register(group)``); the cron schedules and
the queue limits (issue 11) come as ``cron_cmd`` and ``limits_cmd`` that way.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import ModuleType

import click

from pgqueue._version import __version__
from pgqueue.cli import (
    cluster_cmd,
    cron_cmd,
    dlq_cmd,
    jobs_cmd,
    migrate_cmd,
    queues_cmd,
    serve_cmd,
    token_cmd,
    top_cmd,
    worker_cmd,
)
from pgqueue.cli.common import env_option
from pgqueue.cli.logs import LOG_FORMATS, LOG_LEVELS, configure_logging
from pgqueue.errors import PgQueueError

__all__ = ["COMMAND_MODULES", "cli", "main"]

COMMAND_MODULES: tuple[ModuleType, ...] = (
    serve_cmd,
    migrate_cmd,
    worker_cmd,
    queues_cmd,
    jobs_cmd,
    dlq_cmd,
    cluster_cmd,
    top_cmd,
    cron_cmd,
    token_cmd,
)

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100, "show_default": True}


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, prog_name="pgqueue", message="%(prog)s %(version)s")
@env_option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    default="INFO",
    help="least severe records logged",
)
@env_option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default="text",
    help="text, or one JSON object per line (log shippers)",
)
def cli(log_level: str, log_format: str) -> None:
    """pgqueue: a PostgreSQL-backed, multi-broker job queue.

    Operator commands talk to brokers (--connection pgqueue://host:port,...) or
    straight to the database (--connection postgresql://...); every read command
    takes --json.  `pgqueue COMMAND --help` describes each one.
    """
    configure_logging(log_level.upper(), log_format)


for _module in COMMAND_MODULES:
    _module.register(cli)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = cli.main(args=args, prog_name="pgqueue", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.exceptions.Abort:
        print("pgqueue: aborted", file=sys.stderr)
        return 1
    except click.ClickException as exc:
        exc.show()
        return int(exc.exit_code)
    except PgQueueError as exc:
        print(f"pgqueue: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
