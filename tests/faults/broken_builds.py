"""Deliberately broken brokers: the negative controls of the history checker.

A broker started with :func:`broken_env` imports a ``sitecustomize`` from a
temporary directory put first on ``PYTHONPATH``; it calls :func:`install`,
which monkeypatches one defect back into that process only.  Production code
carries no test hook: the defects live here.

- ``ack-without-fence``: completions are a write by id (no fence, token or
  lease check), as Oban's and Graphile Worker's are.
- ``drop-event``: every 7th ``completed`` event is not sent to TCP subscribers.
- ``borrow-tokens``: a token-less ACK from any connection gets the token of
  whoever claimed the job.
- ``lose-admitted-job``: every 10th admission is answered, then deleted.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

_FENCE_CHECK = """      AND j.fence = i.fence
      AND (i.token IS NULL
           OR (j.lease_token = i.token AND j.lease_until > statement_timestamp()))
      AND NOT (:skip_with_dependents::bool AND j.has_dependents)"""


def _ack_without_fence() -> None:
    from dataclasses import replace

    from pgqueue.db.queries import Q

    query = Q.job_finish_many
    # The loader numbered the named parameters: find the fence checks by their shape
    # (the statement writes its compare-and-set out twice: the lock of the newest row
    # version and the delete), and remove every one of them.
    check = re.compile(
        r"\n +AND j\.fence = i\.fence\n +AND \(i\.token IS NULL\n"
        r" +OR \(j\.lease_token = i\.token AND j\.lease_until > statement_timestamp\(\)\)\)"
    )
    sql, removed = check.subn("", query.sql)
    assert removed, "job_finish_many no longer has the fence check this control removes"
    vars(Q)["_queries"]["job_finish_many"] = replace(query, sql=sql)


def _drop_event() -> None:
    import pgqueue.server.tenant as broker  # where the event frames are forwarded

    original = broker.event_to_wire
    completed = itertools.count(1)

    def dropping(event: Any) -> dict[str, Any] | None:
        if event.type == "completed" and next(completed) % 7 == 0:
            return None
        return original(event)

    broker.event_to_wire = dropping  # type: ignore[assignment]


def _borrow_tokens() -> None:
    from pgqueue.server.claims import ClaimBook

    def token_for(self: ClaimBook, job_id: str, client_id: str) -> str | None:
        claim = self._claims.get(job_id)
        return None if claim is None else claim[0]  # (token, client, ...)

    ClaimBook.token_for = token_for  # type: ignore[method-assign]


def _lose_admitted_job() -> None:
    import pgqueue.manager.admission as admission
    from pgqueue.db.queries import Query

    original = admission.admit
    calls = itertools.count(1)
    delete = Query.build(
        "broken_delete", "DELETE FROM pgqueue_jobs WHERE namespace = $1 AND id = $2"
    )

    async def admit(ctx: Any, specs: Any, *args: Any, **kwargs: Any) -> list[str]:
        ids: list[str] = await original(ctx, specs, *args, **kwargs)
        if ids and next(calls) % 10 == 0:
            await ctx.db.execute(delete, ctx.namespace, ids[0])
        return ids

    admission.admit = admit  # type: ignore[assignment]


BROKEN: dict[str, Callable[[], None]] = {
    "ack-without-fence": _ack_without_fence,
    "drop-event": _drop_event,
    "borrow-tokens": _borrow_tokens,
    "lose-admitted-job": _lose_admitted_job,
}


def install(name: str) -> None:
    """Put the defect ``name`` back into this process (called by sitecustomize)."""
    BROKEN[name]()


def broken_env(directory: Path, name: str) -> dict[str, str]:
    """Environment of a broker process with the defect ``name``."""
    assert name in BROKEN, name
    hook = directory / f"broken-{name}"
    hook.mkdir(parents=True, exist_ok=True)
    (hook / "sitecustomize.py").write_text(
        "import sys\n"
        "from tests.faults.broken_builds import install\n"
        f"install({name!r})\n"
        f"print('BROKEN BUILD: {name}', file=sys.stderr)\n"
    )
    return {"PYTHONPATH": f"{hook}:{ROOT}"}
