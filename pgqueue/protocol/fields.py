"""Strict, typed reading of a command's fields.

The broker reads every field it uses through :class:`Fields` before anything touches
the database, so a malformed command fails whole, with a message that names the field,
and nothing is written. Values are never coerced: a list where a queue name belongs, a
map as a job id, ``"true"`` as a boolean or ``"5"`` as a number are refused, not
guessed at. The one leniency is the one JavaScript forces: a JS client sends large
integers (timestamps) as float64, so an integral float is read as an integer.

Absent and nil mean the same, "not set", as in bunqueue (the codec has already dropped
keys whose value was ``undefined``). Messages follow bunqueue's wording
(``delay must be a finite number``); ``prefix`` is put before each one, as bunqueue does
for the jobs of a PUSHB (``jobs[3]: delay must be a number``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final, cast, overload

from pgqueue import jsontext
from pgqueue.errors import ValidationError
from pgqueue.vocabulary.checks import integer_fault, number_fault
from pgqueue.vocabulary.names import job_id_error, job_name_error, js_length, queue_name_error

__all__ = ["JSON_MAX_DEPTH", "MAX_SAFE_INTEGER", "Fields", "json_value_error"]

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``: the default bound of :meth:`Fields.int_`."""

JSON_MAX_DEPTH: Final = jsontext.JSON_MAX_DEPTH
"""Deepest nesting :meth:`Fields.json_value` accepts (the codec allows 128 in all)."""


class Fields:
    """Typed access to the fields of one command map.

    ``prefix`` starts every message (``"jobs[3]: "``); ``path`` is put before each field
    name, in the message and in :attr:`ValidationError.field` (``"dedup."`` gives
    ``dedup.ttl``). :meth:`nested` and :meth:`nested_list` build both for sub-maps.
    """

    __slots__ = ("_msg", "_path", "_prefix")

    def __init__(self, msg: Mapping[str, Any], prefix: str = "", *, path: str = "") -> None:
        self._msg = msg
        self._prefix = prefix
        self._path = path

    @property
    def message(self) -> Mapping[str, Any]:
        """The map being read."""
        return self._msg

    def has(self, name: str) -> bool:
        """Whether ``name`` is set (present and not nil)."""
        return self._msg.get(name) is not None

    def get(self, name: str) -> Any:
        """The raw value of ``name`` (None when not set), for fields of several shapes."""
        return self._msg.get(name)

    def error(self, name: str, text: str) -> ValidationError:
        """A :class:`ValidationError` reading ``<prefix><path><name> <text>``."""
        field = self._path + name
        return ValidationError(f"{self._prefix}{field} {text}", field=field)

    def _refusal(self, name: str, message: str) -> ValidationError:
        return ValidationError(self._prefix + message, field=self._path + name)

    def _required(self, name: str) -> Any:
        value = self._msg.get(name)
        if value is None:
            raise self.error(name, "is required")
        return value

    # ------------------------------------------------------------------ strings

    def str_(self, name: str, *, max_len: int | None = None, non_empty: bool = False) -> str:
        """A string; ``max_len`` counts characters as JavaScript does."""
        return self._str(name, self._required(name), max_len, non_empty)

    @overload
    def opt_str(
        self, name: str, *, max_len: int | None = ..., non_empty: bool = ..., default: str
    ) -> str: ...
    @overload
    def opt_str(
        self, name: str, *, max_len: int | None = ..., non_empty: bool = ..., default: None = ...
    ) -> str | None: ...
    def opt_str(
        self,
        name: str,
        *,
        max_len: int | None = None,
        non_empty: bool = False,
        default: str | None = None,
    ) -> str | None:
        value = self._msg.get(name)
        return default if value is None else self._str(name, value, max_len, non_empty)

    def _str(self, name: str, value: object, max_len: int | None, non_empty: bool) -> str:
        if not isinstance(value, str):
            raise self.error(name, "must be a string")
        if non_empty and not value:
            raise self.error(name, "must be a non-empty string")
        if max_len is not None and js_length(value) > max_len:
            raise self.error(name, f"must be at most {max_len} characters long")
        if "\x00" in value:  # PostgreSQL text cannot hold NUL
            raise self.error(name, "must not contain NUL characters")
        return value

    # ------------------------------------------------------------------ numbers

    def int_(
        self, name: str, *, minimum: int = -MAX_SAFE_INTEGER, maximum: int = MAX_SAFE_INTEGER
    ) -> int:
        """An integer in [minimum, maximum]; an integral float (``1796008590454.0``) counts."""
        return self._int(name, self._required(name), minimum, maximum)

    @overload
    def opt_int(
        self, name: str, *, minimum: int = ..., maximum: int = ..., default: int
    ) -> int: ...
    @overload
    def opt_int(
        self, name: str, *, minimum: int = ..., maximum: int = ..., default: None = ...
    ) -> int | None: ...
    def opt_int(
        self,
        name: str,
        *,
        minimum: int = -MAX_SAFE_INTEGER,
        maximum: int = MAX_SAFE_INTEGER,
        default: int | None = None,
    ) -> int | None:
        value = self._msg.get(name)
        return default if value is None else self._int(name, value, minimum, maximum)

    def _int(self, name: str, value: object, minimum: int, maximum: int) -> int:
        fault = integer_fault(value, minimum, maximum)
        if fault is not None:
            raise self.error(name, fault)
        assert isinstance(value, int | float)
        return int(value)

    def number(self, name: str, *, minimum: float = -math.inf, maximum: float = math.inf) -> float:
        """A finite number in [minimum, maximum], int or float, returned as sent."""
        return self._number(name, self._required(name), minimum, maximum)

    @overload
    def opt_number(
        self, name: str, *, minimum: float = ..., maximum: float = ..., default: float
    ) -> float: ...
    @overload
    def opt_number(
        self, name: str, *, minimum: float = ..., maximum: float = ..., default: None = ...
    ) -> float | None: ...
    def opt_number(
        self,
        name: str,
        *,
        minimum: float = -math.inf,
        maximum: float = math.inf,
        default: float | None = None,
    ) -> float | None:
        value = self._msg.get(name)
        if value is None:
            return default
        return self._number(name, value, minimum, maximum)

    def _number(self, name: str, value: object, minimum: float, maximum: float) -> float:
        fault = number_fault(value, minimum, maximum)
        if fault is not None:
            raise self.error(name, fault)
        return value  # type: ignore[return-value]

    # ------------------------------------------------------------------ booleans

    def bool_(self, name: str) -> bool:
        """``true`` or ``false``; ``1`` and ``"true"`` are refused."""
        return self._bool(name, self._required(name))

    @overload
    def opt_bool(self, name: str, *, default: bool) -> bool: ...
    @overload
    def opt_bool(self, name: str, *, default: None = ...) -> bool | None: ...
    def opt_bool(self, name: str, *, default: bool | None = None) -> bool | None:
        value = self._msg.get(name)
        return default if value is None else self._bool(name, value)

    def _bool(self, name: str, value: object) -> bool:
        if not isinstance(value, bool):
            raise self.error(name, "must be a boolean")
        return value

    # ------------------------------------------------------------------ arrays

    def str_list(
        self, name: str, *, max_items: int | None = None, max_len: int | None = None
    ) -> list[str]:
        """An array of strings; an item's error names it, as in ``ids[2] must be a string``."""
        items = self._array(name, self._required(name), max_items)
        return [self._str(f"{name}[{i}]", item, max_len, False) for i, item in enumerate(items)]

    def opt_str_list(
        self, name: str, *, max_items: int | None = None, max_len: int | None = None
    ) -> list[str] | None:
        return self.str_list(name, max_items=max_items, max_len=max_len) if self.has(name) else None

    def job_id_list(self, name: str, *, max_items: int | None = None) -> list[str]:
        """An array of job ids (``ACKB.ids``, ``dependsOn``), each checked as :meth:`job_id`."""
        items = self._array(name, self._required(name), max_items)
        return [self._job_id(f"{name}[{i}]", item) for i, item in enumerate(items)]

    def opt_job_id_list(self, name: str, *, max_items: int | None = None) -> list[str] | None:
        return self.job_id_list(name, max_items=max_items) if self.has(name) else None

    def _array(
        self, name: str, value: object, max_items: int | None
    ) -> list[Any] | tuple[Any, ...]:
        if not isinstance(value, (list, tuple)):
            raise self.error(name, "must be an array")
        if max_items is not None and len(value) > max_items:
            raise self.error(name, f"must have at most {max_items} items")
        return value

    # ------------------------------------------------------------------ maps

    def map_(self, name: str) -> dict[str, Any]:
        """A map with string keys, returned as it is (not copied)."""
        return self._map(name, self._required(name))

    def opt_map(self, name: str) -> dict[str, Any] | None:
        value = self._msg.get(name)
        return None if value is None else self._map(name, value)

    def _map(self, name: str, value: object) -> dict[str, Any]:
        if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
            raise self.error(name, "must be an object")
        return value

    def nested(self, name: str) -> Fields:
        """The map in ``name`` as :class:`Fields`; its errors read ``name.field ...``."""
        return Fields(self.map_(name), self._prefix, path=f"{self._path}{name}.")

    def opt_nested(self, name: str) -> Fields | None:
        return self.nested(name) if self.has(name) else None

    def nested_list(self, name: str, *, max_items: int | None = None) -> list[Fields]:
        """An array of maps, each as :class:`Fields` with prefix ``name[i]: `` (PUSHB jobs)."""
        items = self._array(name, self._required(name), max_items)
        out: list[Fields] = []
        for i, item in enumerate(items):
            label = f"{self._path}{name}[{i}]"
            if not isinstance(item, dict):
                raise ValidationError(f"{self._prefix}{label} must be an object", field=label)
            out.append(Fields(item, f"{self._prefix}{label}: "))
        return out

    # ------------------------------------------------------------------ JSON data

    def json_value(self, name: str, *, max_depth: int = JSON_MAX_DEPTH) -> Any:
        """A value that JSON can hold, such as job data; nil is a value here, not absence."""
        if name not in self._msg:
            raise self.error(name, "is required")
        return self._json(name, self._msg[name], max_depth)

    def opt_json_value(self, name: str, *, max_depth: int = JSON_MAX_DEPTH) -> Any:
        """As :meth:`json_value`, None when absent."""
        return self._json(name, self._msg[name], max_depth) if name in self._msg else None

    def _json(self, name: str, value: object, max_depth: int) -> Any:
        problem = json_value_error(value, max_depth)
        if problem is not None:
            raise self.error(name, f"must be JSON serializable: {problem}")
        return value

    # ------------------------------------------------------------------ names and ids

    def queue(self, name: str = "queue") -> str:
        """A queue name, with bunqueue's rules and messages (``Queue name is required``)."""
        value = self._msg.get(name)
        problem = queue_name_error(value)
        if problem is not None:
            raise self._refusal(name, problem)
        return cast(str, value)

    def job_id(self, name: str = "id") -> str:
        """A job id: a non-empty string of at most 256 characters, no control characters."""
        return self._job_id(name, self._required(name))

    def opt_job_id(self, name: str) -> str | None:
        value = self._msg.get(name)
        return None if value is None else self._job_id(name, value)

    def _job_id(self, name: str, value: object) -> str:
        problem = job_id_error(value, self._path + name)
        if problem is not None:
            raise self._refusal(name, problem)
        return cast(str, value)

    def job_name(self, name: str = "name") -> str:
        """A job name (``Job name must be a non-empty string of at most 256 characters``)."""
        return self._job_name(name, self._required(name))

    def opt_job_name(self, name: str = "name") -> str | None:
        value = self._msg.get(name)
        return None if value is None else self._job_name(name, value)

    def _job_name(self, name: str, value: object) -> str:
        problem = job_name_error(value)
        if problem is not None:
            raise self._refusal(name, problem)
        return cast(str, value)


def json_value_error(value: object, max_depth: int = JSON_MAX_DEPTH) -> str | None:
    """Why ``value`` cannot be stored as JSON, or None: :func:`pgqueue.jsontext.value_error`
    (the SDK and the engine apply the same rules, with the same messages)."""
    return jsontext.value_error(value, max_depth)
