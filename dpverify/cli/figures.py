"""The options of every command that draws a figure (`sweep --plot`, `audit --plot`,
`results --plot`): the style, the size and the title, declared once."""

from __future__ import annotations

from typing import Any

import click

from dpverify import api
from dpverify.defaults import PLOT_STYLES
from dpverify.errors import InputError


def _figsize(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """A malformed --figsize fails at once (exit 2), before anything is computed."""
    if value is None:
        return None
    try:
        return api.check_figsize(value)
    except InputError as exc:
        raise click.BadParameter(str(exc).partition(": ")[2] or str(exc)) from None


FIGURE_OPTIONS = [
    click.option("--style", "plot_style", type=click.Choice(PLOT_STYLES), default="screen",
                 show_default=True,
                 help="With --plot: `paper` fits a journal column (3.3 in wide, 8 pt text, "
                      "no title, the legend below the axes); `screen` is larger, with "
                      "titles."),
    click.option("--figsize", metavar="W,H", callback=_figsize,
                 help="With --plot: the figure's width and height in inches (say 3.3,2.6), "
                      "instead of the style's."),
    click.option("--title", "plot_title", metavar="TEXT",
                 help="With --plot: the figure's title instead of the default (\"\" for "
                      "none; the paper style has none unless given one)."),
]


def figure_options(ctx: click.Context, plot_path: str | None, **given: Any) -> dict[str, Any]:
    """The keyword arguments of a plot (`style`, `figsize`, `title`); a UsageError when
    one is given without --plot."""
    source = click.core.ParameterSource
    named = {"plot_style": "--style", "figsize": "--figsize", "plot_title": "--title"}
    if plot_path is None:
        used = [flag for name, flag in named.items()
                if ctx.get_parameter_source(name) is source.COMMANDLINE]
        if used:
            raise click.UsageError(f"{', '.join(used)} shape{'s' if len(used) == 1 else ''} "
                                   "the figure of --plot: give --plot FILE")
    return {"style": given["plot_style"], "figsize": given["figsize"],
            "title": given["plot_title"]}
