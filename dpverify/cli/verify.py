"""`dpverify verify PATH...`"""

from __future__ import annotations

import sys

import click

from dpverify import api
from dpverify.cli.app import handle_errors, main
from dpverify.cli.options import (
    CROSS_CHECK,
    METHOD_OPTIONS,
    OUTPUT_OPTIONS,
    POINT_OPTIONS,
    SEARCH_OPTIONS,
    SOLVER_OPTIONS,
    add_options,
    consoles,
    given,
    json_option,
    note,
    note_unused_seed,
    solver_options,
    timeout_option,
)


@main.command(short_help="Verify problem files: relaxed LP against randomized response.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@add_options(SOLVER_OPTIONS)
@add_options(METHOD_OPTIONS)
@CROSS_CHECK
@add_options(POINT_OPTIONS)
@add_options(SEARCH_OPTIONS)
@json_option("Print one JSON array of spec.md's result objects (one per file), nothing else.")
@add_options(OUTPUT_OPTIONS)
@timeout_option()
@click.option("--show-rules", is_flag=True,
              help="Print RR's optimal decision rules (with --json: a `rule` field per "
                   "result).")
@click.pass_context
@handle_errors
def verify(ctx, paths, tol, backend, max_nonzeros, lp_form, method, max_orbit_work,
           cross_check, grid, samples, seed, certify, restarts, witness_dir, as_json, quiet,
           no_color, timeout, show_rules):
    """Verify the problem files PATHS (directories are searched for *.toml, hidden
    directories such as .dpverify/ left out).

    For each agent and accuracy: the relaxed protocol LP over the corner points (an upper
    bound over every DP protocol) against randomized response with its optimal decision
    rule. A verdict `optimal` needs both to succeed and agree within --tol, or an exact
    certificate checked by the independent checker (method proof or orbit, the default
    route wherever it fits: --method). TOML files in a directory that are not problem
    files (a pyproject.toml) are skipped with a note.
    """
    from dpverify.console.verify import VerifyView

    options = solver_options(tol=tol, backend=backend, max_nonzeros=max_nonzeros,
                             lp_form=lp_form, grid=grid, samples=samples, seed=seed,
                             certify=certify, method=method, max_orbit_work=max_orbit_work,
                             restarts=restarts, witness_dir=witness_dir,
                             cross_check=cross_check)
    out, err = consoles(no_color)
    with VerifyView(out, err, as_json=as_json, quiet=quiet, show_rules=show_rules,
                    show_proof=certify, show_grid=bool(grid or samples)) as view:
        report = api.verify_paths(paths, on_start=view.started, on_result=view.finished,
                                  on_stage=view.stage, timeout=timeout or None, **options)
        view.report(report)
    # delta > 0 (multi-party): the four-ray bound and a protocol search, no corner LP
    approximate = [f.source for f in report.files
                   if getattr(f.spec, "approximate", False) and f.result.kind != "count"]
    if not approximate and not any(not getattr(f.spec, "binary", True) for f in report.files):
        note_unused_seed(ctx, samples)  # alphabets > 2 and delta > 0: it seeds the search
    ignored = [flag for flag, name in (("--method", "method"),
                                       ("--grid", "grid"), ("--samples", "samples"),
                                       ("--cross-check", "cross_check"),
                                       ("--lp-form", "lp_form")) if given(ctx, name)]
    if approximate and ignored:
        note(f"{', '.join(ignored)} {'does' if len(ignored) == 1 else 'do'} not apply to "
             f"delta > 0 (the four-ray bound and a protocol search): "
             f"{', '.join(approximate)}")
    for skipped in report.skipped:
        note(f"skipped {skipped.source}: {skipped.reason}")
    counts = [f.source for f in report.files if f.result.kind == "count"]
    for flag, wanted in (("--show-rules", show_rules), ("--certify", certify),
                         ("--cross-check", cross_check)):
        if wanted and counts:
            note(f"{flag} applies to multi-party problems only, not to the count "
                 f"problem{'s' if len(counts) != 1 else ''} {', '.join(counts)}")
    sys.exit(report.exit_status())
