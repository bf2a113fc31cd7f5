"""Background upkeep that runs on one leader broker at a time."""

from __future__ import annotations
