"""The worker loop: PULL(B), ACK(B), FAIL, lease heartbeats, progress, logs, workers."""

from __future__ import annotations

from typing import Any

from pgqueue.errors import JobCancelled, JobNotFound, LeaseLost, PgQueueError, ValidationError
from pgqueue.manager.claim import MAX_PULL_COUNT, MAX_PULL_TIMEOUT_MS, Claims
from pgqueue.manager.completion import FailItem
from pgqueue.manager.models import AckItem, ItemOutcome
from pgqueue.protocol import Fields
from pgqueue.server.pulled_view import pulled_view
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request
from pgqueue.server.wire import check_pull_group, client_message, removal_value

group = CommandGroup()
command = group.command

MAX_LOCK_TTL_MS = 86_400_000
MAX_BATCH_ITEMS = 10_000


async def _pull(req: Request, count: int) -> Claims:
    f = req.fields
    queue = f.queue()
    owner = f.opt_str("owner", max_len=256)
    lock_ttl = f.opt_int("lockTtl", minimum=1, maximum=MAX_LOCK_TTL_MS)
    timeout = f.opt_int("timeout", minimum=0, maximum=MAX_PULL_TIMEOUT_MS, default=0)
    detach = f.opt_bool("detach", default=False)
    group_defaults = check_pull_group(f)
    anonymous = not f.has("owner")  # the reply carries no token
    if req.broker.draining or req.client.closed:
        return Claims()
    jobs = await req.manager.pull_batch(
        queue,
        count,
        owner=owner or None,
        lock_ttl_ms=lock_ttl,
        timeout_ms=timeout,
        group=group_defaults,
    )
    if jobs and req.client.closed:
        # The reply has nowhere to go (the connection closed during a long poll,
        # the HTTP client disconnected):
        # give the jobs back now instead of leaving them leased to nobody until
        # the lease ends and counts as a stall.
        await req.manager.release([(job.id, job.token) for job in jobs])
        return Claims()
    for job in jobs:
        req.broker.claims.claimed(job.id, job.token, req.client.client_id, anonymous=anonymous)
        if not detach:
            req.client.pulled[job.id] = job.token
    return jobs


def _rate_limited(response: dict[str, Any], jobs: Claims) -> dict[str, Any]:
    """An empty reply held back by a full rate window says when it reopens
    (``rateLimitTtl``, ms; the queue's or its groups' window)."""
    if not jobs and jobs.retry_after_ms is not None:
        response["rateLimitTtl"] = jobs.retry_after_ms
    return response


def _observe_pull(req: Request, wire_jobs: list[dict[str, Any]]) -> None:
    if wire_jobs:
        req.broker.metrics.observe_pull(wire_jobs[0]["queue"], wire_jobs)


@command("PULL")
async def pull(req: Request) -> dict[str, Any]:
    jobs = await _pull(req, 1)
    job = jobs[0] if jobs else None
    response: dict[str, Any] = {"job": pulled_view(job) if job else None}
    _observe_pull(req, [response["job"]] if job else [])
    if req.fields.has("owner"):
        response["token"] = job.token if job else None
    return _rate_limited(response, jobs)


@command("PULLB")
async def pull_batch(req: Request) -> dict[str, Any]:
    count = req.fields.int_("count", minimum=1, maximum=MAX_PULL_COUNT)
    jobs = await _pull(req, count)
    views = [pulled_view(job) for job in jobs]
    _observe_pull(req, views)
    response = _job_rows(views) if req.client.job_rows else None
    if response is None:
        response = {"jobs": views}
    if req.fields.has("owner"):
        response["tokens"] = [job.token for job in jobs]
    return _rate_limited(response, jobs)


def _job_rows(views: list[dict[str, Any]]) -> dict[str, Any] | None:
    """PULLB's jobs for a client whose ``Hello`` listed ``job-rows``: ``columns`` (the
    keys, once) and ``rows`` (each job's values in that order), the same jobs as
    ``jobs`` would carry, without 43 key strings per job on either side (encode,
    bytes, decode).  None (answer ``jobs``) when the views' keys differ."""
    if not views:
        return None
    columns = list(views[0])
    if not all(map(columns.__eq__, map(list, views))):  # (C loops: ~0.2 us a job)
        return None
    rows = [list(view.values()) for view in views]
    return {"columns": columns, "rows": rows}


def _token(req: Request, job_id: str, given: str | None) -> str | None:
    """The lock token of a job: as sent, or the one of this client's own claim
    (see :mod:`pgqueue.server.claims` for whose claims a client may write)."""
    if given:
        return given
    return req.client.pulled.get(job_id) or req.broker.claims.token_for(
        job_id, req.client.client_id
    )


def _forget(req: Request, outcome: ItemOutcome, token: str, *, finished: bool) -> None:
    """The claim is over (``finished``: by an ACK, the job is done)."""
    if outcome.applied or outcome.reason == "already-finalized":
        req.client.pulled.pop(outcome.job_id, None)
        req.broker.claims.ended(outcome.job_id, token, by_client=outcome.applied, finished=finished)


def _aligned(f: Fields, name: str, ids: list[str], command_name: str) -> list[Any] | None:
    values = f.get(name)
    if values is None:
        return None
    if not isinstance(values, list):
        raise f.error(name, "must be an array")
    if len(values) != len(ids):
        raise ValidationError(f"{command_name} {name} length must match ids length", field=name)
    return values


def _finalized(outcome: ItemOutcome) -> dict[str, Any] | None:
    """bunqueue's answer for a completion: ok, already-finalized, or an error."""
    if outcome.error is not None:
        raise outcome.error
    if outcome.applied:
        return None
    if outcome.reason == "already-finalized":
        return {"data": {"applied": False, "reason": "already-finalized"}}
    if outcome.reason == "not-found":
        raise JobNotFound(outcome.job_id)
    raise LeaseLost(outcome.job_id)


def _job_and_token(req: Request) -> tuple[str, str]:
    """The ``id`` of a completion and its lock token (given, or the one this broker holds)."""
    job_id = req.fields.job_id("id")
    token = _token(req, job_id, req.fields.opt_str("token"))
    if token is None:
        raise ValidationError(f"Lock token required for job {job_id}", field="token")
    return job_id, token


@command("ACK")
async def ack(req: Request) -> dict[str, Any] | None:
    f = req.fields
    job_id, token = _job_and_token(req)
    result = f.opt_json_value("result")
    remove = removal_value(f, "removeOnComplete")
    outcome = await req.broker.ack(AckItem(job_id, token, result, remove))
    _forget(req, outcome, token, finished=True)
    return _finalized(outcome)


@command("ACKB")
async def ack_batch(req: Request) -> dict[str, Any] | None:
    f = req.fields
    ids = f.job_id_list("ids", max_items=MAX_BATCH_ITEMS)
    tokens = _aligned(f, "tokens", ids, "ACKB") or [None] * len(ids)
    results = _aligned(f, "results", ids, "ACKB") or [None] * len(ids)
    removes = _aligned(f, "removeOnCompletes", ids, "ACKB") or [None] * len(ids)
    items: list[AckItem] = []
    missing: list[int] = []
    for i, job_id in enumerate(ids):
        given = tokens[i]
        if given is not None and not isinstance(given, str):
            raise f.error(f"tokens[{i}]", "must be a string")
        token = _token(req, job_id, given)
        if token is None:
            missing.append(i)
            continue
        result, remove = results[i], removes[i]
        if result is not None or remove is not None:  # (most ACKs: neither, nothing to check)
            entry = Fields({"result": result, "remove": remove}, path=f"[{i}].")
            result, remove = entry.opt_json_value("result"), removal_value(entry, "remove")
        items.append(AckItem(job_id, token, result, remove, where=f"results[{i}]"))
    outcomes = await req.manager.ack_batch(items) if items else []
    req.broker.count_stale(outcomes)
    ignored = list(missing)
    finalized: list[int] = []
    failed: list[tuple[int, PgQueueError]] = []
    skipped = set(missing)
    positions = [i for i in range(len(ids)) if i not in skipped]
    for index, item, outcome in zip(positions, items, outcomes, strict=True):
        if outcome.error is not None:
            failed.append((index, outcome.error))
            continue
        _forget(req, outcome, item.token, finished=True)
        if outcome.reason == "already-finalized":
            finalized.append(index)
        elif not outcome.applied:
            ignored.append(index)
    data: dict[str, Any] = {}
    if ignored:
        ignored.sort()
        data = {"ignoredIds": [ids[i] for i in ignored], "ignoredIndices": ignored}
    if finalized:
        # A pgqueue extension (bunqueue counts these as acked): items whose job an
        # earlier claim already finished, so this ACK changed nothing.
        data["finalizedIndices"] = finalized
    if failed:
        # A pgqueue extension: items left undecided by an error after others of
        # the request committed (G1); the request as a whole is not a failure.
        data["errorIndices"] = [index for index, _ in failed]
        data["errors"] = [client_message(error) for _, error in failed]
    return {"data": data} if data else None


@command("FAIL")
async def fail(req: Request) -> dict[str, Any] | None:
    f = req.fields
    job_id, token = _job_and_token(req)
    error = f.opt_str("error", max_len=100_000) or ""
    stack = f.opt_str_list("stack", max_items=1000, max_len=100_000)
    unrecoverable = f.opt_bool("unrecoverable", default=False)
    f.opt_bool("removeOnFail")  # type-checked; the job's own removeOnFail applies
    outcome = await req.broker.fail(FailItem(job_id, token, error, stack, unrecoverable))
    _forget(req, outcome, token, finished=False)
    return _finalized(outcome)


async def _extend(
    req: Request, ids: list[str], tokens: list[Any], durations: list[int] | int
) -> list[ItemOutcome]:
    items = []
    for i, job_id in enumerate(ids):
        given = tokens[i]
        if given is not None and not isinstance(given, str):
            raise req.fields.error(f"tokens[{i}]", "must be a string")
        items.append((job_id, _token(req, job_id, given) or ""))
    return await req.manager.extend_leases(items, durations)


def _refuse_unrenewed(outcome: ItemOutcome, message: str) -> None:
    """A single-job heartbeat that renewed nothing: bunqueue's error, or
    ``Job <id> was cancelled`` for a job cancelled while this claim held it."""
    if outcome.reason == "cancelled":
        raise JobCancelled(outcome.job_id)
    if not outcome.applied:
        raise LeaseLost(outcome.job_id, message)


def _renewal_counts(outcomes: list[ItemOutcome]) -> dict[str, Any]:
    """``count`` renewed; ``cancelled`` (a pgqueue extension, only when some are):
    the ids whose job was cancelled while their claim held it."""
    counts: dict[str, Any] = {"count": sum(o.applied for o in outcomes)}
    cancelled = [o.job_id for o in outcomes if o.reason == "cancelled"]
    if cancelled:
        counts["cancelled"] = cancelled
    return counts


@command("JobHeartbeat")
async def job_heartbeat(req: Request) -> dict[str, Any]:
    f = req.fields
    job_id = f.job_id("id")
    duration = f.opt_int(
        "duration", minimum=1, maximum=MAX_LOCK_TTL_MS, default=req.manager.config.lease_ms
    )
    token = _token(req, job_id, f.opt_str("token"))
    if token is None:
        raise ValidationError(f"Lock token required for job {job_id}", field="token")
    [outcome] = await _extend(req, [job_id], [token], duration)
    _refuse_unrenewed(outcome, "Job not found or not active (or invalid token)")
    return {"data": {"ok": True}}


@command("JobHeartbeatB")
async def job_heartbeat_batch(req: Request) -> dict[str, Any]:
    f = req.fields
    ids = f.job_id_list("ids", max_items=MAX_BATCH_ITEMS)
    tokens = _aligned(f, "tokens", ids, "JobHeartbeatB") or [None] * len(ids)
    outcomes = await _extend(req, ids, tokens, req.manager.config.lease_ms)
    return {"data": {"ok": True, **_renewal_counts(outcomes)}}


@command("ExtendLock")
async def extend_lock(req: Request) -> dict[str, Any] | None:
    f = req.fields
    job_id = f.job_id("id")
    duration = f.int_("duration", minimum=1, maximum=MAX_LOCK_TTL_MS)
    token = _token(req, job_id, f.opt_str("token"))
    if token is None:
        raise ValidationError(f"Lock token required for job {job_id}", field="token")
    [outcome] = await _extend(req, [job_id], [token], duration)
    _refuse_unrenewed(outcome, "Lock not found or invalid token")
    return None


@command("ExtendLocks")
async def extend_locks(req: Request) -> dict[str, Any]:
    f = req.fields
    ids = f.job_id_list("ids", max_items=MAX_BATCH_ITEMS)
    tokens = _aligned(f, "tokens", ids, "ExtendLocks") or [None] * len(ids)
    raw = _aligned(f, "durations", ids, "ExtendLocks")
    if raw is None:
        raise f.error("durations", "is required")
    durations = [
        Fields({f"durations[{i}]": value}).int_(
            f"durations[{i}]", minimum=1, maximum=MAX_LOCK_TTL_MS
        )
        for i, value in enumerate(raw)
    ]
    outcomes = await _extend(req, ids, tokens, durations)
    return _renewal_counts(outcomes)
