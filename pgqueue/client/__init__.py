"""The Python SDK: ``Queue``, ``Worker``, ``FlowProducer``, ``QueueEvents``.

One API, two transports: ``connection="postgresql://..."`` runs the engine in
this process (embedded); ``connection="pgqueue://host:6789,host2:6789"`` talks
to brokers over bunqueue's TCP protocol.
"""

from __future__ import annotations
