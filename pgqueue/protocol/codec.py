"""MessagePack encoding and decoding with bunqueue's traps.

The reference server and its TypeScript client use ``msgpackr``; what follows makes
our bytes read the same to them, and theirs to us (reference §1.2):

- **Wide integers travel as float64.** ``msgpackr`` turns the int64/uint64 formats
  into ``BigInt``, which breaks arithmetic in a JS client. Python's ``msgpack`` uses
  those formats for every integer outside [-2**31, 2**32-1], so :func:`pack` sends
  such integers as float64 (``0xcb``), as the real server does for timestamps.
- **ext type 0 is JavaScript's ``undefined``**, which clients send (``message:
  undefined`` in ``Progress``). :func:`unpack` drops a map key whose value is
  undefined and reads an undefined array item as ``None``. :data:`UNDEFINED` is the
  same idea on the way out: a map value of ``UNDEFINED`` omits its key.
- Map keys are strings, in both directions; ``__proto__`` is an ordinary key.
- **pgqueue peers carry 64-bit integers exactly.** A pgqueue SDK connection says
  ``int64`` in its ``Hello`` capabilities and the broker does too; both then
  :func:`pack` with ``int64=True`` (msgpack's int64/uint64 formats, never float64)
  so job data, results and progress keep their integers.  JS clients never ask.

Everything here is pure; :mod:`pgqueue.protocol.framing` cuts the frames.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Final

import msgpack

from pgqueue.errors import ProtocolError
from pgqueue.jsontext import INT64_MAX, INT64_MIN
from pgqueue.protocol.framing import MAX_FRAME_SIZE

__all__ = [
    "DEFAULT_DECODE_LIMITS",
    "INVALID_COMMAND",
    "INVALID_COMMAND_FORMAT",
    "JS_INT_MAX",
    "JS_INT_MIN",
    "MAX_ENCODE_DEPTH",
    "UNDEFINED",
    "DecodeLimits",
    "Undefined",
    "pack",
    "request_id_of_undecodable",
    "unpack",
]

INVALID_COMMAND_FORMAT: Final = "Invalid command format"
"""bunqueue's answer to a body that does not decode (sent without a reqId)."""
INVALID_COMMAND: Final = "Invalid command"
"""bunqueue's answer to a decoded body that is not a command."""

JS_INT_MIN: Final = -(2**31)
JS_INT_MAX: Final = 2**32 - 1
"""Integers in [JS_INT_MIN, JS_INT_MAX] are packed as msgpack ints; JS reads them as numbers."""

MAX_ENCODE_DEPTH: Final = 256
"""Deepest nesting :func:`pack` accepts; deeper is almost surely a reference cycle."""


class Undefined(enum.Enum):
    """JavaScript's ``undefined``: "no value here", unlike ``None`` (JS ``null``).

    An enum member so that it stays one object through copy and pickle, and can be
    named in type hints as ``Literal[Undefined.UNDEFINED]``.
    """

    UNDEFINED = "UNDEFINED"

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Final = Undefined.UNDEFINED

# --------------------------------------------------------------------------- encoding

_PLAIN: Final = frozenset({str, float, bool, type(None), bytes})
_CONTAINERS: Final = (dict, list, tuple)


def pack(obj: object, *, int64: bool = False) -> bytes:
    """Encode ``obj`` the way a bunqueue peer expects.

    Integers outside [-2**31, 2**32-1] become float64 (an integer beyond float range
    raises ``OverflowError``); with ``int64`` (a peer that said so in ``Hello``: the
    pgqueue SDK and broker) integers of up to 64 bits travel exactly as msgpack
    ints, and a wider one raises ``ValueError`` naming where it is (``data.n``).  A
    map value of :data:`UNDEFINED` omits its key, an array item of it is nil;
    tuples are arrays; ``bytes`` is bin; floats are always float64. Map keys must
    be ``str`` (``TypeError`` otherwise). Anything else that msgpack cannot encode
    (a ``datetime``, say) is a ``TypeError``: callers convert.

    The C packer does the encoding. A read-only pass first checks the keys and looks
    for the rare values that need changing; only then is a converted copy built.
    """
    lo, hi = (INT64_MIN, INT64_MAX) if int64 else (JS_INT_MIN, JS_INT_MAX)
    if _needs_rewrite(obj, lo, hi):
        obj = _rewrite(obj, 1, lo, hi, "")
    packed: bytes = msgpack.packb(obj, use_bin_type=True)
    return packed


def _is_wide_int(value: object, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and not lo <= value <= hi


def _key_error(key: object) -> TypeError:
    return TypeError(f"map keys must be str, not {type(key).__name__}")


def _depth_error() -> ValueError:
    return ValueError(f"cannot encode data nested deeper than {MAX_ENCODE_DEPTH} levels")


def _needs_rewrite(root: object, lo: int, hi: int) -> bool:
    """Whether ``root`` holds an integer outside [lo, hi] or :data:`UNDEFINED`.

    Walks one nesting level at a time so the depth is known without recursion, and
    raises on a non-str key. Stops at the first value that needs changing:
    :func:`_rewrite` then checks the rest.
    """
    if not isinstance(root, _CONTAINERS):
        return root is UNDEFINED or _is_wide_int(root, lo, hi)
    level: list[Any] = [root]
    depth = 0
    while level:
        depth += 1
        if depth > MAX_ENCODE_DEPTH:
            raise _depth_error()
        below: list[Any] = []
        for container in level:
            if isinstance(container, dict):
                for key in container:
                    if type(key) is not str and not isinstance(key, str):
                        raise _key_error(key)
                values = container.values()
            else:
                values = container
            for value in values:
                kind = type(value)
                if kind in _PLAIN:
                    continue
                if kind is int:
                    if value < lo or value > hi:
                        return True
                elif kind is dict or kind is list or isinstance(value, _CONTAINERS):
                    below.append(value)
                elif value is UNDEFINED or _is_wide_int(value, lo, hi):
                    return True
        level = below
    return False


def _rewrite(value: Any, depth: int, lo: int, hi: int, path: str) -> Any:
    """A copy of ``value`` with wide integers as floats (or refused, see :func:`pack`)
    and UNDEFINED left out."""
    if isinstance(value, dict):
        if depth > MAX_ENCODE_DEPTH:
            raise _depth_error()
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _key_error(key)
            if item is not UNDEFINED:
                out[key] = _rewrite(item, depth + 1, lo, hi, f"{path}.{key}" if path else key)
        return out
    if isinstance(value, (list, tuple)):
        if depth > MAX_ENCODE_DEPTH:
            raise _depth_error()
        return [
            None if item is UNDEFINED else _rewrite(item, depth + 1, lo, hi, f"{path}[{i}]")
            for i, item in enumerate(value)
        ]
    if _is_wide_int(value, lo, hi):
        if hi == INT64_MAX:
            raise ValueError(f"{path or 'value'}: integers beyond 64 bits cannot be sent")
        return float(value)
    return value


# --------------------------------------------------------------------------- decoding


@dataclass(frozen=True, slots=True)
class DecodeLimits:
    """Bounds on one decoded message, so that a hostile frame costs memory and stack
    in proportion to its size, not a multiple of it.

    ``max_containers`` matters most: an empty map or array is 1 byte on the wire and
    about 64 in Python, so a 64 MiB frame of them would need 4 GiB. Decoding stops as
    soon as a bound is passed, before the rest of the frame is built. The defaults are
    far above what a real command needs (a PUSHF carries at most 10,000 jobs).
    """

    max_depth: int = 128
    """Maps and arrays nested in each other; the command map itself is level 1."""
    max_containers: int = 1_000_000
    """Maps and arrays in one message."""
    max_container_len: int = 1_000_000
    """Entries in one map, items in one array."""
    max_string_len: int = MAX_FRAME_SIZE
    """Bytes in one str or bin value."""

    def __post_init__(self) -> None:
        for name in ("max_depth", "max_containers", "max_container_len", "max_string_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")


DEFAULT_DECODE_LIMITS: Final = DecodeLimits()

_SCALARS: Final = frozenset({str, int, float, bool, type(None), bytes})


def unpack(body: bytes, limits: DecodeLimits = DEFAULT_DECODE_LIMITS) -> dict[str, Any]:
    """Decode one frame body into a command map.

    Raises :class:`~pgqueue.errors.ProtocolError`:

    - ``"Invalid command format"`` when the body is not exactly one MessagePack value
      (empty, truncated, trailing bytes, invalid UTF-8, a non-str map key) or decodes
      to something JavaScript reads as false (nil, false, 0, ""), as bunqueue answers;
      the same text followed by the reason when a limit is passed or an extension
      type other than 0 appears;
    - ``"Invalid command"`` when it decodes to something else that is not a map.
    """
    decoder = _Decoder(limits)
    container_len = min(limits.max_container_len, len(body))
    string_len = min(limits.max_string_len, len(body))
    try:
        value = msgpack.unpackb(
            body,
            raw=False,
            use_list=True,
            strict_map_key=True,  # refuse int keys while decoding: they hash predictably
            ext_hook=_ext_hook,
            object_hook=decoder.map_done,
            list_hook=decoder.array_done,
            max_str_len=string_len,
            max_bin_len=string_len,
            max_array_len=container_len,
            max_map_len=container_len,
            max_ext_len=16,
        )
    except ProtocolError:
        raise
    except (ValueError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
        raise ProtocolError(INVALID_COMMAND_FORMAT) from exc
    if isinstance(value, dict):
        return value
    if _js_falsy(value):
        raise ProtocolError(INVALID_COMMAND_FORMAT)
    raise ProtocolError(INVALID_COMMAND)


def request_id_of_undecodable(body: bytes) -> str | None:
    """The ``reqId`` of a top-level map that :func:`unpack` refused, if it can be read.

    Its refusal then reaches the request waiting for it (a client matches answers by
    ``reqId``; without one it would wait until its own timeout).  Every other entry is
    skipped undecoded; ``None`` when the body is no map or the id is unreadable.
    """
    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=max(len(body), 1))
    unpacker.feed(body)
    try:
        for _ in range(unpacker.read_map_header()):
            key = unpacker.unpack()
            if key == "reqId":
                value = unpacker.unpack()
                return value if isinstance(value, str) else None
            unpacker.skip()
    except Exception:  # anything undecodable: no id to give back
        return None
    return None


def _ext_hook(code: int, data: bytes) -> Undefined:
    if code == 0:
        return UNDEFINED
    raise _unsupported_ext(code)


def _unsupported_ext(code: int) -> ProtocolError:
    return ProtocolError(f"{INVALID_COMMAND_FORMAT}: unsupported MessagePack extension type {code}")


def _js_falsy(value: object) -> bool:
    """What bunqueue's ``if (!command)`` rejects as an undecodable body."""
    if value is None or value is False or value is UNDEFINED or value == "":
        return True
    if type(value) is int or type(value) is float:
        return value == 0 or value != value
    return False


class _Decoder:
    """The checks of one :func:`unpack`, run by msgpack as each map or array completes.

    Running them inside the decoder, rather than in a walk afterwards, stops a hostile
    frame early. Completion order is bottom-up, so the nesting height of a container
    is one more than the tallest of its children; the heights of containers that have
    children are kept by ``id`` until their parent completes (with the object itself,
    so that no id is reused meanwhile). The same pass drops undefined map values and
    turns undefined array items into ``None``.
    """

    __slots__ = ("_containers_left", "_heights", "_max_depth")

    def __init__(self, limits: DecodeLimits) -> None:
        self._containers_left = limits.max_containers
        self._max_depth = limits.max_depth
        self._heights: dict[int, tuple[object, int]] = {}

    # The helpers are inlined: these run once per decoded map and array (a PULLB
    # answer of 50 jobs makes ~500 calls), and a method call costs more than the
    # checks themselves.

    def map_done(self, obj: dict[Any, Any]) -> dict[str, Any]:
        self._containers_left -= 1
        if self._containers_left < 0:
            raise _too_many_containers()
        height = 1
        absent: list[str] | None = None
        heights = self._heights
        for key, value in obj.items():
            if type(key) is not str:  # only bin keys get this far
                raise ProtocolError(f"{INVALID_COMMAND_FORMAT}: map keys must be strings")
            kind = type(value)
            if kind in _SCALARS:
                continue
            if kind is dict or kind is list:
                entry = heights.pop(id(value), None)
                if entry is None:
                    if height < 2:
                        height = 2
                elif entry[1] >= height:
                    height = entry[1] + 1
            elif value is UNDEFINED:
                if absent is None:
                    absent = []
                absent.append(key)
            else:
                raise _unsupported(value)
        if absent is not None:
            for key in absent:
                del obj[key]
        if height > 1:
            if height > self._max_depth:
                raise self._too_deep()
            heights[id(obj)] = (obj, height)
        return obj

    def array_done(self, obj: list[Any]) -> list[Any]:
        self._containers_left -= 1
        if self._containers_left < 0:
            raise _too_many_containers()
        if not obj:
            return obj
        height = 1
        undefined = False
        heights = self._heights
        for value in obj:
            kind = type(value)
            if kind in _SCALARS:
                continue
            if kind is dict or kind is list:
                entry = heights.pop(id(value), None)
                if entry is None:
                    if height < 2:
                        height = 2
                elif entry[1] >= height:
                    height = entry[1] + 1
            elif value is UNDEFINED:
                undefined = True
            else:
                raise _unsupported(value)
        if undefined:
            obj[:] = [None if value is UNDEFINED else value for value in obj]
        if height > 1:
            if height > self._max_depth:
                raise self._too_deep()
            heights[id(obj)] = (obj, height)
        return obj

    def _too_deep(self) -> ProtocolError:
        depth = self._max_depth
        return ProtocolError(f"{INVALID_COMMAND_FORMAT}: nested deeper than {depth} levels")


def _too_many_containers() -> ProtocolError:
    return ProtocolError(f"{INVALID_COMMAND_FORMAT}: too many maps and arrays")


def _unsupported(value: object) -> ProtocolError:
    if isinstance(value, msgpack.Timestamp):
        return _unsupported_ext(-1)
    return ProtocolError(f"{INVALID_COMMAND_FORMAT}: unsupported value {type(value).__name__}")
