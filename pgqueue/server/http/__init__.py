"""The broker's HTTP API (port 6790): bunqueue's REST routes, SSE, probes, metrics.

Modules: ``routes`` (the route table), ``binding`` (a route's command map),
``app`` (the Starlette application), ``server`` (uvicorn on the broker's loop),
``sse`` (event streams), ``health`` (liveness, readiness), ``auth`` (bearer
tokens), ``body`` (JSON bodies), ``status`` (status codes), ``openapi`` (the
OpenAPI document and ``/docs``), ``telemetry`` and ``jsonio``.  The reference
is docs/http-api.md.
"""

from __future__ import annotations
