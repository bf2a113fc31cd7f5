"""Prometheus metrics of one broker (a registry of its own, exported on /metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["BrokerMetrics"]


class BrokerMetrics:
    """Per-command counts and latencies; more collectors register on ``registry``."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.commands = Counter(
            "pgqueue_commands_total",
            "Commands served, by name and outcome",
            ["command", "outcome"],
            registry=self.registry,
        )
        self.command_seconds = Histogram(
            "pgqueue_command_duration_seconds",
            "Time to serve a command",
            ["command"],
            registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30),
        )

    def observe_command(self, command: str, seconds: float, ok: bool) -> None:
        self.commands.labels(command, "ok" if ok else "error").inc()
        self.command_seconds.labels(command).observe(seconds)
