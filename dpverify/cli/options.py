"""Options shared by several commands: one definition each, so a name means one thing.

* `--tol` is always the verdict tolerance (`optimal` when the gap is within it);
  `check --expect-tol` is the tolerance of an expected value.
* `--json`, `--quiet` and `--no-color` behave alike on every command that has them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click
from click.core import ParameterSource

from dpverify import api
from dpverify.defaults import (
    ALL_INPUTS_PARTIES,
    BACKENDS,
    DEFAULT_MAX_NONZEROS,
    DEFAULT_MAX_ORBIT_WORK,
    DEFAULT_RESTARTS,
    DEFAULT_TOL,
    DEFAULT_WITNESS_DIR,
    DENSE_BELOW_PARTIES,
    LP_FORMS,
    METHODS,
    LpForm,
    Method,
)

Decorator = Callable[[Any], Any]


def _checked(name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback with the API's check of option `name` (one message for both)."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        problem = api.option_problem(name, value)
        if problem is not None:
            raise click.BadParameter(problem)
        return value

    return check


_tolerance = _checked("tol")
_grid = _checked("grid")


TOL_HELP = ("Verdict tolerance, relative to the range of the agent's gains (of the loss, "
            "for count problems): `optimal` when the bound and the value differ by at most "
            "tol x (max gain - min gain).")


def tol_option(extra: str = "") -> Decorator:
    """`--tol`, with `extra` words for a command that also uses it elsewhere."""
    return click.option("--tol", type=float, default=DEFAULT_TOL, show_default=True,
                        callback=_tolerance, help=TOL_HELP + (f" {extra}" if extra else ""))


TOL = tol_option()
BACKEND = click.option("--backend", type=click.Choice(BACKENDS), default=BACKENDS[0],
                       show_default=True,
                       help="LP backend (cvxpy solves the same LP through cvxpy, as a "
                            "cross-check).")
MAX_NONZEROS = click.option("--max-nonzeros", type=click.IntRange(min=1),
                            default=DEFAULT_MAX_NONZEROS, show_default=True,
                            help="Refuse LPs estimated to have more non-zeros (exit 3).")
LP_FORM = click.option("--lp-form", type=click.Choice(LP_FORMS), default=LpForm.AUTO.value,
                       show_default=True,
                       help="How the corner points enter the LP (the same LP every way): "
                            "dense, chain, or auto: dense below "
                            f"{DENSE_BELOW_PARTIES} parties when it fits --max-nonzeros, "
                            "else chain.")
GRID = click.option("--grid", type=click.IntRange(min=0), default=0, callback=_grid,
                    help="Add the rank-one points on an m-point grid of each party's segment "
                         "(m >= 2; 0: off).")
SAMPLES = click.option("--samples", type=click.IntRange(min=0), default=0,
                       help="Add N random rank-one DP points.")
SEED = click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                    help="Seed for --samples, and for the random starts of the protocol "
                         "search (--restarts) on inputs with more than two symbols or "
                         "with delta > 0.")
CERTIFY = click.option("--certify", is_flag=True,
                       help="Also build and check exact certificates (multi-party problems).")
CROSS_CHECK = click.option("--cross-check", is_flag=True,
                           help="Parties with bits: verify by the exact proof and by the "
                                "corner LP, and report whether they agree (a disagreement is "
                                "verdict error, exit 3).")
METHOD = click.option("--method", type=click.Choice(METHODS), default=Method.AUTO.value,
                      show_default=True,
                      help="How to verify: the full corner LP (lp), the symmetry-reduced "
                           "exact orbit method (orbit), the exact certificate on all inputs "
                           "(proof), or auto: the exact routes first (proof, then orbit; "
                           f"orbit first for a symmetric problem beyond {ALL_INPUTS_PARTIES} "
                           "parties), then lp, each where it fits; the next one when a "
                           "method does not decide.")
MAX_ORBIT_WORK = click.option("--max-orbit-work", type=click.IntRange(min=1),
                              default=DEFAULT_MAX_ORBIT_WORK, show_default=True,
                              help="Refuse orbit problems needing more exact work (about "
                                   "orbits x parties x outputs integer operations).")
RESTARTS = click.option("--restarts", type=click.IntRange(min=0), default=DEFAULT_RESTARTS,
                        show_default=True,
                        help="Alphabets > 2 and delta > 0: random starts of the search for "
                             "protocols that beat randomized response (besides RR itself, "
                             "binary mechanisms and the LP's support).")
WITNESS_DIR = click.option("--witness-dir", type=click.Path(file_okay=False), default=None,
                           help="Alphabets > 2 and delta > 0: where the protocol files of "
                                "witnesses that beat RR are written "
                                f"(default {DEFAULT_WITNESS_DIR}).")
EXCLUDE = click.option("--exclude", "exclude", metavar="PATTERN", multiple=True,
                       help="Leave out files and folders matching PATTERN (a glob; repeat "
                            "for more): a name at any depth (large, *-draft.toml), or a "
                            "path from the working directory (problems/large). Replaces "
                            "the configuration's `exclude`.")
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


def consoles(no_color: bool) -> tuple[Any, Any]:
    """The consoles of stdout and stderr (dpverify.console.make_console)."""
    from dpverify import console

    return (console.make_console(no_color=no_color),
            console.make_console(stderr=True, no_color=no_color))


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
