"""The ``pgqueue`` command line (the only place that reads the environment)."""

from __future__ import annotations
