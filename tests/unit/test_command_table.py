"""The command table is built from an explicit list of groups, not by importing."""

from __future__ import annotations

from pathlib import Path

import pytest

import pgqueue.server.registry as registry
from pgqueue.server import commands
from pgqueue.server.registry import CommandGroup, build_table

COMMANDS_DIR = Path(commands.__file__).parent


def test_every_command_module_is_a_listed_group() -> None:
    modules = sorted(p.stem for p in COMMANDS_DIR.glob("*.py") if p.stem != "__init__")
    listed = sorted(name for name in modules if getattr(commands, name).group in commands.GROUPS)
    assert listed == modules


def test_the_table_is_the_union_of_the_groups() -> None:
    assert dict(commands.COMMANDS) == build_table(commands.GROUPS)
    assert {"PUSH", "PULL", "ACK", "GetJob", "Hello"} <= set(commands.COMMANDS)


def test_no_module_keeps_a_global_table_to_register_into() -> None:
    assert not hasattr(registry, "COMMANDS")


def test_a_command_served_by_two_groups_is_refused() -> None:
    first, second = CommandGroup(), CommandGroup()

    async def handler(req: object) -> None:
        return None

    first.command("Ping")(handler)
    second.command("Ping")(handler)
    with pytest.raises(RuntimeError, match="Ping registered twice"):
        build_table([first, second])
