"""Options shared by several commands: one definition each, so a name means one thing.

* `--tol` is always the verdict tolerance (`optimal` when the gap is within it);
  `check --expect-tol` is the tolerance of an expected value.
* `--json`, `--quiet` and `--no-color` behave alike on every command that has them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import click
from click.core import ParameterSource

from dpverify import api

Decorator = Callable[[Any], Any]


class Count(click.IntRange):
    """A whole number of at least `min`, also in exponent form (`1e9`, `2.5e6`): the size
    limits' refusals print their limits so ("the limit is 5e+07"), and a user raising one
    writes it as it was printed."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str) and "e" in value.lower():
            try:
                number = Decimal(value.strip())
            except InvalidOperation:
                number = None
            if number is not None and number.is_finite() and number == number.to_integral():
                value = int(number)
        return super().convert(value, param, ctx)  # a long value: cli/app.py shortens it


def _checked(name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback with the API's check of option `name` (one message for both)."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        problem = api.option_problem(name, value)
        if problem is not None:
            raise click.BadParameter(problem)
        return value

    return check


def shared_option(name: str, extra: str = "", help_text: str | None = None) -> Decorator:
    """The click option of the verifiers' option `name`, made from its description
    (verifiers/options.py, `VerifyOptions`' field metadata and the run's limits: flag,
    help, values, default), so that every command gives an option the same flag, help,
    default and check; `extra` words after its help for a command that also uses it
    elsewhere, or `help_text` in place of it for a command whose run is another."""
    described, default = api.option_descriptions()[name]
    assert described.flag is not None, f"{name} is an option of the API only"
    text = (described.help if help_text is None else help_text) + (f" {extra}" if extra else "")
    kind = described.values.value
    if kind == "flag":
        return click.option(described.flag, is_flag=True, help=text)
    settings: dict[str, Any] = {"default": default, "help": text}
    if described.show_default:
        settings["show_default"] = True
    if kind == "number":
        settings.update(type=float, callback=_checked(name))
    elif kind == "count":
        settings["type"] = Count(min=int(described.low), max=described.high)
        if name == "grid":  # 0 or at least 2: the API's message
            settings["callback"] = _checked(name)
    elif kind == "choice":
        settings["type"] = click.Choice(described.choices)
    else:  # a directory path; unset is the API's default ("")
        settings.update(type=click.Path(file_okay=False), default=described.cli_default)
    return click.option(described.flag, **settings)


def tol_option(extra: str = "") -> Decorator:
    """`--tol`, with `extra` words for a command that also uses it elsewhere."""
    return shared_option("tol", extra)


TOL = tol_option()
BACKEND = shared_option("backend")
MAX_NONZEROS = shared_option("max_nonzeros")
LP_FORM = shared_option("lp_form")
GRID = shared_option("grid")
SAMPLES = shared_option("samples")
SEED = shared_option("seed")
CERTIFY = shared_option("certify")
CROSS_CHECK = shared_option("cross_check")
METHOD = shared_option("method")
MAX_ORBIT_WORK = shared_option("max_orbit_work")
RESTARTS = shared_option("restarts")
WITNESS_DIR = shared_option("witness_dir")
EXCLUDE = click.option("--exclude", "exclude", metavar="PATTERN", multiple=True,
                       help="Leave out files and folders matching PATTERN (a glob; repeat "
                            "for more): a name at any depth (large, *-draft.toml), or a "
                            "path from the working directory (problems/large). Replaces "
                            "the configuration's `exclude`.")


def timeout_option(help_text: str | None = None) -> Decorator:
    """`--timeout`: every run bounded, made from one description (verifiers/options.py,
    TIMEOUT) for every command that has it; `help_text` says what the run is."""
    return shared_option("timeout", "0: no limit.", help_text)


QUIET = click.option("--quiet", "-q", is_flag=True, help="Print only the summary.")
NO_COLOR = click.option("--no-color", is_flag=True, help="No colours.")


def json_option(help_text: str = "Print JSON only (spec.md's result objects), nothing else."
                ) -> Decorator:
    return click.option("--json", "as_json", is_flag=True, help=help_text)


SOLVER_OPTIONS = [TOL, BACKEND, MAX_NONZEROS, LP_FORM]
METHOD_OPTIONS = [METHOD, MAX_ORBIT_WORK]
POINT_OPTIONS = [GRID, SAMPLES, SEED, CERTIFY]
SEARCH_OPTIONS = [RESTARTS, WITNESS_DIR]
OUTPUT_OPTIONS = [QUIET, NO_COLOR]


def add_options(options: Sequence[Decorator]) -> Decorator:
    """Apply click option decorators in the order given (the order of `--help`)."""
    def decorate(fn: Any) -> Any:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


def solver_options(**chosen: Any) -> dict[str, Any]:
    """The shared options a command was given (the names click gives them), as the API
    takes them (`witness_dir` unset is the default directory, "")."""
    if "witness_dir" in chosen:
        chosen["witness_dir"] = chosen["witness_dir"] or ""
    return chosen


def chosen(ctx: click.Context, **values: Any) -> dict[str, Any]:
    """The shared options that were chosen (on the command line, in the environment or a
    configuration; not click's defaults, which are the API's own), as the API takes them:
    the library's notes say which of them did not apply to some files."""
    return solver_options(**{name: value for name, value in values.items()
                             if ctx.get_parameter_source(name) is not ParameterSource.DEFAULT})


def consoles(no_color: bool, *, lazy: bool = False) -> tuple[Any, Any]:
    """The consoles of stdout and stderr (dpverify.console.make_console); with `lazy`,
    each made at its first use (console.LazyConsole: JSON output then imports no rich)."""
    from dpverify import console

    make = console.LazyConsole if lazy else console.make_console
    return make(no_color=no_color), make(stderr=True, no_color=no_color)


def given(ctx: click.Context, name: str) -> bool:
    """Whether the option `name` was given on the command line (not its default)."""
    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE,
                                              ParameterSource.ENVIRONMENT)


def note(message: str) -> None:
    """A one-line note on stderr (an option that does not apply, a file skipped)."""
    click.echo(f"dpverify: note: {message}", err=True)


def note_unused_seed(ctx: click.Context, samples: int) -> None:
    if given(ctx, "seed") and not samples:
        note("--seed has no effect without --samples")
