"""Storage: named queries, the executor seam and its two drivers."""

from __future__ import annotations
