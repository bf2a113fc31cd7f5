"""Per-queue DLQ and stall settings, stored as jsonb in ``pgqueue_queues``.

A setter validates its patch (:mod:`pgqueue.manager.dlq.policy`), then merges
it into the stored settings in one statement (concurrent patches of
different fields both land).  Getters fill in the defaults.  The reaper reads
``stall_config`` directly (``enabled``, ``maxStalls``); the DLQ queries read
``dlq_config``.
"""

from __future__ import annotations

from typing import Any

import orjson

from pgqueue.db.queries import Q
from pgqueue.manager.context import EngineContext
from pgqueue.manager.dlq.policy import (
    DEFAULT_DLQ_CONFIG,
    DlqConfig,
    StallConfig,
    complete_dlq_config,
    complete_stall_config,
    default_stall_config,
)
from pgqueue.manager.rows import json_or_none

__all__ = ["get_dlq_config", "get_stall_config", "set_dlq_config", "set_stall_config"]


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


async def get_dlq_config(ctx: EngineContext, queue: str) -> DlqConfig:
    stored = await ctx.scoped.fetchval(Q.queue_dlq_config_get, queue=queue)
    return complete_dlq_config(json_or_none(stored))


async def set_dlq_config(ctx: EngineContext, queue: str, patch: dict[str, Any]) -> DlqConfig:
    """Merge a validated patch; return the whole config now in force."""
    stored = await ctx.scoped.fetchval(
        Q.queue_dlq_config_merge,
        queue=queue,
        defaults=_json(DEFAULT_DLQ_CONFIG),
        patch=_json(patch),
    )
    return complete_dlq_config(json_or_none(stored))


async def get_stall_config(ctx: EngineContext, queue: str) -> StallConfig:
    stored = await ctx.scoped.fetchval(Q.queue_stall_config_get, queue=queue)
    return complete_stall_config(json_or_none(stored), ctx.config.max_stalls_default)


async def set_stall_config(ctx: EngineContext, queue: str, patch: dict[str, Any]) -> StallConfig:
    """Merge a validated patch; return the whole config now in force."""
    defaults = default_stall_config(ctx.config.max_stalls_default)
    stored = await ctx.scoped.fetchval(
        Q.queue_stall_config_merge, queue=queue, defaults=_json(defaults), patch=_json(patch)
    )
    return complete_stall_config(json_or_none(stored), ctx.config.max_stalls_default)
