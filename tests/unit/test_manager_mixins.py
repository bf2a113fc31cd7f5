"""The manager is assembled from mixins: none may hide another's method."""

from __future__ import annotations

from collections import defaultdict

from pgqueue.runtime import PostgresQueueManager


def overlapping_names(cls: type) -> dict[str, list[str]]:
    """Names (not dunders) defined by more than one class of ``cls``'s MRO."""
    owners: dict[str, list[str]] = defaultdict(list)
    for klass in cls.__mro__:
        if klass is object:
            continue
        for name in vars(klass):
            if not (name.startswith("__") and name.endswith("__")):
                owners[name].append(klass.__name__)
    return {name: classes for name, classes in owners.items() if len(classes) > 1}


def test_no_two_mixins_of_the_manager_define_the_same_name() -> None:
    assert overlapping_names(PostgresQueueManager) == {}


def test_the_check_finds_a_name_defined_twice() -> None:
    class Base:
        def ping(self) -> str:
            return "base"

    class Mixin(Base):
        def ping(self) -> str:
            return "mixin"

    assert overlapping_names(Mixin) == {"ping": ["Mixin", "Base"]}
