"""Every command and flag explains itself: ``--help`` text, defaults, and an entry in
docs/configuration.md (issue 14)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pgqueue.cli.main import cli
from pgqueue.config import Config

CONFIGURATION = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text()


def commands(group: click.Command = cli, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    if isinstance(group, click.Group):
        for name, sub in sorted(group.commands.items()):
            yield from commands(sub, (*path, name))


def command_at(path: tuple[str, ...]) -> click.Command:
    found: click.Command = cli
    for name in path:
        assert isinstance(found, click.Group)
        found = found.commands[name]
    return found


ALL = list(commands())


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(p) or "pgqueue")
def test_every_command_has_help_and_every_flag_a_description_and_its_default(
    path: tuple[str, ...],
) -> None:
    command = command_at(path)
    assert command.help, path
    shown = CliRunner().invoke(cli, [*path, "--help"], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    ctx = click.Context(command, info_name=path[-1] if path else "pgqueue", show_default=True)
    for param in command.params:
        if not isinstance(param, click.Option) or param.name in ("help", "version"):
            continue
        assert param.help, (path, param.opts)
        assert param.help.split("  [")[0] in " ".join(shown.output.split()), (path, param.opts)
        if param.is_flag:
            continue  # a flag is off unless given
        record = param.get_help_record(ctx)
        assert record is not None
        assert "default:" in record[1] or "required" in record[1], (path, param.opts, record)


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(p) or "pgqueue")
def test_every_flag_appears_in_the_configuration_reference(path: tuple[str, ...]) -> None:
    for param in command_at(path).params:
        if isinstance(param, click.Option):
            long = [opt for opt in param.opts if opt.startswith("--")]
            assert any(re.search(rf"(?<![\w-]){opt}(?![\w-])", CONFIGURATION) for opt in long), (
                path,
                param.opts,
            )
            if param.envvar:
                assert f"`{param.envvar}`" in CONFIGURATION, (path, param.envvar)


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Config)])
def test_every_engine_setting_appears_in_the_configuration_reference(name: str) -> None:
    assert f"`{name}`" in CONFIGURATION
