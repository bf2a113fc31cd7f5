"""Prometheus collectors of the HTTP API (on the broker's registry)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

__all__ = ["HttpMetrics"]


class HttpMetrics:
    """Requests by route and status, and the event streams open."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "pgqueue_http_requests_total",
            "HTTP requests served, by route and status",
            ["method", "route", "status"],
            registry=registry,
        )
        self.streams = Gauge(
            "pgqueue_http_event_streams",
            "Server-sent event streams open",
            registry=registry,
        )

    def observe(self, method: str, route: str, status: int) -> None:
        self.requests.labels(method, route, str(status)).inc()
