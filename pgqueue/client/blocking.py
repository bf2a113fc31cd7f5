"""Blocking proxies: an async SDK object used from a thread that is not its loop's.

``Blocking(obj, loop)`` forwards every attribute to ``obj``; a coroutine
method becomes a call that runs on ``loop`` and blocks until it is done, an
async iterator becomes a plain iterator, ``with`` maps to ``async with``, and
SDK objects it returns come back wrapped too.  Nothing is written twice: the
sync facade (:mod:`pgqueue.sync`) and plain-function job handlers both use
this one proxy over the async classes.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["Blocking", "call_blocking"]

T = TypeVar("T")


def call_blocking(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on ``loop`` (running in another thread) and wait for it."""
    if _in_loop_thread(loop):
        coroutine.close()
        raise RuntimeError(
            "a blocking pgqueue call was made on its own event loop's thread; "
            "use the async API there (await ...)"
        )
    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


def _in_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _wrap(value: Any, loop: asyncio.AbstractEventLoop) -> Any:
    if isinstance(value, list):
        return [_wrap(item, loop) for item in value]
    module = type(value).__module__
    if module.startswith("pgqueue.client.") and not isinstance(value, BaseException | type):
        return Blocking(value, loop)
    return value


def _unwrap(value: Any) -> Any:
    if isinstance(value, Blocking):
        return value.wrapped
    if isinstance(value, list):
        return [_unwrap(item) for item in value]
    return value


def _unwrapped(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    return [_unwrap(a) for a in args], {k: _unwrap(v) for k, v in kwargs.items()}


class Blocking:
    """A blocking view of an async object (see the module docstring)."""

    __slots__ = ("_loop", "_target")

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_loop", loop)

    @property
    def wrapped(self) -> Any:
        """The async object behind this proxy."""
        return self._target

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if inspect.iscoroutinefunction(value):
            return self._blocking(value)
        if inspect.isasyncgenfunction(value):
            return self._iterating(value)
        if callable(value) and not isinstance(value, type):
            return self._on_loop(value)
        return _wrap(value, self._loop)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)

    def __dir__(self) -> list[str]:
        return dir(self._target)

    def __repr__(self) -> str:
        return f"Blocking({self._target!r})"

    def _blocking(self, method: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            args_, kwargs_ = _unwrapped(args, kwargs)
            return _wrap(call_blocking(self._loop, method(*args_, **kwargs_)), self._loop)

        return call

    def _on_loop(self, method: Callable[..., Any]) -> Callable[..., Any]:
        """A plain method, called on the loop's thread (the SDK's state lives there)."""

        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            args_, kwargs_ = _unwrapped(args, kwargs)

            async def on_loop() -> Any:
                return method(*args_, **kwargs_)

            return _wrap(call_blocking(self._loop, on_loop()), self._loop)

        return call

    def _iterating(self, method: Callable[..., Any]) -> Callable[..., Iterator[Any]]:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Iterator[Any]:
            args_, kwargs_ = _unwrapped(args, kwargs)
            return self._iterate(method(*args_, **kwargs_))

        return call

    def _iterate(self, iterator: Any) -> Iterator[Any]:
        try:
            while True:
                try:
                    item = call_blocking(self._loop, iterator.__anext__())
                except StopAsyncIteration:
                    return
                yield _wrap(item, self._loop)
        finally:
            closer = getattr(iterator, "aclose", None)
            if closer is not None and not self._loop.is_closed():
                call_blocking(self._loop, closer())

    def __iter__(self) -> Iterator[Any]:
        async def start() -> Any:
            return self._target.__aiter__()

        return self._iterate(call_blocking(self._loop, start()))

    def __enter__(self) -> Blocking:
        call_blocking(self._loop, self._target.__aenter__())
        return self

    def __exit__(self, *exc: Any) -> None:
        call_blocking(self._loop, self._target.__aexit__(*exc))
