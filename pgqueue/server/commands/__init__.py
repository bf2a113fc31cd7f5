"""Command handlers, one module per group of bunqueue's catalogue (§1.6)."""

from __future__ import annotations

from pgqueue.server.commands import consuming, producing, queries, session

__all__ = ["consuming", "producing", "queries", "session"]
