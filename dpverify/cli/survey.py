"""`dpverify survey`: verdicts over many problems, with more than two symbols or under
approximate privacy (delta > 0, bits)."""

from __future__ import annotations

import sys

import click

from dpverify import api
from dpverify.cli.app import handle_errors, main
from dpverify.cli.batch import STORE_OPTIONS, plot_path_option, store_of
from dpverify.cli.figures import FIGURE_OPTIONS, figure_options
from dpverify.cli.options import (
    NO_COLOR,
    QUIET,
    TOL,
    Count,
    add_options,
    consoles,
    json_option,
    timeout_option,
)
from dpverify.defaults import DEFAULT_RESTARTS, NAMED_GAINS
from dpverify.errors import OptionError
from dpverify.policy import MAX_JOBS


def _epsilons(ctx: click.Context, param: click.Parameter, value: str):
    try:
        return api.survey_epsilons(value)
    except OptionError as exc:
        raise click.BadParameter(str(exc)) from None


def _deltas(ctx: click.Context, param: click.Parameter, value: str | None):
    if value is None:
        return None
    try:
        return api.survey_deltas(value)
    except OptionError as exc:
        raise click.BadParameter(str(exc)) from None


def _functions(ctx: click.Context, param: click.Parameter, value: str) -> str:
    name, _, count = value.partition(":")
    if value == "all" or (name == "random" and count.isdigit() and 1 <= int(count) <= 10**6):
        return value
    raise click.BadParameter("write `all` or `random:N` (1 <= N <= 1000000)")


def _choices(allowed: tuple[str, ...], what: str):
    def check(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
        items = tuple(dict.fromkeys(v.strip() for v in value.split(",")))
        bad = [v for v in items if v not in allowed]
        if bad or not items:
            raise click.BadParameter(f"{', '.join(bad) or value!r}: {what} are "
                                     + ", ".join(allowed))
        return items

    return check


@main.command(short_help="Verdicts over many problems: more than two symbols, or delta > 0.")
@click.option("--alphabet", type=Count(2, 8), required=True,
              help="Input symbols per party: m >= 3, or 2 (bits) with --delta.")
@click.option("--parties", type=Count(1, 6), required=True, help="Parties k.")
@click.option("--epsilon", required=True, callback=_epsilons, metavar="LIST",
              help="Privacy levels, one for every party: a comma-separated list (0.5,1,2); "
                   "exact rationals such as 1/2 stay exact.")
@click.option("--delta", callback=_deltas, metavar="LIST", default=None,
              help="Approximate privacy (bits, --alphabet 2): every problem at each delta "
                   "in (0, 1) of this comma-separated list (1/20,1/10), with each epsilon: "
                   "the envelope bound, RR(epsilon, delta) and the best interactive "
                   "protocol.")
@click.option("--functions", default="all", show_default=True, callback=_functions,
              help="`all` (every function with --values values) or `random:N`.")
@click.option("--values", type=Count(2, 8), default=2, show_default=True,
              help="Values of the surveyed functions (0..V-1).")
@click.option("--gains", default="indicator", show_default=True,
              callback=_choices(NAMED_GAINS, "gains"), help="Comma-separated named gains.")
@click.option("--accuracy", default="average,worst", show_default=True,
              callback=_choices(("average", "worst"), "accuracies"),
              help="Comma-separated accuracies.")
@click.option("--jobs", "-j", type=Count(min=1, max=MAX_JOBS), default=None,
              help="Worker processes (default: one per idle CPU, as batch).")
@click.option("--save", "save_dir", type=click.Path(file_okay=False),
              default=".dpverify/survey", show_default=True,
              help="Where gap, interaction-helps and open instances are saved as problem "
                   "files (with [expect]).")
@click.option("--no-symmetry", is_flag=True,
              help="Verify every function, not one per class of relabellings.")
@click.option("--restarts", type=Count(min=0), default=DEFAULT_RESTARTS,
              show_default=True, help="Random starts of the protocol search.")
@click.option("--seed", type=Count(min=0), default=0, show_default=True,
              help="Seed of random:N and of the search's random starts.")
@add_options(STORE_OPTIONS)
@click.option("--plot", "plot_path", metavar="FILE", callback=plot_path_option,
              help="With --delta: heat maps over (epsilon, delta), one per accuracy, of the "
                   "largest gain of interaction over RR(epsilon, delta), into FILE.png, .svg "
                   f"or .pdf. Needs {api.install_hint('plot')}.")
@add_options(FIGURE_OPTIONS)
@add_options([TOL])
@timeout_option("Seconds per instance; an instance still running then is `error`, reason "
                "`timeout` (exit status 3).")
@json_option("Print one JSON object (rows, counts, saved files) and nothing else.")
@add_options([QUIET, NO_COLOR])
@click.pass_context
@handle_errors
def survey(ctx, alphabet, parties, epsilon, delta, functions, values, gains, accuracy, jobs,
           save_dir, no_symmetry, restarts, seed, store_path, no_store, force, plot_path,
           plot_style, figsize, plot_title, tol, timeout, as_json, quiet, no_color):
    """Verify the observer's accuracy for many functions on {0..m-1}^k (`verify` on each
    instance): with more than two symbols m-ary randomized response against the
    ray-product bound, with the protocol search in between; with --delta, on bits,
    RR(epsilon, delta) against the envelope bound over every interactive protocol, with
    the best protocol found in between. Reports, per epsilon (and delta), gain and
    accuracy, how many functions are optimal, gap (or interaction-helps, and how many of
    those are closed) or open, the largest gap (best found - RR) and the largest open
    interval (bound - best found), and saves those instances as problem files. Functions
    equal up to relabelling symbols, parties and values are verified once (their verdicts
    are the same). Results are kept in the results store: a survey run again resumes.

    Exit status as `verify` over every instance: 0 all optimal, 1 a gap (or
    interaction-helps), 3 an open instance or an error.
    """
    from dpverify.console import print_json
    from dpverify.console.falsify import SearchProgress
    from dpverify.console.survey import print_survey, summary_line

    figure = figure_options(ctx, plot_path, plot_style=plot_style, figsize=figsize,
                            plot_title=plot_title)
    if plot_path is not None and delta is None:
        raise click.UsageError("--plot draws an approximate survey (heat maps over epsilon "
                               "and delta): give --delta")
    store = store_of(ctx, store_path, no_store)
    out, err = consoles(no_color)
    with SearchProgress(err, enabled=not (as_json or quiet), label="surveying") as progress:
        report = api.survey(alphabet=alphabet, parties=parties, epsilon=epsilon,
                            functions=functions, values=values, gains=gains,
                            accuracy=accuracy, jobs=jobs, save_dir=save_dir,
                            symmetry=not no_symmetry, restarts=restarts, seed=seed, tol=tol,
                            on_result=lambda result, done, total: progress.update(done, total),
                            delta=delta, store=store, force=force, timeout=timeout or None)
    if as_json:
        print_json(report.to_json())
    elif quiet:
        out.print(summary_line(report))
    else:
        print_survey(out, report, save_dir)
    if plot_path is not None:
        api.plot_survey(report, plot_path, **figure)
        click.echo(f"wrote {plot_path}", err=as_json)
    sys.exit(report.exit_status())
