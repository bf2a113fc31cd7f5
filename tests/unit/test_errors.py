"""The one exception tree: every error derives from PgQueueError, as the docstring draws it."""

from __future__ import annotations

import inspect
import re

import pytest

from pgqueue import errors
from pgqueue.db.errormap import TransientConflict
from pgqueue.errors import (
    AlreadyFinalized,
    DuplicateJob,
    JobNotFound,
    LeaseLost,
    PgQueueError,
    StorageError,
    ValidationError,
)

TREE_LINE = re.compile(r"^(?P<indent>[ │├└─]*?)(?P<name>[A-Z][A-Za-z]+)(?:\s{2,}.*)?$")


def drawn_tree() -> dict[str, str | None]:
    """``{class name: parent name}`` as the module docstring draws it."""
    doc = errors.__doc__ or ""
    lines = [line[4:] for line in doc.splitlines() if line.startswith("    ") and line.strip()]
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in lines:
        match = TREE_LINE.match(line)
        assert match, f"cannot read tree line {line!r}"
        depth = len(match["indent"]) // 4
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[match["name"]] = stack[-1][1] if stack else None
        stack.append((depth, match["name"]))
    return parents


def defined_classes() -> dict[str, type[BaseException]]:
    return {
        name: cls
        for name, cls in inspect.getmembers(errors, inspect.isclass)
        if cls.__module__ == errors.__name__
    }


def test_every_class_of_the_module_is_exported() -> None:
    assert sorted(defined_classes()) == sorted(errors.__all__)
    assert errors.__all__ == sorted(errors.__all__)


def test_every_error_derives_from_pgqueue_error() -> None:
    for name, cls in defined_classes().items():
        assert issubclass(cls, PgQueueError), name
    assert issubclass(TransientConflict, StorageError)


def test_the_docstring_tree_lists_every_exported_class_with_its_real_parent() -> None:
    tree = drawn_tree()
    assert sorted(tree) == sorted(errors.__all__)
    assert tree["PgQueueError"] is None
    for name, parent in tree.items():
        if parent is not None:
            cls = getattr(errors, name)
            assert cls.__bases__ == (getattr(errors, parent),), f"{name} is drawn under {parent}"


def test_an_error_without_a_message_says_what_its_docstring_says() -> None:
    assert StorageError().message == "The database failed."
    assert str(PgQueueError("boom")) == "boom"


def test_bunqueues_strings_are_kept() -> None:
    assert JobNotFound("j1").message == "Job not found"
    assert JobNotFound("j1").job_id == "j1"
    assert LeaseLost("j1").message == "Invalid or expired lock token for job j1"
    assert AlreadyFinalized("j1").message == "Job j1 is already finalized"
    assert isinstance(AlreadyFinalized("j1"), LeaseLost)


def test_errors_carry_their_details() -> None:
    assert ValidationError("bad", field="priority").field == "priority"
    assert DuplicateJob("dup", existing_id="j9").existing_id == "j9"
    with pytest.raises(PgQueueError):
        raise ValidationError("bad")
