"""The broker: bunqueue's TCP protocol and an HTTP API on top of the engine."""

from __future__ import annotations
