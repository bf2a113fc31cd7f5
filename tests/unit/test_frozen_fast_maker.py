"""``fast_maker``: the frozen records the engine makes per job, made without the
frozen ``__init__``, are the records their constructor makes."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from pgqueue.manager.models import ItemOutcome
from pgqueue.manager.write_rows import FinishRow, column_arrays
from pgqueue.vocabulary.frozen import fast_maker


@dataclass(frozen=True, slots=True)
class Record:
    a: int
    b: str = "b"
    c: list[int] = field(default_factory=list)


def test_it_makes_what_the_constructor_makes() -> None:
    make = fast_maker(Record)
    for args, kwargs in (((1,), {}), ((1, "x"), {"c": [2]}), ((), {"a": 3, "b": "y"})):
        made, built = make(*args, **kwargs), Record(*args, **kwargs)
        assert type(made) is Record and made == built and repr(made) == repr(built)
        assert hash(Record(1, "x", None)) == hash(make(1, "x", None))  # type: ignore[arg-type]
        assert pickle.loads(pickle.dumps(made)) == built
    assert make(1).c is not make(1).c  # a fresh default per record
    with pytest.raises(dataclasses.FrozenInstanceError):
        make(1).a = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        make()


def test_the_ack_path_s_records_are_the_constructors() -> None:
    row = ("j", "1:t", 1, "active", "completed", "null")
    made, built = fast_maker(FinishRow)(*row, keep={"count": 1}), FinishRow(*row, keep={"count": 1})
    assert made == built and column_arrays(FinishRow, [made]) == column_arrays(FinishRow, [built])
    assert fast_maker(ItemOutcome)("j", True) == ItemOutcome("j", True)


def test_it_refuses_a_class_it_cannot_twin() -> None:
    @dataclass(slots=True)
    class Mutable:
        a: int

    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            pass

    for cls in (Mutable, NoSlots, Checked):
        with pytest.raises(TypeError):
            fast_maker(cls)
