"""Paths left out of a run: `--exclude PATTERN` and the `exclude` list of the
configuration (`[tool.dpverify]` in pyproject.toml, or dpverify.toml).

A pattern is a glob (`*`, `?`, `[...]`, as `fnmatch` reads them), relative to its base:
the working directory for `--exclude`, the configuration file's folder for `exclude` (the
configuration's path patterns are made absolute when it is read, `anchored`).

* A pattern without `/` matches a file or folder of that name at any depth:
  `large` leaves out every folder named `large`, `*-slow.toml` every such file.
* A pattern with `/` matches the path from the base: `problems/large` leaves out that
  folder and everything below it, `problems/*/draft-*.toml` those files.

A folder that matches is not searched at all. A file named on the command line that
matches is left out too (with a note), so that a pre-commit hook, which names the files,
leaves out what `check .` leaves out.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path, PurePosixPath

from dpverify.records import record


@record
class Exclusions:
    """Glob patterns relative to `base` (the working directory by default; absolute ones
    as they are)."""

    patterns: tuple[str, ...] = ()
    base: Path = Path(".")

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches(self, path: str | Path) -> bool:
        return self.matching(path) is not None

    def matching(self, path: str | Path) -> str | None:
        """The first pattern that leaves out `path` (a file or a folder, or a folder above
        it up to the base), or None."""
        if not self.patterns:
            return None
        absolute = Path(os.path.abspath(path))
        base = Path(os.path.abspath(self.base))
        try:
            relative: PurePosixPath | None = PurePosixPath(absolute.relative_to(base).as_posix())
        except ValueError:  # outside the base: only the name patterns apply
            relative = None
        names = relative.parts if relative is not None else absolute.parts
        for pattern in self.patterns:
            cleaned = _clean(pattern)
            if cleaned.startswith("/"):  # made absolute (the configuration's, by its folder)
                if _matches_prefix(PurePosixPath(absolute.as_posix()), cleaned):
                    return pattern
            elif "/" not in cleaned:
                if any(fnmatch.fnmatchcase(name, cleaned) for name in names):
                    return pattern
            elif relative is not None and _matches_prefix(relative, cleaned):
                return pattern
        return None

    def reason(self, path: str | Path) -> str:
        return f"excluded by the pattern {self.matching(path)!r}"


def _clean(pattern: str) -> str:
    text = pattern.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    return text.rstrip("/")


def _matches_prefix(path: PurePosixPath, pattern: str) -> bool:
    """Whether the path or one of the folders above it matches (relative paths from the
    base; absolute paths from the root)."""
    root, parts = ("/", path.parts[1:]) if path.is_absolute() else ("", path.parts)
    return any(fnmatch.fnmatchcase(root + "/".join(parts[:n]), pattern)
               for n in range(1, len(parts) + 1))


def anchored(pattern: str, folder: Path) -> str:
    """A configuration's pattern, read relative to the configuration's `folder`, in the
    form `Exclusions` reads from any base: a name pattern as it is, a path pattern made
    absolute."""
    cleaned = _clean(pattern)
    if "/" not in cleaned or cleaned.startswith("/"):
        return cleaned
    return (Path(os.path.abspath(folder)) / cleaned).as_posix()
