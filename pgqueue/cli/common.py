"""What several commands share: engine settings given as ``--set NAME=VALUE``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pgqueue.config import Config
from pgqueue.errors import ConfigError

__all__ = ["SETTABLE", "engine_settings"]

SETTABLE = {
    f.name: f.type
    for f in dataclasses.fields(Config)
    if f.name not in ("dsn", "namespace", "broker_id", "server_settings")
}
"""Engine settings ``--set`` accepts: every :class:`~pgqueue.config.Config` field but
the ones with flags of their own."""


def engine_settings(pairs: Sequence[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs as :class:`~pgqueue.config.Config` fields (ints and booleans)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or name not in SETTABLE:
            known = ", ".join(sorted(SETTABLE))
            raise ConfigError(f"--set {pair!r}: expected NAME=VALUE with NAME one of {known}")
        if SETTABLE[name] in (bool, "bool"):
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ConfigError(f"--set {name} must be true or false")
            out[name] = raw.lower() in ("true", "1", "yes")
        else:
            try:
                out[name] = int(raw)
            except ValueError:
                raise ConfigError(f"--set {name} must be an integer") from None
    return out
