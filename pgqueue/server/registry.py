"""How the command table is made: bunqueue command name -> handler.

Handlers live in :mod:`pgqueue.server.commands` modules, one per group; each
module has a :class:`CommandGroup` and marks its handlers with the group's
``command`` decorator.  :mod:`pgqueue.server.commands` lists the groups and
builds the table from them (:func:`build_table`): importing a module
registers nothing anywhere.  A handler reads its fields (which validates
them), calls the engine, and returns the payload merged into
``{ok: true, reqId}``; it raises a :class:`~pgqueue.errors.PgQueueError` for
``{ok: false, error}``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pgqueue.server.request import Request

__all__ = ["CommandGroup", "Handler", "build_table"]

Handler = Callable[["Request"], Awaitable[dict[str, Any] | None]]


class CommandGroup:
    """The handlers of one command module, by command name."""

    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}

    def command(self, *names: str) -> Callable[[Handler], Handler]:
        """Mark a handler as serving one or more command names."""

        def mark(handler: Handler) -> Handler:
            for name in names:
                if name in self.handlers:
                    raise RuntimeError(f"command {name} registered twice")
                self.handlers[name] = handler
            return handler

        return mark


def build_table(groups: Iterable[CommandGroup]) -> dict[str, Handler]:
    """One table of the groups' handlers; a name served by two groups is refused."""
    table: dict[str, Handler] = {}
    for group in groups:
        for name, handler in group.handlers.items():
            if name in table:
                raise RuntimeError(f"command {name} registered twice")
            table[name] = handler
    return table
