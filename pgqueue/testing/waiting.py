"""Waiting for a condition in tests (of code that uses pgqueue, and of pgqueue).

:func:`eventually` waits for a condition with a deadline instead of sleeping
for a guessed duration.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["eventually"]

T = TypeVar("T")


async def eventually(
    condition: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = 10.0,
    interval: float = 0.01,
    message: str = "condition",
) -> T:
    """Poll ``condition`` until it returns a truthy value; raise on the deadline.

    ``condition`` may be a plain or an async callable.  Returns its value.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() >= deadline:
            raise TimeoutError(f"{message} still false after {timeout}s")
        await asyncio.sleep(interval)
