"""Everything the user sees: rich tables, progress, JSON. The only package that imports rich.

One console wrapper owns the style decisions (markup and highlighting off, so output is
predictable; colour off when NO_COLOR is set or output is not a terminal).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

from dpverify.console.numbers import fmt, fmt_gap

__all__ = ["PASSING", "PIPE_WIDTH", "VERDICT_STYLE", "fmt", "fmt_gap", "make_console", "print_json"]

PIPE_WIDTH = 10_000  # a pipe or a file has no width to fit: full-width plain text


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """Rich exits with status 1 on a closed pipe, which reads as "a gap": let the CLI
        end it as every command does (quietly, exit 141)."""
        raise BrokenPipeError


def make_console(*, stderr: bool = False, no_color: bool = False) -> Console:
    console = _Console(stderr=stderr, markup=False, highlight=False,
                       no_color=no_color or None, soft_wrap=False)
    if not console.is_terminal:
        console.width = PIPE_WIDTH
    return console


def print_json(obj: Any, *, stream=None, lines: bool = False) -> None:
    """JSON on stdout and nothing else (JSON Lines when `lines`)."""
    out = stream or sys.stdout
    out.write(json.dumps(obj, separators=(",", ":") if lines else None,
                         indent=None if lines else 2, allow_nan=False) + "\n")
    out.flush()


VERDICT_STYLE = {"optimal": "green", "gap": "bold red", "error": "bold yellow",
                 "suboptimal": "cyan", "not-private": "bold red",
                 "contradiction": "bold white on red", "open": "bold blue",
                 "interaction-helps": "bold magenta"}
# Categories that are no finding (exit status 0, dpverify.status): `suboptimal` is one.
PASSING = ("optimal",)
