"""A project's defaults for the command line: `[tool.dpverify]` in `pyproject.toml`, or a
`dpverify.toml` (the same keys at its top level).

```toml
[tool.dpverify]
tol = 1e-9                # --tol, the verdict tolerance
expect-tol = 1e-6         # check --expect-tol
jobs = 2                  # --jobs
store = ".dpverify/results.sqlite"   # --store (relative to this file's folder)
method = "auto"           # --method
strict = true             # check --strict
exclude = ["problems/large", "*-draft.toml"]   # --exclude (relative to this file's folder)
```

**Which file.** The search starts in the working directory and goes up, folder by folder:
the first folder that holds a `dpverify.toml`, or a `pyproject.toml` with a
`[tool.dpverify]` table, gives the configuration (`dpverify.toml` first when a folder has
both); the search stops at a folder that holds `.git` (the top of a repository), and at
the root. A `pyproject.toml` without `[tool.dpverify]` is passed by. The working
directory, not the paths given, because one run has one set of options: `dpverify check
problems/` from the top of a repository reads the repository's configuration, and so does
a pre-commit hook (pre-commit runs hooks there).

**What it sets.** Each key is the default of the option of its name on the commands that
have it (`APPLIES`); an option given on the command line overrides it (`exclude` too: the
flag's patterns replace the file's). Paths (`store`, `exclude`) are relative to the
configuration file's folder, so every subfolder shares one store.

**Errors.** An unknown key (a typo must not pass unnoticed) or a bad value is a one-line
error naming the file and the key, exit 2, before any command runs.

This module only reads and checks; the command line hands the values to click
(`cli/app.py`, through the context's `default_map`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpverify.configuration import APPLIES, KEYS, OWN_FILE, TABLE, Config, find_config
from dpverify.errors import SpecError
from dpverify.runner.exclude import anchored
from dpverify.spec.reader import parse_toml, read_data, type_name
from dpverify.verifiers.options import option_problem

__all__ = ["APPLIES", "KEYS", "Config", "find_config", "load_config"]


def _document(path: Path) -> dict[str, Any]:
    shown = str(_shown(path))
    try:
        _, text = read_data(path)
    except SpecError as exc:
        raise SpecError(shown, "", None, exc.allowed) from None
    return parse_toml(text, shown)


def load_config(start: str | os.PathLike[str] = ".", *,
                path: str | os.PathLike[str] | None = None) -> Config:
    """The configuration of a run started in `start` (or the file `path`), checked: every
    key known and every value of its type and range, else SpecError naming the file and
    the key (exit 2)."""
    found = Path(path) if path is not None else find_config(start)
    if found is None:
        return Config()
    document = _document(found)
    shown = str(_shown(found))
    if found.name == OWN_FILE:
        table, prefix = document, ""
    else:
        tool = document.get(TABLE[0], {})
        table = tool.get(TABLE[1], {}) if isinstance(tool, dict) else {}
        prefix = ".".join(TABLE) + "."
        if not isinstance(table, dict):
            raise SpecError(shown, prefix.rstrip("."), table,
                            f"must be a table, not {type_name(table)}")
    values: dict[str, Any] = {}
    folder = found.parent
    for key, value in table.items():
        check = _CHECKS.get(key)
        if check is None:
            raise SpecError(shown, prefix + key, value, _unknown(key, found.name == OWN_FILE))
        try:
            values[key] = check(value, folder)
        except ValueError as exc:
            raise SpecError(shown, prefix + key, value, str(exc)) from None
    return Config(Path(shown), values)


def _shown(path: Path) -> Path:
    """The file as a message names it: relative to the working directory when below it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _unknown(key: str, own_file: bool = False) -> str:
    """What an unknown key is told: the key it is near (`expect_tol`, `Jobs`), or in a
    dpverify.toml that its keys stand at the top level (not in `[tool.dpverify]`)."""
    near = key.replace("_", "-").lower()
    if near in KEYS and near != key:
        hint = f"did you mean `{near}`? "
    elif own_file and key == TABLE[0]:
        hint = f"in {OWN_FILE} the keys stand at the top level, without [tool.dpverify]; "
    else:
        hint = ""
    return f"unknown key; {hint}allowed here: " + ", ".join(KEYS)


# -- the checks: (value, the file's folder) -> the value, or ValueError saying what is allowed
def _tolerance(value: Any, folder: Path) -> float:
    problem = option_problem("tol", value)  # the one check of a tolerance
    if problem is not None:
        raise ValueError(problem)
    return float(value)


def _jobs(value: Any, folder: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("must be an integer >= 1 (the number of worker processes)")
    return value


def _store(value: Any, folder: Path) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be the path of the results store (a string), relative to "
                         "this file's folder")
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else _relative(folder / path))


def _relative(path: Path) -> Path:
    """`path` relative to the working directory when it is below it (shorter messages)."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd())
    except ValueError:
        return absolute


def _method(value: Any, folder: Path) -> str:
    problem = option_problem("method", value)
    if problem is not None:
        raise ValueError(problem)
    return str(value)


def _strict(value: Any, folder: Path) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _exclude(value: Any, folder: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip()
                                              for v in value):
        raise ValueError("must be a list of glob patterns (strings), relative to this "
                         "file's folder")
    return tuple(anchored(v, folder) for v in value)


_CHECKS: dict[str, Callable[[Any, Path], Any]] = {
    "tol": _tolerance, "expect-tol": _tolerance, "jobs": _jobs, "store": _store,
    "method": _method, "strict": _strict, "exclude": _exclude,
}
