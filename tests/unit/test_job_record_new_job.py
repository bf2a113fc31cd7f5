"""``new_job``: the engine's fast way to make a :class:`Job` is the same ``Job``."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from pgqueue.vocabulary.job_record import Job, new_job

FIELDS = {
    f.name: index if f.default is dataclasses.MISSING else f"v{index}"
    for index, f in enumerate(dataclasses.fields(Job))
}


def test_it_makes_the_job_the_constructor_makes_field_for_field() -> None:
    made, built = new_job(**FIELDS), Job(**FIELDS)
    assert type(made) is Job
    assert made == built and repr(made) == repr(built)
    assert dataclasses.asdict(made) == dataclasses.asdict(built)
    assert pickle.loads(pickle.dumps(made)) == built
    assert dataclasses.replace(made, state="x") == dataclasses.replace(built, state="x")
    assert copy.copy(made) == built


def test_defaults_and_positional_arguments_are_the_constructor_s() -> None:
    required = [
        v
        for f, v in zip(dataclasses.fields(Job), FIELDS.values(), strict=True)
        if f.default is dataclasses.MISSING
    ]
    assert new_job(*required) == Job(*required)
    with pytest.raises(TypeError):
        new_job(*required, no_such_field=1)


def test_the_job_it_makes_stays_frozen() -> None:
    made = new_job(**FIELDS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.id = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del made.queue  # type: ignore[misc]
