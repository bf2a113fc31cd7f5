"""Every job option, declared once: its names, type, bounds, default and home.

One :class:`JobOption` per option says what every front end needs to know:

- ``python``: the name ``Queue.add(..., **opts)`` and the engine use (snake_case);
- ``wire``: bunqueue's camelCase field (TCP and HTTP), ``None`` when it has none;
- ``kind``: how a value is read (see :data:`Kind`), with ``lo``/``hi`` bounds for
  numbers and item counts for lists, and the ``default`` when it is not set;
- ``transports``: who may send it (``sdk``: the Python API, ``wire``: TCP and
  HTTP); an option set by the SDK itself (flows) is ``internal``;
- ``stored``: where the engine keeps it: ``column`` (a column of the job row,
  read by admission), ``opts`` (the job's ``opts`` document, written and read
  back without any code of its own) or ``ignored`` (bunqueue's, type-checked
  and not acted on);
- ``view``: the job view shows it (for ``opts`` options, with ``view_default``).

From these come the engine's option names and labels, the wire reader's table,
the SDK's wire names, the HTTP route table (so the OpenAPI document) and the
options table of ``docs/protocol.md``; :class:`JobOptions`, the SDK's typed
view of them, stands beside them (a test holds the two equal).  An option of
a plain kind (``integer``, ``number``, ``boolean``, ``ids``, ``texts``) stored
in ``opts`` needs nothing but its declaration (and its line in ``JobOptions``);
the other kinds have a named reader in the engine (:mod:`pgqueue.manager.options`)
and on the wire (:mod:`pgqueue.server.wire`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypedDict

from pgqueue.vocabulary.checks import DAY_MS, MAX_EPOCH_MS, YEAR_MS

__all__ = [
    "DEFAULT_BACKOFF_MAX_MS",
    "DEFAULT_BACKOFF_MS",
    "DEFAULT_MAX_ATTEMPTS",
    "ENGINE_NAMES",
    "JOB_OPTIONS",
    "PLAIN_KINDS",
    "WIRE_LABELS",
    "BackoffOptions",
    "DedupOptions",
    "DeduplicationOptions",
    "JobOption",
    "JobOptions",
    "JsonType",
    "KeepJobs",
    "Kind",
    "RepeatOptions",
    "Stored",
    "Transport",
    "by_python",
    "camel_hints",
    "opts_options",
    "sdk_options",
    "wire_options",
]

Kind = Literal[
    "integer",  # an integer in lo..hi (an integral float counts)
    "number",  # a finite number in lo..hi
    "boolean",  # true or false
    "text",  # a string of at most hi characters
    "id",  # a job id (pgqueue.vocabulary.names)
    "ids",  # a list of at most hi job ids
    "texts",  # a list of at most hi strings
    "backoff",  # ms, or {type, delay, maxDelay}
    "dedup",  # {ttl?, extend?, replace?}
    "deduplication",  # BullMQ's {id, ttl?, extend?, replace?}
    "removal",  # a boolean, or BullMQ's count / {age, count}
    "group",  # a string (or an integer, made a string on the wire)
    "object",  # a map
]
Transport = Literal["sdk", "wire", "internal"]
JsonType = Literal["string", "integer", "number", "boolean", "array", "object", "any"]
Stored = Literal["column", "opts", "ignored"]

PLAIN_KINDS: Final = frozenset({"integer", "number", "boolean", "ids", "texts"})
"""Kinds read, checked, stored and shown by the declaration alone."""

DEFAULT_MAX_ATTEMPTS: Final = 3
DEFAULT_BACKOFF_MS: Final = 1_000
DEFAULT_BACKOFF_MAX_MS: Final = 3_600_000

_JSON_TYPES: Final[Mapping[Kind, JsonType]] = {
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "text": "string",
    "id": "string",
    "ids": "array",
    "texts": "array",
    "backoff": "any",
    "dedup": "object",
    "deduplication": "object",
    "removal": "any",
    "group": "string",
    "object": "object",
}

_BOTH: Final[frozenset[Transport]] = frozenset({"sdk", "wire"})
_WIRE: Final[frozenset[Transport]] = frozenset({"wire"})
_INTERNAL: Final[frozenset[Transport]] = frozenset({"internal", "wire"})


@dataclass(frozen=True, slots=True)
class JobOption:
    """One job option (see the module docstring)."""

    python: str | None
    wire: str | None
    kind: Kind
    description: str
    stored: Stored = "column"
    lo: float = 0
    hi: float = 0
    default: object = None
    transports: frozenset[Transport] = _BOTH
    python_aliases: tuple[str, ...] = ()
    wire_aliases: tuple[str, ...] = ()
    view: bool = True
    view_default: object = None

    @property
    def name(self) -> str:
        """The name the option is known by (its Python name, else its wire name)."""
        return self.python or self.wire or ""

    @property
    def json_type(self) -> JsonType:
        """The JSON type of its values, as the OpenAPI document and the docs give it."""
        return _JSON_TYPES[self.kind]

    @property
    def plain(self) -> bool:
        """Read, stored in ``opts`` and shown by the declaration alone."""
        return self.kind in PLAIN_KINDS and self.stored == "opts"


def _opt(
    python: str | None, wire: str | None, kind: Kind, description: str, **kw: object
) -> JobOption:
    return JobOption(python, wire, kind, description, **kw)  # type: ignore[arg-type]


# fmt: off
JOB_OPTIONS: Final[tuple[JobOption, ...]] = (
    _opt("job_id", "jobId", "id", "custom id: a second push with it returns the same job",
         python_aliases=("custom_id",)),
    _opt("priority", "priority", "integer", "higher runs first (0..2097151 in a group)",
         lo=-1_000_000, hi=1_000_000, default=0),
    _opt("delay", "delay", "integer", "ms before the job becomes ready", hi=YEAR_MS, default=0),
    _opt("attempts", "maxAttempts", "integer", "attempts before the job is dead-lettered",
         lo=1, hi=1000, default=DEFAULT_MAX_ATTEMPTS, python_aliases=("max_attempts",),
         wire_aliases=("attempts",)),
    _opt("backoff", "backoff", "backoff",
         "retry backoff: ms, or {type: fixed|exponential, delay, maxDelay}",
         hi=DAY_MS, default=DEFAULT_BACKOFF_MS),
    _opt("timeout", "timeout", "integer", "processing timeout in ms", hi=DAY_MS),
    _opt("ttl", "ttl", "integer", "ms after which an unclaimed job expires", hi=YEAR_MS),
    _opt("stall_timeout", "stallTimeout", "integer",
         "ms without a heartbeat before the job counts as stalled", hi=DAY_MS),
    _opt("unique_key", "uniqueKey", "text", "deduplication key among live jobs", hi=256),
    _opt("dedup", "dedup", "dedup", "with uniqueKey: {ttl?, extend?, replace?}"),
    _opt("deduplication", None, "deduplication",
         "BullMQ's {id, ttl?, extend?, replace?}: uniqueKey and dedup in one (sent as both)",
         transports=frozenset({"sdk"}), view=False),
    _opt("debounce_id", "debounceId", "text",
         "a deduplication key held for debounceTtl ms (a 'debounced' event on a drop)",
         hi=256, view=False),
    _opt("debounce_ttl", "debounceTtl", "integer", "with debounceId: ms the key is held",
         lo=1, hi=YEAR_MS, view=False),
    _opt("group_id", "groupId", "group", "job group", hi=256),
    _opt("depends_on", "dependsOn", "ids", "ids of jobs that must complete first", hi=1000),
    _opt("parent_id", "parentId", "id", "parent job of a flow", transports=_INTERNAL),
    _opt("parent_queue", None, "text", "queue of the parent job (in data.__parentQueue)",
         transports=frozenset({"internal"}), view=False),
    _opt("children_ids", "childrenIds", "ids", "children of a flow parent", stored="opts",
         hi=10_000, transports=_INTERNAL),
    _opt("tags", "tags", "texts", "labels", stored="opts", hi=100),
    _opt("lifo", "lifo", "boolean", "take before older jobs of the same priority",
         default=False),
    _opt("remove_on_complete", "removeOnComplete", "removal",
         "true: drop the job when it completes; a count n / {age, count}: keep the newest n"
         " completed jobs of the queue / those younger than age s", default=False),
    _opt("remove_on_fail", "removeOnFail", "removal",
         "the same when it fails for good (never while a live job waits for it)",
         default=False),
    _opt("fail_parent_on_failure", "failParentOnFailure", "boolean",
         "a child failed for good fails its parent (whose own policy goes on up)",
         stored="opts", view_default=False),
    _opt("remove_dependency_on_failure", "removeDependencyOnFailure", "boolean",
         "a failed child is dropped from its parent's dependencies (no record)",
         stored="opts", view_default=False),
    _opt("ignore_dependency_on_failure", "ignoreDependencyOnFailure", "boolean",
         "the parent stops waiting for a failed child (GetIgnoredChildrenFailures)",
         stored="opts", view_default=False),
    _opt("continue_parent_on_failure", "continueParentOnFailure", "boolean",
         "the parent runs at once when this child fails (GetFailedChildrenValues)",
         stored="opts", view_default=False),
    _opt("stack_trace_limit", "stackTraceLimit", "integer", "stack lines kept on failure",
         stored="opts", hi=1_000_000, view_default=10),
    _opt("keep_logs", "keepLogs", "integer", "log lines kept", stored="opts", hi=1_000_000),
    _opt("timestamp", "timestamp", "number", "creation time (ms since the epoch)",
         hi=MAX_EPOCH_MS, view=False),
    _opt("repeat", "repeat", "object",
         "repeatable job: {pattern | every, tz, limit, startDate, endDate, immediately, count, "
         "jobId}; the job becomes the first run of a scheduler (docs/cron.md)", view=False),
    _opt(None, "durable", "boolean", "accepted for bunqueue (every push is durable here)",
         stored="ignored", transports=_WIRE, view=False),
    _opt(None, "groupMaxSize", "integer", "accepted for bunqueue (not acted on)",
         stored="ignored", hi=2**53 - 1, transports=_WIRE, view=False),
    _opt(None, "sizeLimit", "number", "accepted for bunqueue (not acted on)",
         stored="ignored", hi=float("inf"), transports=_WIRE, view=False),
)
# fmt: on


# -- the SDK's typed view of its options ------------------------------------------
# ``Queue.add(**opts: Unpack[JobOptions])``: mypy needs a written TypedDict, so it
# stands here, beside the declarations, and test_vocabulary holds its keys to
# exactly those of sdk_options().  A new SDK option adds its line below.


class BackoffOptions(TypedDict, total=False):
    """Retry delay: ``delay * 2^(attempt-1)`` (exponential) or ``delay`` (fixed), capped."""

    type: Literal["exponential", "fixed"]
    delay: int
    max_delay: int


class DedupOptions(TypedDict, total=False):
    """What a second job with the same ``unique_key`` does (default: it is refused)."""

    ttl: int
    extend: bool
    replace: bool


class RepeatOptions(TypedDict, total=False):
    """A repeatable job (bunqueue / BullMQ wire names): ``pattern`` (cron, in
    ``tz``) or ``every`` ms; ``limit`` runs, ``startDate`` / ``endDate`` (ms
    since the epoch or ISO 8601), ``immediately``, ``count`` (runs already
    made), ``jobId`` (names the series).  See docs/cron.md."""

    pattern: str
    every: int
    tz: str
    limit: int
    startDate: float | str
    endDate: float | str
    immediately: bool
    count: int
    jobId: str


class KeepJobs(TypedDict, total=False):
    """BullMQ's keep-jobs: the newest ``count`` finished jobs of the queue, those
    finished less than ``age`` seconds ago (both: both rules)."""

    age: int
    count: int


class _DeduplicationId(TypedDict):
    id: str


class DeduplicationOptions(_DeduplicationId, DedupOptions, total=False):
    """BullMQ's ``deduplication``: the key (``id``) and what a second job does."""


class JobOptions(TypedDict, total=False):
    """Options of one job.  Durations are milliseconds."""

    job_id: str
    priority: int
    lifo: bool
    delay: int
    attempts: int
    backoff: int | BackoffOptions
    timeout: int
    ttl: int
    stall_timeout: int
    remove_on_complete: bool | int | KeepJobs
    remove_on_fail: bool | int | KeepJobs
    unique_key: str
    dedup: DedupOptions
    deduplication: DeduplicationOptions
    debounce_id: str
    debounce_ttl: int
    depends_on: list[str]
    group_id: str
    tags: list[str]
    stack_trace_limit: int
    keep_logs: int
    timestamp: float
    fail_parent_on_failure: bool
    ignore_dependency_on_failure: bool
    remove_dependency_on_failure: bool
    continue_parent_on_failure: bool
    repeat: RepeatOptions


def by_python(name: str) -> JobOption:
    """The option whose Python name (or alias) is ``name``."""
    return _BY_PYTHON[name]


_BY_PYTHON: Final[Mapping[str, JobOption]] = {
    alias: option
    for option in JOB_OPTIONS
    if option.python is not None
    for alias in (option.python, *option.python_aliases)
}

ENGINE_NAMES: Final = frozenset(_BY_PYTHON)
"""Every option name the engine accepts (the SDK refuses its ``internal`` ones)."""

WIRE_LABELS: Final[Mapping[str, str]] = {
    alias: option.wire
    for option in JOB_OPTIONS
    if option.python is not None and option.wire is not None
    for alias in (option.python, *option.python_aliases)
    if alias != option.wire and alias != "custom_id"
}
"""Engine name -> wire name, so the engine's messages speak the wire's names."""


def sdk_options() -> tuple[JobOption, ...]:
    """The options ``Queue.add`` takes."""
    return tuple(o for o in JOB_OPTIONS if "sdk" in o.transports)


def wire_options() -> tuple[JobOption, ...]:
    """The options a job input on TCP or HTTP may carry."""
    return tuple(o for o in JOB_OPTIONS if "wire" in o.transports and o.wire is not None)


def opts_options() -> tuple[JobOption, ...]:
    """The options kept in the job's ``opts`` document."""
    return tuple(o for o in JOB_OPTIONS if o.stored == "opts")


def camel_hints() -> dict[str, str]:
    """Wire name -> Python name, for an SDK user who typed the JavaScript spelling."""
    hints = {
        wire: option.python
        for option in sdk_options()
        if option.python is not None
        for wire in (option.wire, *option.wire_aliases)
        if wire is not None and wire != option.python
    }
    hints["parentId"] = "(a FlowProducer)"
    return hints
