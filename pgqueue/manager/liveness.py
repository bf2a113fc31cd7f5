"""Which process holds a broker session, and whether it provably ended.

A session row records the process that registered it: hostname, pid, and on
Linux a *host key* (kernel boot id and pid namespace) and the process start
time.  Two processes with the same host key see the same pids, so a pid that
no longer exists there (or that now names a process started at another time,
or a zombie) proves the old broker dead.  Without a host key (another
platform) nothing is proven: the caller waits for the session to go stale.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["HolderStatus", "ProcessIdentity", "holder_status", "this_process"]

PROC = Path("/proc")

HolderStatus = Literal["gone", "alive", "unknown"]


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """A process as a session row records it."""

    hostname: str | None
    pid: int | None
    host_key: str | None
    start: int | None


def _host_key() -> str | None:
    try:
        boot_id = (PROC / "sys/kernel/random/boot_id").read_text().strip()
        pid_namespace = os.readlink(PROC / "self/ns/pid")
    except OSError:
        return None
    return f"{boot_id}/{pid_namespace}" if boot_id and pid_namespace else None


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in ticks) of ``pid``, or None when there is no such process."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])


def this_process() -> ProcessIdentity:
    pid = os.getpid()
    key = _host_key()
    stat = _stat(pid) if key else None
    return ProcessIdentity(socket.gethostname(), pid, key, stat[1] if stat else None)


def holder_status(me: ProcessIdentity, holder: ProcessIdentity) -> HolderStatus:
    """Whether the process ``holder`` ended, as far as ``me`` can prove."""
    if me.host_key is None or holder.host_key != me.host_key or holder.pid is None:
        return "unknown"
    if holder.hostname != me.hostname:
        return "unknown"
    try:
        stat = _stat(holder.pid)
    except (OSError, ValueError, IndexError):
        return "unknown"
    if stat is None:
        return "gone"
    state, start = stat
    if state in ("Z", "X") or (holder.start is not None and start != holder.start):
        return "gone"  # a zombie, or the pid was reused by another process
    return "alive"
