"""A facade method that only forwards: ``list_dlq = forward(actions.list_dlq)``.

A flow function takes the :class:`~pgqueue.manager.context.EngineContext`
first and checks its own arguments; :func:`forward` makes the manager's method
of it, with the flow's signature and docstring, which passes the manager's
context and nothing else.  So the signature is written once, on the flow.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from pgqueue.manager.base import ManagerBase
from pgqueue.manager.context import EngineContext

__all__ = ["forward"]

P = ParamSpec("P")
R = TypeVar("R")


def forward(
    flow: Callable[Concatenate[EngineContext, P], Awaitable[R]],
) -> Callable[Concatenate[ManagerBase, P], Coroutine[Any, Any, R]]:
    """The manager method that runs ``flow`` on the manager's context."""

    async def method(self: ManagerBase, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await flow(self.ctx, *args, **kwargs)

    functools.update_wrapper(method, flow)
    return method
