"""A combined random nemesis: faults drawn from a seeded generator, one at a time.

Each step injects one fault, holds it, heals it, and lets the system run a
moment before the next: kill -9 / SIGSTOP / SIGTERM of a broker, SIGSTOP past
the lease / kill -9 of a worker, the reply to a COMMIT dropped, every database
connection of the proxied broker cut, the LISTEN connection killed, and (with
a server of the run's own) a PostgreSQL restart.  The same seed gives the same
schedule; the run's history records what was done.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence

from pgqueue.embedded import EmbeddedPostgres
from tests.fault_proxy import FaultProxy
from tests.faults.harness import SESSION_STALE_MS, FaultRun


def _is_commit(data: bytes) -> bool:
    return b"COMMIT" in data


class Nemesis:
    def __init__(
        self,
        run: FaultRun,
        rng: random.Random,
        *,
        proxy: FaultProxy | None = None,
        proxied: str | None = None,
        postgres: EmbeddedPostgres | None = None,
    ) -> None:
        self.run = run
        self.rng = rng
        self.proxy = proxy
        self.proxied = proxied
        self.postgres = postgres
        self.steps: list[str] = []

    def menu(self) -> list[tuple[str, Callable[[], object]]]:
        faults: list[tuple[str, Callable[[], object]]] = [
            ("kill-broker", self.kill_broker),
            ("stop-broker", self.stop_broker),
            ("sigterm-broker", self.sigterm_broker),
            ("stop-worker", self.stop_worker),
            ("kill-worker", self.kill_worker),
            ("listen-kill", self.listen_kill),
        ]
        if self.proxy is not None:
            faults += [("commit-reply-dropped", self.commit_drop), ("proxy-cut", self.proxy_cut)]
        if self.postgres is not None:
            faults.append(("pg-restart", self.pg_restart))
        return faults

    async def run_for(self, seconds: float, *, min_steps: int = 0) -> None:
        """Faults for ``seconds``, and at least ``min_steps`` of them."""
        deadline = time.monotonic() + seconds
        menu = self.menu()
        while time.monotonic() < deadline or len(self.steps) < min_steps:
            name, action = self.rng.choice(menu)
            began = time.monotonic()
            result = action()
            if asyncio.iscoroutine(result):
                await result
            self.steps.append(f"{name} {time.monotonic() - began:.1f}s")
            await asyncio.sleep(self.rng.uniform(0.5, 2.0))  # the schedule, not a wait

    def _broker(self) -> str:
        return self.rng.choice(sorted(self.run.brokers))

    def _worker(self) -> str:
        return self.rng.choice(sorted(self.run.workers))

    async def kill_broker(self) -> None:
        name = self._broker()
        self.run.kill_broker(name)
        await asyncio.sleep(self.rng.uniform(0.2, 2.0))
        await asyncio.to_thread(self.run.restart_broker, name)

    async def stop_broker(self) -> None:
        name = self._broker()
        self.run.stop(name)
        await asyncio.sleep(self.rng.uniform(0.5, SESSION_STALE_MS / 1000 + 2))
        self.run.resume(name)

    async def sigterm_broker(self) -> None:
        name = self._broker()
        await asyncio.to_thread(self.run.terminate_broker, name)
        await asyncio.to_thread(self.run.restart_broker, name)

    async def stop_worker(self) -> None:
        name = self._worker()
        self.run.stop(name)
        await asyncio.sleep(self.rng.uniform(0.5, 4.0))  # often past its 2 s lease
        self.run.resume(name)

    async def kill_worker(self) -> None:
        name = self._worker()
        self.run.kill_worker(name)
        self.run.restart_worker(name)

    async def listen_kill(self) -> None:
        await self.run.kill_listen(self._broker())

    async def commit_drop(self) -> None:
        assert self.proxy is not None and self.proxied is not None
        self.proxy.arm(_is_commit)
        try:
            await asyncio.wait_for(self.proxy.cut.wait(), timeout=3)
        except TimeoutError:
            self.proxy.arm(lambda _: False)
            return
        self.run.nemesis.nemesis("commit-reply-dropped", self.proxied)

    def proxy_cut(self) -> None:
        assert self.proxy is not None and self.proxied is not None
        self.run.nemesis.nemesis("proxy-cut", self.proxied)
        self.proxy.cut_all()

    async def pg_restart(self) -> None:
        assert self.postgres is not None
        self.run.nemesis.nemesis("pg-restart", "postgres")
        await asyncio.to_thread(self.postgres.restart)
        self.run.nemesis.nemesis("pg-restart", "postgres", "end")


async def combined_run(
    run: FaultRun,
    *,
    seed: int,
    seconds: float,
    queue: str,
    proxy: FaultProxy | None = None,
    postgres: EmbeddedPostgres | None = None,
    brokers: Sequence[str] = ("b1", "b2"),
    workers: int = 2,
    producers: int = 1,
    min_steps: int = 0,
) -> Nemesis:
    """Brokers (the first through ``proxy`` when given), workers, producers and a
    subscriber under the seeded nemesis for ``seconds``; then :meth:`FaultRun.finish`."""
    for i, name in enumerate(brokers):
        await run.start_broker_async(name, dsn=proxy.dsn if proxy and i == 0 else None)
    await run.start_subscriber("s1", queue)
    for i in range(workers):
        run.start_worker(f"w{i + 1}", queue, concurrency=4, lock_ms=2_000, work_ms=30)
    for i in range(producers):
        run.start_producer(
            f"p{i + 1}",
            queue,
            work_ms=30,
            poison_every=40,
            poison_options={"attempts": 3, "backoff": 100},
            pause=0.01,
        )
    await run.progress(10, timeout=60)
    nemesis = Nemesis(
        run,
        random.Random(seed),
        proxy=proxy,
        proxied=brokers[0] if proxy else None,
        postgres=postgres,
    )
    await nemesis.run_for(seconds, min_steps=min_steps)
    return nemesis
