"""`dpverify audit FILE...`: explicit protocols (and count mechanisms) against the bounds."""

from __future__ import annotations

import sys

import click

from dpverify import api
from dpverify.cli.app import handle_errors, main
from dpverify.cli.batch import plot_path_option
from dpverify.cli.figures import FIGURE_OPTIONS, figure_options
from dpverify.cli.options import (
    BACKEND,
    MAX_NONZEROS,
    OUTPUT_OPTIONS,
    add_options,
    consoles,
    json_option,
    note,
    timeout_option,
    tol_option,
)


@main.command(short_help="Audit explicit protocols: privacy achieved, accuracy, bounds.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@add_options([tol_option("A claimed epsilon judged in floating point (an `epsilon` claim, "
                         "float kernels) may be exceeded by at most tol (in epsilon)."),
              BACKEND, MAX_NONZEROS])
@click.option("--require-optimal", is_flag=True,
              help="Deprecated, no effect: `suboptimal` always exits 1 now (kept so that "
                   "scripts that pass it still run).")
@click.option("--show-rules", is_flag=True,
              help="Print each protocol's optimal decision rules (with --json: a `rule` "
                   "field per result).")
@click.option("--profile", is_flag=True,
              help="Also print each protocol's privacy profile: every party's achieved "
                   "delta at e^epsilon on a grid of epsilons (with --json: a "
                   "`privacy_profile` field per protocol).")
@click.option("--epsilons", metavar="RANGE",
              help="The grid of --profile: start:stop:count (0:2:21, both ends included) or "
                   "a comma-separated list; default 0 to twice the largest claimed epsilon, "
                   "21 points.")
@click.option("--plot", "plot_path", metavar="FILE", type=click.Path(dir_okay=False),
              callback=plot_path_option,
              help="Draw the privacy profiles (implies --profile) into FILE.png, .svg or "
                   f".pdf. Needs {api.install_hint('plot')}.")
@add_options(FIGURE_OPTIONS)
@json_option("Print one JSON array of result objects (one per file), nothing else.")
@add_options(OUTPUT_OPTIONS)
@timeout_option()
@click.pass_context
@handle_errors
def audit(ctx, paths, tol, backend, max_nonzeros, require_optimal, show_rules, profile,
          epsilons, plot_path, plot_style, figsize, plot_title, as_json, quiet, no_color,
          timeout):
    """Audit the protocol files PATHS (`kind = "protocol"`; directories are searched).

    Per party: the privacy level the protocol achieves (exact for exact kernels) against
    the claimed one. Per agent and accuracy: its accuracy under its optimal decision rule,
    computed from the transcripts alone, against the relaxed optimum (the bound of
    `verify`) at the claimed levels and at the achieved ones, and randomized response.
    Verdicts: optimal (attains the bound within --tol), suboptimal (private, below the
    bound), not-private (misses a claimed level), contradiction (beats the bound at its
    own levels: a bug, reported loudly).

    A protocol that claims delta > 0 (approximate privacy) is judged by each party's
    achieved delta at its claimed epsilon (exact, or an exact bracket), and its accuracy
    against the envelope bound (the best accuracy of any interactive (epsilon, delta)-DP
    protocol) and the product of RR(epsilon_i, delta_i); below the bound but not below RR
    it is open.
    --profile prints every party's delta(epsilon) on a grid; --plot draws it.

    A mechanism file with a [consumer] table is audited too: its exact alpha, the
    consumer's loss under its best post-processing against the optimal mechanism's, and
    whether it derives from the geometric mechanism.

    Exit status: 0 every protocol (and mechanism) optimal; 1 suboptimal, not-private or
    contradiction; 2 bad input; 3 could not decide.
    """
    from dpverify.console.audit import AuditView

    if epsilons is not None and not (profile or plot_path):
        raise click.UsageError("--epsilons is the grid of --profile: give --profile too")
    figure = figure_options(ctx, plot_path, plot_style=plot_style, figsize=figsize,
                            plot_title=plot_title)
    out, err = consoles(no_color)
    with AuditView(out, err, as_json=as_json, quiet=quiet, show_rules=show_rules) as view:
        report = api.audit_paths(paths, on_start=view.started, on_result=view.finished,
                                 on_stage=view.stage, timeout=timeout or None, tol=tol,
                                 backend=backend, max_nonzeros=max_nonzeros)
        if profile or plot_path:
            for f in report.files:
                if f.result is not None and f.result.kind == "protocol":
                    view.activity.start(f"profiling {f.source}")  # a terminal only
                    view.profiles[f.source] = api.privacy_profile(f.source, epsilons=epsilons)
        view.report(report)
    if plot_path is not None:
        api.plot_profile(list(view.profiles.values()), plot_path, **figure)
        click.echo(f"wrote {plot_path}", err=as_json)
    for line in report.notes:  # files skipped (the library's notes)
        note(str(line))
    if require_optimal:
        note("--require-optimal is deprecated and has no effect: `suboptimal` always exits 1")
    sys.exit(report.exit_status())
