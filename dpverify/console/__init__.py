"""Everything the user sees: rich tables, progress, JSON. The only package that imports rich.

One console wrapper owns the style decisions (markup, highlighting and emoji codes off, so
output is predictable: a name with `:smile:` in it prints as written; colour off when
NO_COLOR is set or output is not a terminal).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dpverify.console.numbers import fmt, fmt_gap
from dpverify.verdict import Category, ExitClass, Verdict

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["CATEGORY_STYLE", "PASSING", "PIPE_WIDTH", "VERDICT_STYLE", "LazyConsole",
           "counted", "fmt", "fmt_gap", "make_console", "print_json"]

PIPE_WIDTH = 10_000  # a pipe or a file has no width to fit: full-width plain text


@functools.cache
def _console_class() -> type[Console]:
    """rich's Console, imported at the first console made (JSON output needs none)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            """Rich exits with status 1 on a closed pipe, which reads as "a gap": let the
            CLI end it as every command does (quietly, exit 141)."""
            raise BrokenPipeError

    return _Console


def make_console(*, stderr: bool = False, no_color: bool = False) -> Console:
    console = _console_class()(stderr=stderr, markup=False, highlight=False, emoji=False,
                               no_color=no_color or None, soft_wrap=False)
    if not console.is_terminal:
        console.width = PIPE_WIDTH
    return console


class LazyConsole:
    """`make_console(**options)` made at its first use: a command whose output is JSON
    uses its consoles only for a line about a file it could not do, and so imports rich
    only then (`verify --json`: ~15 ms of a small problem's start-up)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            self._console = make_console(**self._options)
        return getattr(self._console, name)


def print_json(obj: Any, *, stream=None, lines: bool = False) -> None:
    """JSON on stdout and nothing else (JSON Lines when `lines`)."""
    out = stream or sys.stdout
    out.write(json.dumps(obj, separators=(",", ":") if lines else None,
                         indent=None if lines else 2, allow_nan=False) + "\n")
    out.flush()


# The colour of every category (dpverify/verdict.py: each verdict, invalid, internal);
# tests/test_views.py checks that every category has one.
CATEGORY_STYLE: dict[Category, str] = {
    Category.OPTIMAL: "green", Category.GAP: "bold red", Category.ERROR: "bold yellow",
    Category.SUBOPTIMAL: "cyan", Category.NOT_PRIVATE: "bold red",
    Category.CONTRADICTION: "bold white on red", Category.OPEN: "bold blue",
    Category.INTERACTION_HELPS: "bold magenta", Category.INVALID: "bold magenta",
    Category.INTERNAL: ""}
VERDICT_STYLE = {c.value: style for c, style in CATEGORY_STYLE.items() if c.verdict}
# Categories that are no finding (exit status 0, dpverify.status): the verdicts as claimed.
PASSING = tuple(v.value for v in Verdict if v.exit_class is ExitClass.AS_CLAIMED)


def counted(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """The (category, count) pairs a summary shows, in order: the verdicts that are
    always counted (one per exit class: optimal, gap, error), then the other verdicts and
    `internal` that occurred, then `invalid` (dpverify/verdict.py)."""
    out = [(v.value, counts.get(v.value, 0)) for v in Verdict if v.always_counted]
    out += [(v.value, counts[v.value]) for v in Verdict
            if not v.always_counted and counts.get(v.value)]
    out += [(c.value, counts[c.value]) for c in (Category.INTERNAL, Category.INVALID)
            if counts.get(c.value)]
    return out
