"""Job options: validate what a producer asked for, before anything is written.

Pure policy, no I/O.  :func:`build_job_spec` turns ``(queue, name, data,
options)`` into a :class:`JobSpec` or raises :class:`ValidationError` naming
the field.  Messages follow bunqueue's wording (``priority must be at most
1000000``) so that the broker can pass them through; ``labels`` renders the
field names the caller used (the broker's camelCase wire names).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

from pgqueue import jsontext
from pgqueue.errors import ValidationError
from pgqueue.vocabulary.checks import DAY_MS, YEAR_MS, integer_fault
from pgqueue.vocabulary.frozen import fast_maker
from pgqueue.vocabulary.job_options import (
    DEFAULT_BACKOFF_MAX_MS,
    DEFAULT_BACKOFF_MS,
    DEFAULT_MAX_ATTEMPTS,
    ENGINE_NAMES,
    by_python,
    opts_options,
)
from pgqueue.vocabulary.names import (
    MAX_NAME_LENGTH,
    id_fault,
    id_fault_text,
    job_name_fault,
    js_length,
    validate_job_name,
    validate_queue_name,
)

__all__ = [
    "DEFAULT_BACKOFF_MAX_MS",
    "DEFAULT_BACKOFF_MS",
    "DEFAULT_MAX_ATTEMPTS",
    "JOB_OPTIONS",
    "Backoff",
    "DedupMode",
    "JobSpec",
    "Keep",
    "PlainSpecs",
    "build_job_spec",
    "encode_json",
    "plain_spec",
    "plain_specs",
    "removal_policy",
]

JOB_OPTIONS = ENGINE_NAMES
"""Every option name :func:`build_job_spec` accepts (:mod:`pgqueue.vocabulary.job_options`)."""

DedupMode = str  # 'reject' | 'extend' | 'replace'


@dataclass(frozen=True, slots=True)
class Backoff:
    """Retry delay policy: ``exponential`` (base * 2^(attempt-1)) or ``fixed``, capped."""

    type: str = "exponential"
    delay_ms: int = DEFAULT_BACKOFF_MS
    max_delay_ms: int = DEFAULT_BACKOFF_MAX_MS


DEFAULT_BACKOFF = Backoff()


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One validated job, ready for admission."""

    queue: str
    name: str
    data_json: str
    id: str | None = None
    custom_id: str | None = None
    priority: int = 0
    lifo: bool = False
    delay_ms: int = 0
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff: Backoff = DEFAULT_BACKOFF
    timeout_ms: int | None = None
    ttl_ms: int | None = None
    stall_timeout_ms: int | None = None
    remove_on_complete: bool = False
    remove_on_fail: bool = False
    unique_key: str | None = None
    dedup_mode: DedupMode = "reject"
    unique_ttl_ms: int | None = None
    debounced: bool = False
    group_id: str | None = None
    parent_id: str | None = None
    parent_queue: str | None = None
    depends_on: tuple[str, ...] = ()
    created_at_ms: float | None = None
    opts_json: str = "{}"
    repeat: Mapping[str, Any] | None = None


_make_spec = fast_maker(JobSpec)


def plain_spec(queue: str, name: str, data_json: str) -> JobSpec:
    """``JobSpec(queue=queue, name=name, data_json=data_json)``, every other field its
    default, built without the frozen ``__init__`` (which sets each of the 26 fields
    through ``object.__setattr__``; most jobs carry no option and this is their spec):
    :func:`~pgqueue.vocabulary.frozen.fast_maker`, 2.5 -> 1.0 us."""
    return _make_spec(queue, name, data_json)


class PlainSpecs(Sequence[JobSpec]):
    """The specs of a batch of jobs without options (what :func:`plain_specs` gives):
    ``plain_spec(queue, names[i], texts[i])`` for each job, made only when read one by
    one.  Admission reads the columns themselves (``queue``, ``names``, ``texts``) and
    so makes no spec object per job (docs/performance.md)."""

    __slots__ = ("longest", "names", "queue", "texts", "uniform")

    def __init__(self, queue: str, names: list[str], texts: list[str]) -> None:
        self.queue = queue
        self.names = names
        self.texts = texts
        self.uniform = bool(names) and names.count(names[0]) == len(names)
        """Every job has the same name."""
        self.longest = max(map(len, texts), default=0)
        """The length of the longest JSON text, in characters."""

    def __len__(self) -> int:
        return len(self.texts)

    @overload
    def __getitem__(self, index: int) -> JobSpec: ...

    @overload
    def __getitem__(self, index: slice) -> PlainSpecs: ...

    def __getitem__(self, index: int | slice) -> JobSpec | PlainSpecs:
        if isinstance(index, slice):
            return PlainSpecs(self.queue, self.names[index], self.texts[index])
        return plain_spec(self.queue, self.names[index], self.texts[index])

    def __iter__(self) -> Iterator[JobSpec]:
        queue = self.queue
        for name, text in zip(self.names, self.texts, strict=True):
            yield plain_spec(queue, name, text)

    def within(self, max_payload_bytes: int) -> bool:
        """Every job's data is within ``max_payload_bytes`` (judged from the longest
        text: False may also mean "check each")."""
        return self.longest * 4 <= max_payload_bytes  # 4: UTF-8's widest


def plain_specs(
    queue: str, names: Sequence[object], datas: Sequence[Any], *, max_payload_bytes: int
) -> PlainSpecs | None:
    """The specs of jobs with no options, ``build_job_spec(queue, name, data)`` of each
    pair, validated for the whole batch at once; or None when some job needs the
    per-job check (which then names its fault): a name it refuses, data of a shape
    :func:`pgqueue.jsontext.flat_values_ok` does not judge or refuses, or JSON text
    that may be over ``max_payload_bytes``.  ``queue`` is valid (the caller checked)."""
    try:
        distinct = set(names)
    except TypeError:  # an unhashable name: refused by the per-job check
        return None
    if any(job_name_fault(name) is not None for name in distinct):
        return None
    if not jsontext.flat_values_ok(datas):
        return None
    try:
        texts = [jsontext.dumps(data) for data in datas]
    except (TypeError, ValueError, RecursionError):
        return None
    specs = PlainSpecs(queue, list(map(str, names)), texts)
    if len(specs.names) != len(texts):
        raise ValueError("plain_specs: as many names as data")
    return specs if specs.within(max_payload_bytes) else None


def encode_json(
    value: Any,
    *,
    label: str,
    limit: int,
    what: str = "Job data",
    wide_ints: bool = True,
    checked: bool = False,
) -> str:
    """The JSON text of ``value``, stored as it is (see :mod:`pgqueue.jsontext`).

    Refuses, naming ``label``, what JSON cannot hold exactly: non-JSON values
    (``datetime``, ``UUID``, ``Decimal``, Enum members, dataclasses), NaN and
    infinities, NUL characters, nesting deeper than
    :data:`~pgqueue.jsontext.JSON_MAX_DEPTH`, text over ``limit`` bytes and,
    unless ``wide_ints`` (the TCP transport carries 64 bits), integers beyond
    64 bits.  The same rules and messages on every transport.  ``checked``: the
    caller found ``value`` passes :func:`pgqueue.jsontext.value_error` already.
    """
    if value is None:
        return "null"
    problem = None if checked else jsontext.value_error(value, wide_ints=wide_ints)
    if problem == jsontext.NUL_PROBLEM:
        raise ValidationError(f"{what} must not contain NUL characters", field=label)
    if problem is not None:
        raise ValidationError(f"{what} must be JSON serializable: {problem}", field=label)
    try:
        text = jsontext.dumps(value)
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{what} must be valid Unicode", field=label) from exc
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError(f"{what} must be JSON serializable: {exc}", field=label) from exc
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > limit:
        raise ValidationError(f"{what} too large ({size} bytes, max {limit})", field=label)
    return text


class _Reader:
    """Typed access to one job's options, with field-named errors."""

    __slots__ = ("labels", "opts", "prefix")

    def __init__(self, opts: Mapping[str, Any], labels: Mapping[str, str], prefix: str) -> None:
        self.opts = opts
        self.labels = labels
        self.prefix = prefix

    def label(self, key: str) -> str:
        return self.labels.get(key, key)

    def fail(self, key: str, message: str) -> ValidationError:
        return ValidationError(f"{self.prefix}{self.label(key)} {message}", field=key)

    def integer(self, key: str, lo: float, hi: float, default: int | None = None) -> int | None:
        value = self.opts.get(key)
        if value is None:
            return default
        return self.check_int(key, value, lo, hi)

    def check_int(self, key: str, value: Any, lo: float, hi: float) -> int:
        fault = integer_fault(value, lo, hi)
        if fault is not None:
            raise self.fail(key, fault)
        return int(value)

    def boolean(self, key: str, default: bool = False) -> bool:
        value = self.opts.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, "must be a boolean")
        return value

    def string(self, key: str) -> str | None:
        value = self.opts.get(key)
        if value is None:
            return None
        fault = id_fault(value)
        if fault is not None:
            raise self.fail(key, id_fault_text(fault))
        return str(value)

    def string_list(self, key: str, limit: float = 1000) -> tuple[str, ...]:
        value = self.opts.get(key)
        if value is None:
            return ()
        if not isinstance(value, list | tuple) or len(value) > limit:
            raise self.fail(key, f"must be a list of at most {int(limit)} strings")
        out = []
        for item in value:
            if not isinstance(item, str) or not item or js_length(item) > MAX_NAME_LENGTH:
                raise self.fail(key, "must be a list of non-empty strings")
            out.append(item)
        return tuple(out)

    def declared(self, key: str) -> int | None:
        """An integer option, with the bounds and default of its declaration."""
        option = by_python(key)
        default = option.default if isinstance(option.default, int) else None
        return self.integer(key, option.lo, option.hi, default)

    def plain(self, key: str) -> Any:
        """An option of a plain kind (:data:`~pgqueue.vocabulary.job_options.PLAIN_KINDS`),
        read by its declaration; None when not set (or an empty list, or false)."""
        option = by_python(key)
        if option.kind == "boolean":
            return True if self.boolean(key) else None
        if option.kind in ("ids", "texts"):
            return list(self.string_list(key, limit=option.hi)) or None
        if option.kind == "number":
            value = self.opts.get(key)
            return (
                None if value is None else float(self.check_int(key, value, option.lo, option.hi))
            )
        return self.declared(key)


def _backoff(reader: _Reader) -> Backoff:
    value = reader.opts.get("backoff")
    if value is None:
        return DEFAULT_BACKOFF
    if isinstance(value, int | float) and not isinstance(value, bool):
        delay = reader.check_int("backoff", value, 0, DAY_MS)
        return Backoff("exponential", delay, DEFAULT_BACKOFF_MAX_MS)
    if not isinstance(value, Mapping):
        raise reader.fail("backoff", "must be a number or {type, delay}")
    unknown = set(value) - {"type", "delay", "max_delay", "maxDelay"}
    if unknown:
        raise reader.fail("backoff", f"has unknown keys: {', '.join(sorted(unknown))}")
    kind = value.get("type", "exponential")
    if kind not in ("exponential", "fixed"):
        raise ValidationError(
            f"{reader.prefix}{reader.label('backoff')}.type must be 'exponential' or 'fixed'",
            field="backoff",
        )
    delay = reader.check_int("backoff", value.get("delay", DEFAULT_BACKOFF_MS), 0, DAY_MS)
    cap_value = value.get("max_delay", value.get("maxDelay", DEFAULT_BACKOFF_MAX_MS))
    cap = reader.check_int("backoff", cap_value, 0, DAY_MS)
    return Backoff(kind, delay, cap)


def _dedup(reader: _Reader) -> tuple[DedupMode, int | None]:
    value = reader.opts.get("dedup")
    if value is None:
        return "reject", None
    if not isinstance(value, Mapping):
        raise reader.fail("dedup", "must be a map {ttl?, extend?, replace?}")
    unknown = set(value) - {"ttl", "extend", "replace"}
    if unknown:
        raise reader.fail("dedup", f"has unknown keys: {', '.join(sorted(unknown))}")
    sub = _Reader(value, {k: f"{reader.label('dedup')}.{k}" for k in value}, reader.prefix)
    ttl = sub.integer("ttl", 1, YEAR_MS)
    if sub.boolean("replace"):
        return "replace", ttl
    if sub.boolean("extend"):
        if ttl is None:
            raise reader.fail("dedup", "extend needs a ttl")
        return "extend", ttl
    return "reject", ttl


def _repeat(reader: _Reader) -> dict[str, Any] | None:
    """``repeat``: a map (its keys and values are checked by the cron flow)."""
    value = reader.opts.get("repeat")
    if value is None:
        return None
    if not isinstance(value, Mapping) or (
        value.get("pattern") is None and value.get("every") is None
    ):
        raise reader.fail("repeat", "must be a map with a pattern or every")
    return dict(value)


Keep = dict[str, float]
"""What a finished job's removal option keeps: ``{"count": n, "age": seconds}``."""


def removal_policy(
    value: Any, label: str, prefix: str = "", field: str | None = None
) -> tuple[bool, Keep | None]:
    """``(remove at once, what to keep)`` of a removeOnComplete / removeOnFail value.

    BullMQ's meanings: ``true`` removes the job when it finishes, ``false`` (or
    nothing) keeps it; a count ``n`` keeps the newest ``n`` finished jobs of the
    queue in that state (0: remove at once); ``{age, count}`` keeps those
    finished less than ``age`` seconds ago, at most ``count`` of them.  What
    is kept is applied by retention (``finished_keep_trim``)."""
    if value is None or value is False:
        return False, None
    if value is True:
        return True, None

    def fail(message: str) -> ValidationError:
        return ValidationError(f"{prefix}{label} {message}", field=field or label)

    if isinstance(value, int | float) and not isinstance(value, bool):
        fault = integer_fault(value, 0, 2**31 - 1)
        if fault is not None:
            raise fail(fault)
        return (True, None) if value == 0 else (False, {"count": int(value)})
    if not isinstance(value, Mapping):
        raise fail("must be a boolean, a count or {age, count}")
    unknown = set(value) - {"age", "count"}
    if unknown:
        raise fail(f"has unknown keys: {', '.join(sorted(unknown))}")
    keep: Keep = {}
    count = value.get("count")
    if count is not None:
        fault = integer_fault(count, 0, 2**31 - 1)
        if fault is not None:
            raise fail(f"count {fault}")
        keep["count"] = int(count)
    age = value.get("age")
    if age is not None:
        fault = integer_fault(age, 0, YEAR_MS // 1000)
        if fault is not None:
            raise fail(f"age {fault}")
        keep["age"] = int(age)
    if keep.get("count") == 0:
        return True, None
    return False, keep or None


def _deduplication(reader: _Reader) -> tuple[str, DedupMode, int | None] | None:
    """BullMQ's ``deduplication{id, ttl?, extend?, replace?}``: (key, mode, ttl)."""
    value = reader.opts.get("deduplication")
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise reader.fail("deduplication", "must be a map {id, ttl?, extend?, replace?}")
    unknown = set(value) - {"id", "ttl", "extend", "replace"}
    if unknown:
        raise reader.fail("deduplication", f"has unknown keys: {', '.join(sorted(unknown))}")
    label = reader.label("deduplication")
    sub = _Reader(value, {k: f"{label}.{k}" for k in value}, reader.prefix)
    key = sub.string("id")
    if key is None:
        raise reader.fail("deduplication", "needs an id")
    rest = {k: v for k, v in value.items() if k != "id"}
    mode, ttl = _dedup(_Reader({"dedup": rest}, {"dedup": label}, reader.prefix))
    return key, mode, ttl


def _dedup_key(reader: _Reader) -> tuple[str | None, DedupMode, int | None, bool]:
    """(unique key, mode, ttl, debounced) from ``unique_key`` + ``dedup``, BullMQ's
    ``deduplication`` or ``debounce_id`` + ``debounce_ttl`` (one of them)."""
    mode, ttl = _dedup(reader)
    key = reader.string("unique_key")
    given = reader.opts.get("deduplication") is not None
    if given and key is not None:
        raise reader.fail("deduplication", "and uniqueKey name the same key: give one")
    if given:
        key, mode, ttl = _deduplication(reader) or (None, "reject", None)
    debounce_id = reader.string("debounce_id")
    debounce_ttl = reader.declared("debounce_ttl")
    if key is None and debounce_id is not None:
        return debounce_id, "reject", debounce_ttl, True
    if key is None:
        return None, "reject", None, False
    return key, mode, ttl, False


def build_job_spec(
    queue: str,
    name: object,
    data: Any,
    options: Mapping[str, Any] | None = None,
    *,
    max_payload_bytes: int,
    labels: Mapping[str, str] | None = None,
    prefix: str = "",
    queue_checked: bool = False,
    data_checked: bool = False,
) -> JobSpec:
    """Validate one job.  Unknown option names are refused (they are typos).
    ``queue_checked`` / ``data_checked``: the caller validated the queue name /
    the data (:func:`pgqueue.jsontext.value_error`, 64-bit integers or wider) already."""
    if not queue_checked:
        validate_queue_name(queue)
    labels = labels or {}
    try:
        validate_job_name(name, labels.get("name", "name"))
        data_json = encode_json(
            data, label=labels.get("data", "data"), limit=max_payload_bytes, checked=data_checked
        )
    except ValidationError as exc:
        if not prefix:
            raise
        raise ValidationError(prefix + exc.message, field=exc.field) from exc
    if not options:
        return plain_spec(queue, str(name), data_json)
    unknown = set(options) - JOB_OPTIONS
    if unknown:
        raise ValidationError(
            f"{prefix}unknown job option: {', '.join(sorted(unknown))}", field=min(unknown)
        )
    reader = _Reader(options, labels, prefix)
    attempts_key = "max_attempts" if options.get("max_attempts") is not None else "attempts"
    custom_id = reader.string("job_id") or reader.string("custom_id")
    has_group = options.get("group_id") is not None
    priority = by_python("priority")
    priority_lo, priority_hi = (0, 2_097_151) if has_group else (priority.lo, priority.hi)
    unique_key, dedup_mode, unique_ttl, debounced = _dedup_key(reader)
    depends_on = reader.string_list("depends_on", limit=by_python("depends_on").hi)
    extras: dict[str, Any] = {}
    if depends_on:
        extras["depends_on"] = list(depends_on)
    for option in opts_options():
        value = reader.plain(option.name)
        if value is not None:
            extras[option.name] = value
    removals: dict[str, bool] = {}
    for key, kept in (("remove_on_complete", "keep_completed"), ("remove_on_fail", "keep_failed")):
        at_once, keep = removal_policy(options.get(key), reader.label(key), prefix, key)
        removals[key] = at_once
        if keep is not None:
            extras[kept] = keep
    timestamp = options.get("timestamp")
    if timestamp is not None:
        timestamp = float(reader.check_int("timestamp", timestamp, 0, by_python("timestamp").hi))
    return JobSpec(
        queue=queue,
        name=str(name),
        data_json=data_json,
        custom_id=custom_id,
        id=custom_id,
        priority=reader.integer("priority", priority_lo, priority_hi, 0) or 0,
        lifo=reader.boolean("lifo"),
        delay_ms=reader.declared("delay") or 0,
        max_attempts=reader.declared(attempts_key) or DEFAULT_MAX_ATTEMPTS,
        backoff=_backoff(reader),
        timeout_ms=reader.declared("timeout") or None,
        ttl_ms=reader.declared("ttl") or None,
        stall_timeout_ms=reader.declared("stall_timeout") or None,
        remove_on_complete=removals["remove_on_complete"],
        remove_on_fail=removals["remove_on_fail"],
        unique_key=unique_key,
        dedup_mode=dedup_mode if unique_key else "reject",
        unique_ttl_ms=unique_ttl if unique_key else None,
        debounced=debounced,
        group_id=reader.string("group_id"),
        parent_id=reader.string("parent_id"),
        parent_queue=reader.string("parent_queue"),
        depends_on=depends_on,
        created_at_ms=timestamp,
        opts_json=json.dumps(extras, separators=(",", ":")) if extras else "{}",
        repeat=_repeat(reader),
    )


def spec_ids_unique(specs: Sequence[JobSpec]) -> bool:
    """Whether no two specs of a batch carry the same explicit id."""
    seen: set[str] = set()
    for spec in specs:
        if spec.id is not None:
            if spec.id in seen:
                return False
            seen.add(spec.id)
    return True
