"""What every operator command shares: where to connect, and how to answer.

``--connection`` is ``pgqueue://host:port[,host:port...]`` (brokers, with
``--token``) or ``postgresql://...`` (the database itself, through the
embedded engine; ``--namespace`` picks the namespace).  The default is
``$PGQUEUE_CONNECTION``, then ``$PGQUEUE_DSN``, then the local broker that
``pgqueue serve`` starts (``pgqueue://127.0.0.1:6789``).  Every command goes
through :class:`pgqueue.client.Admin` and :class:`pgqueue.client.Queue`:
one code path, both transports.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click

from pgqueue.cli.common import env_option
from pgqueue.client import Admin, Queue
from pgqueue.errors import ConfigError

__all__ = [
    "DEFAULT_CONNECTION",
    "Target",
    "confirm_or_refuse",
    "connection_options",
    "json_option",
    "run_async",
]

DEFAULT_CONNECTION = "pgqueue://127.0.0.1:6789"
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Target:
    """Where an operator command connects."""

    connection: str
    token: str | None
    namespace: str | None

    @property
    def embedded(self) -> bool:
        return urlsplit(self.connection).scheme in ("postgresql", "postgres")

    def admin(self) -> Admin:
        """An :class:`Admin` on this target (the caller closes it)."""
        options: dict[str, Any] = {}
        if self.embedded:
            if self.token is not None:
                raise ConfigError("--token is for brokers (pgqueue://...), not postgresql://")
            # A command line reads and acts; the brokers run the maintenance.
            options["run_maintenance"] = False
            options["pool_max_size"] = 4
            if self.namespace is not None:
                options["namespace"] = self.namespace
        else:
            if self.namespace is not None and self.token is None:
                raise ConfigError(
                    "--namespace with brokers needs --token: the token names the "
                    "namespaces it may use (docs/security.md)"
                )
            if self.token is not None:
                options["token"] = self.token
            if self.namespace is not None:
                options["namespace"] = self.namespace
        return Admin(self.connection, **options)


def _target(
    connection: str | None, token: str | None, namespace: str | None, from_env: bool
) -> Target:
    chosen = connection or os.environ.get("PGQUEUE_DSN") or DEFAULT_CONNECTION
    if from_env and urlsplit(chosen).scheme == "pgqueue":
        namespace = None  # $PGQUEUE_NAMESPACE (set for `pgqueue serve`) is the database's
    return Target(chosen, token, namespace)


def connection_options(fn: F) -> F:
    """``--connection``, ``--token``, ``--namespace``; the command gets ``target``."""

    @env_option(
        "--connection",
        "-c",
        default=None,
        help="pgqueue://host:port[,host:port...] (brokers) or postgresql://... (the "
        f"database); default: $PGQUEUE_CONNECTION, then $PGQUEUE_DSN, then {DEFAULT_CONNECTION}",
    )
    @env_option("--token", default=None, help="auth token sent to the brokers  [default: none]")
    @env_option(
        "--namespace",
        default=None,
        help="namespace of a postgresql:// connection  [default: default]",
    )
    @functools.wraps(fn)
    def wrapper(
        *args: Any,
        connection: str | None,
        token: str | None,
        namespace: str | None,
        **kwargs: Any,
    ) -> Any:
        source = click.get_current_context().get_parameter_source("namespace")
        from_env = source is click.core.ParameterSource.ENVIRONMENT
        return fn(*args, target=_target(connection, token, namespace, from_env), **kwargs)

    return wrapper  # type: ignore[return-value]


yes_option = click.option(
    "--yes", "-y", is_flag=True, default=False, help="do not ask for confirmation"
)
"""``--yes``: a destructive command does not ask (see :func:`confirm_or_refuse`)."""

json_option = click.option(
    "--json", "as_json", is_flag=True, default=False, help="print JSON for scripts"
)


def run_async(work: Awaitable[T]) -> T:
    return asyncio.run(_quiet(work))


async def _quiet(work: Awaitable[T]) -> T:
    return await work


def confirm_or_refuse(question: str, yes: bool) -> None:
    """Ask ``question`` on the terminal unless ``--yes``; with no terminal to ask on,
    refuse (exit code 2): a script must say ``--yes``."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.UsageError(f"{question} Refused: no terminal to confirm on; pass --yes.")
    if not click.confirm(question, default=False, err=True):
        raise click.Abort()


async def with_admin(target: Target, work: Callable[[Admin], Awaitable[T]]) -> T:
    """Run ``work`` with an :class:`Admin` on ``target``, closed afterwards."""
    admin = target.admin()
    try:
        return await work(admin)
    finally:
        await admin.close()


def on_queue(target: Target, queue: str, work: Callable[[Queue], Awaitable[T]]) -> T:
    """Run ``work`` on QUEUE (a :class:`Queue` of an :class:`Admin` on ``target``)."""

    async def with_queue(admin: Admin) -> T:
        return await work(await admin.queue(queue))

    return run_async(with_admin(target, with_queue))
