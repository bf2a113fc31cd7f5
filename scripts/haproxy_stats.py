"""What HAProxy thinks of each broker, read from its stats socket (``show stat``).

The socket is the ``stats socket`` line of the configuration that
``scripts/haproxy_config.py`` writes when given one (``scripts/cluster.py`` does).
"""

from __future__ import annotations

import csv
import io
import socket
from dataclasses import dataclass

__all__ = ["ServerStat", "show_stat"]


@dataclass(frozen=True)
class ServerStat:
    """One server line: its health status and its sessions."""

    backend: str
    server: str
    status: str  # "UP", "DOWN", "UP 1/2" (going down), "DOWN 1/2" (coming up), "MAINT"
    current_sessions: int
    total_sessions: int
    check_status: str

    @property
    def up(self) -> bool:
        """Whether HAProxy routes new connections to this server now."""
        return self.status.startswith("UP")


def _command(path: str, command: str, timeout: float) -> str:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(command.encode() + b"\n")
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode()


def show_stat(path: str, timeout: float = 5.0) -> list[ServerStat]:
    """Every server of every backend (frontend and backend summary lines left out)."""
    text = _command(path, "show stat", timeout).lstrip("# ")
    servers = []
    for row in csv.DictReader(io.StringIO(text)):
        if row.get("svname") in (None, "FRONTEND", "BACKEND"):
            continue
        servers.append(
            ServerStat(
                backend=row["pxname"],
                server=row["svname"],
                status=row["status"],
                current_sessions=int(row["scur"] or 0),
                total_sessions=int(row["stot"] or 0),
                check_status=row.get("check_status", ""),
            )
        )
    return servers
