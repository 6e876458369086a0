"""The project's configuration at the edge: `[tool.dpverify]` (or `dpverify.toml`) read by
the library (`dpverify.api.configuration`, dpverify/runner/config.py) and handed to click
as the group context's `default_map`, so that each value becomes the default of the
option of its name (`--tol`, `--jobs`, ...) on every command it applies to, whatever
parameter name the command gives that option; a flag on the command line overrides it,
as a default. `--help` shows the configured defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click


def option_named(command: click.Command, flag: str) -> click.Option | None:
    """The option of `command` spelled `flag` (`--store`), whatever its parameter name."""
    for param in command.params:
        if isinstance(param, click.Option) and flag in param.opts:
            return param
    return None


def default_map(commands: Mapping[str, click.Command], config: Any
                ) -> dict[str, dict[str, Any]]:
    """{command: {parameter name: default}} for each of `commands` (by name: the command
    being run, or every command) that an option of `config` applies to
    (`config.for_command`). A key whose command lacks the option is a bug in dpverify (the
    table of the configuration and the commands disagree)."""
    out: dict[str, dict[str, Any]] = {}
    for name, command in commands.items():
        for key, value in config.for_command(name).items():
            option = option_named(command, f"--{key}")
            if option is None or option.name is None:
                raise RuntimeError(f"the configuration's `{key}` applies to `{name}`, "
                                   f"which has no --{key}")
            out.setdefault(name, {})[option.name] = value
    return out
