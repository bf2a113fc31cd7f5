"""What several commands share: engine settings given as ``--set NAME=VALUE``, and
the two kinds of options every command declares the same way."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from pgqueue.config import Config
from pgqueue.errors import ConfigError

__all__ = [
    "SETTABLE",
    "create_db_option",
    "engine_settings",
    "env_option",
    "env_var",
    "shown_option",
]

F = TypeVar("F", bound=Callable[..., Any])


def env_var(flag: str) -> str:
    """The environment variable of a flag: ``--tcp-port`` is ``$PGQUEUE_TCP_PORT``."""
    return "PGQUEUE_" + flag.lstrip("-").upper().replace("-", "_")


def env_option(flag: str, *decls: str, **attrs: Any) -> Callable[[F], F]:
    """An option ``flag`` that its :func:`env_var` sets too (both shown in ``--help``)."""
    return click.option(flag, *decls, envvar=env_var(flag), show_envvar=True, **attrs)


def shown_option(flag: str, *decls: str, **attrs: Any) -> Callable[[F], F]:
    """An option whose ``--help`` shows its default (also outside the ``pgqueue`` group)."""
    return click.option(flag, *decls, show_default=True, **attrs)


SETTABLE = {
    f.name: f.type
    for f in dataclasses.fields(Config)
    if f.name not in ("dsn", "namespace", "broker_id", "server_settings")
}
"""Engine settings ``--set`` accepts: every :class:`~pgqueue.config.Config` field but
the ones with flags of their own."""


def engine_settings(pairs: Sequence[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs as :class:`~pgqueue.config.Config` fields (ints and booleans)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or name not in SETTABLE:
            known = ", ".join(sorted(SETTABLE))
            raise ConfigError(f"--set {pair!r}: expected NAME=VALUE with NAME one of {known}")
        if SETTABLE[name] in (bool, "bool"):
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ConfigError(f"--set {name} must be true or false")
            out[name] = raw.lower() in ("true", "1", "yes")
        else:
            try:
                out[name] = int(raw)
            except ValueError:
                raise ConfigError(f"--set {name} must be an integer") from None
    return out


create_db_option = click.option(
    "--create-db",
    is_flag=True,
    default=False,
    help="create the --dsn database when it does not exist",
)
"""``--create-db`` (``serve`` and ``migrate``)."""
