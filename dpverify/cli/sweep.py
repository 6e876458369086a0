"""`dpverify sweep PROBLEM`: one problem over a range of epsilon (or lambda, alpha) and/or
numbers of parties; rows as a table, CSV or JSON; a plot. Built on `dpverify.api.sweep`."""

from __future__ import annotations

import sys

import click

from dpverify import api
from dpverify.cli.app import handle_errors, main
from dpverify.cli.batch import RUN_OPTIONS, interruptible, plot_path_option, store_of
from dpverify.cli.figures import FIGURE_OPTIONS, figure_options
from dpverify.cli.options import (
    METHOD_OPTIONS,
    POINT_OPTIONS,
    SEARCH_OPTIONS,
    SOLVER_OPTIONS,
    add_options,
    consoles,
    json_option,
    note,
    note_unused_seed,
    solver_options,
)


def _range_help(example: str, items: str) -> str:
    return (f"start:stop:count ({example}: both ends included) or a comma-separated list "
            f"({items}); exact rationals such as 1/2 stay exact.")



@main.command(short_help="Verify one problem over a range of epsilon, k or alpha; CSV, plots.")
@click.argument("problem", type=click.Path(exists=True, dir_okay=False))
@click.option("--epsilon", metavar="RANGE",
              help="Privacy levels, one for every party (or a count problem's epsilon): "
                   + _range_help("0.1:4:40", "0.5,1,2"))
@click.option("--lambda", "lambda_", metavar="RANGE",
              help="Multi-party privacy levels lambda = e^epsilon >= 1: "
                   + _range_help("1.5:20:30", "3/2,2,4"))
@click.option("--alpha", metavar="RANGE",
              help="Count problems: alpha = e^-epsilon in [0, 1]: "
                   + _range_help("1/20:19/20:19", "0.1,1/2,0.9"))
@click.option("--delta", metavar="RANGE",
              help="Multi-party problems on bits: approximate privacy delta in [0, 1), one "
                   "for every party: " + _range_help("0:0.3:7", "0,1/100,1/10"))
@click.option("--parties", metavar="RANGE",
              help="Numbers of parties: start:stop (2:12) or a list (2,4,8); with a privacy "
                   "range, one curve per k. Needs agents defined for every k (a name such as "
                   "xor, or an expression over x, k and sum(x)).")
@click.option("--plot", "plot_path", metavar="FILE", type=click.Path(dir_okay=False),
              callback=plot_path_option,
              help="Draw the bound and the candidate against the swept variable, verdicts "
                   "marked, and below them the gap with the band of --tol, into FILE.png, "
                   f".svg or .pdf. Needs {api.install_hint('plot')}.")
@add_options(FIGURE_OPTIONS)
@click.option("--csv", "as_csv", is_flag=True,
              help="Print CSV only: one row per point, agent and accuracy.")
@json_option("Print one JSON array only: one row object per point, agent and accuracy.")
@add_options(RUN_OPTIONS)
@add_options(SOLVER_OPTIONS)
@add_options(METHOD_OPTIONS)
@add_options(POINT_OPTIONS)
@add_options(SEARCH_OPTIONS)
@click.pass_context
@handle_errors
@interruptible
def sweep(ctx, problem, epsilon, lambda_, alpha, delta, parties, plot_path, plot_style,
          figsize, plot_title, as_csv, as_json, jobs, store_path, no_store, timeout, force,
          scheduler, quiet, no_color, **solver):
    """Verify PROBLEM at every point of a range of privacy levels (--epsilon, --lambda,
    --delta, or --alpha for a count problem) and/or numbers of parties (--parties): each
    point a full
    verification with its verdict, run in parallel like `batch` and stored in the results
    store (a re-run reads the points it holds).

    Prints a table, or with --csv/--json one row per point, agent and accuracy: the
    level (epsilon, lambda, parties; or epsilon, alpha, n), the bound and RR's value (or the
    optimal and the geometric mechanism's loss), the closed form where one exists, the
    verdict and the method; with delta > 0 also the best interactive protocol found and its
    witness file. --plot draws them. Exit status as for `batch`: 0 all optimal,
    1 a gap, 2 bad input, 3 could not decide, 130 interrupted.
    """
    from dpverify.console.batch import BatchProgress
    from dpverify.console.sweep import print_sweep, resume_hint

    if as_csv and as_json:
        raise click.UsageError("--csv and --json contradict each other: choose one")
    note_unused_seed(ctx, solver.get("samples", 0))
    figure = figure_options(ctx, plot_path, plot_style=plot_style, figsize=figsize,
                            plot_title=plot_title)
    store_path = store_of(ctx, store_path, no_store)
    out, err = consoles(no_color)
    data = as_csv or as_json
    # stdout carries the rows only; progress and per-point lines go to stderr.
    with BatchProgress(err, err, quiet=quiet, label="sweeping", noun="point") as progress:
        result = api.sweep(problem, epsilon=epsilon, lambda_=lambda_, alpha=alpha,
                           delta=delta, parties=parties, jobs=jobs, store=store_path,
                           timeout=timeout or None, force=force, scheduler=scheduler,
                           listener=progress, **solver_options(**solver))
    print_sweep(out, result, "csv" if as_csv else "json" if as_json else "table", quiet=quiet)
    hint = resume_hint(result, saved=not no_store)
    if hint is not None:  # a message, not a result: stderr
        err.print(hint)
    for message in result.notes:
        note(message)
    if plot_path is not None:
        result.plot(plot_path, **figure)
        click.echo(f"wrote {plot_path}", err=data)
    sys.exit(result.exit_status())
