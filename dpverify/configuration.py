"""Where a project's configuration is, and what it holds once read: the light part of
dpverify/runner/config.py, which reads and checks it.

`find_config` is called before every command (cli/app.py), `--help` and `--version`
included, so it imports nothing heavy: the standard library's TOML parser only looks
whether a `pyproject.toml` has a `[tool.dpverify]` table (a file it cannot parse is
returned, and the loader's one-line error names what is wrong with it). See
runner/config.py for the search rule, the keys and the checks.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, ClassVar

from dpverify.notebook import Notebook
from dpverify.records import record

PYPROJECT = "pyproject.toml"
OWN_FILE = "dpverify.toml"
TABLE = ("tool", "dpverify")

# key -> the commands whose option of that name it sets (the shared option, not another of
# the same name: `derive --tol` is a tolerance of its own floating-point tests)
APPLIES: dict[str, tuple[str, ...]] = {
    "tol": ("verify", "audit", "batch", "check", "sweep", "falsify", "survey"),
    "expect-tol": ("check",),
    "jobs": ("batch", "check", "sweep", "survey"),
    "store": ("batch", "check", "sweep", "results", "survey"),
    "method": ("verify", "certify", "batch", "check", "sweep"),
    "strict": ("check",),
    "exclude": ("verify", "batch", "check"),
}
KEYS = tuple(APPLIES)


@record(repr=False)
class Config(Notebook):
    """The configuration read (`path` None: none was found). `values` maps each key set
    (as `KEYS` spells it, the option's name without `--`) to its checked value: `store`
    a path as a string, `exclude` a tuple of patterns (a path pattern made absolute by
    the file's folder: `runner.exclude.anchored`)."""

    path: Path | None = None
    values: Mapping[str, Any] = field(default_factory=dict)

    notebook_columns: ClassVar[tuple[str, ...]] = ("key", "value")

    def to_dict(self) -> dict[str, Any]:
        """Where the configuration was found (None: nowhere) and each key with its value."""
        return {"path": None if self.path is None else str(self.path), "settings": [
            {"key": k, "value": list(v) if isinstance(v, tuple) else v}
            for k, v in self.values.items()]}

    def notebook_title(self) -> str:
        return f"Config: {self.origin}"

    @property
    def origin(self) -> str:
        """Where the values come from, for a message: `pyproject.toml [tool.dpverify]`."""
        if self.path is None:
            return "no configuration"
        return f"{self.path} [tool.dpverify]" if self.path.name == PYPROJECT else str(self.path)

    def for_command(self, command: str) -> dict[str, Any]:
        """{key: value} of the keys that apply to `command`."""
        return {key: value for key, value in self.values.items()
                if command in APPLIES.get(key, ())}


def _may_hold_the_table(pyproject: Path) -> bool:
    """Whether a pyproject.toml has `[tool.dpverify]` (True when it cannot be read or
    parsed: the loader then says why)."""
    try:
        document = tomllib.loads(pyproject.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return True  # TOMLDecodeError is a ValueError
    tool = document.get(TABLE[0])
    return isinstance(tool, dict) and TABLE[1] in tool


def find_config(start: str | os.PathLike[str] = ".") -> Path | None:
    """The configuration file for a run started in `start`, or None: the first folder,
    from `start` up, with a `dpverify.toml` or a `pyproject.toml` that has
    `[tool.dpverify]` (`dpverify.toml` first); the search stops at a folder that holds
    `.git` (the top of a repository) and at the root."""
    folder = Path(os.path.abspath(start))
    for here in (folder, *folder.parents):
        own = here / OWN_FILE
        if own.is_file():
            return own
        pyproject = here / PYPROJECT
        if pyproject.is_file() and _may_hold_the_table(pyproject):
            return pyproject
        if (here / ".git").exists():
            return None
    return None
