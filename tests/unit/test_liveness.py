"""Whether the process holding a broker session provably ended (no database)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from pgqueue.manager.liveness import holder_status, this_process

me = this_process()
needs_proc = pytest.mark.skipif(me.host_key is None, reason="no /proc host key here")


@needs_proc
def test_this_very_process_is_alive() -> None:
    assert holder_status(me, me) == "alive"


@needs_proc
def test_a_process_that_exited_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert holder_status(me, dataclasses.replace(me, pid=child.pid, start=None)) == "gone"


@needs_proc
def test_a_pid_now_held_by_a_process_started_at_another_time_is_gone() -> None:
    assert me.start is not None
    assert holder_status(me, dataclasses.replace(me, start=me.start - 1)) == "gone"


def test_a_process_in_another_pid_namespace_or_host_is_unknown() -> None:
    assert holder_status(me, dataclasses.replace(me, host_key="other/pid:[1]")) == "unknown"
    assert holder_status(me, dataclasses.replace(me, hostname="elsewhere")) == "unknown"
    assert holder_status(me, dataclasses.replace(me, pid=None)) == "unknown"
