"""`dpverify verify PATH...`"""

from __future__ import annotations

import click

from dpverify import api
from dpverify.cli.app import finish, handle_errors, main
from dpverify.cli.options import (
    CROSS_CHECK,
    EXCLUDE,
    METHOD_OPTIONS,
    OUTPUT_OPTIONS,
    POINT_OPTIONS,
    SEARCH_OPTIONS,
    SOLVER_OPTIONS,
    add_options,
    chosen,
    consoles,
    json_option,
    note,
    timeout_option,
)


@main.command(short_help="Verify problem files: is the theorem's mechanism optimal?")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@add_options(SOLVER_OPTIONS)
@add_options(METHOD_OPTIONS)
@CROSS_CHECK
@add_options(POINT_OPTIONS)
@add_options(SEARCH_OPTIONS)
@EXCLUDE
@json_option("Print one JSON array of spec.md's result objects (one per file), nothing else.")
@add_options(OUTPUT_OPTIONS)
@timeout_option()
@click.option("--show-rules", is_flag=True,
              help="Print RR's optimal decision rules; for a count problem the geometric "
                   "mechanism's best post-processing and an optimal mechanism (with --json: "
                   "a `rule` field per result).")
@click.pass_context
@handle_errors
def verify(ctx, paths, tol, backend, max_nonzeros, lp_form, method, max_orbit_work,
           cross_check, grid, samples, seed, certify, restarts, witness_dir, exclude, as_json,
           quiet, no_color, timeout, show_rules):
    """Verify the problem files PATHS (directories are searched for *.toml, hidden
    directories such as .dpverify/ left out).

    For each agent and accuracy: an upper bound over every DP protocol against the
    theorem's mechanism (randomized response with its optimal decision rule; for a count
    query the geometric mechanism). On bits the bound is RR's exact certificate, on all
    inputs (proof) or on symmetry orbits (orbit), checked by the independent checker,
    wherever it fits; else the relaxed corner LP against RR's decision LPs (lp), whose
    two float computations must agree within --tol (--method chooses). TOML files in a
    directory that are not problem files (a pyproject.toml) are skipped with a note.
    """
    from dpverify.console.verify import VerifyView

    options = chosen(ctx, tol=tol, backend=backend, max_nonzeros=max_nonzeros,
                     lp_form=lp_form, grid=grid, samples=samples, seed=seed, certify=certify,
                     method=method, max_orbit_work=max_orbit_work, restarts=restarts,
                     witness_dir=witness_dir, cross_check=cross_check)
    out, err = consoles(no_color, lazy=as_json and not show_rules)
    with VerifyView(out, err, as_json=as_json, quiet=quiet, show_rules=show_rules,
                    show_proof=certify, show_grid=bool(grid or samples)) as view:
        report = api.verify_paths(paths, on_start=view.started, on_result=view.finished,
                                  on_stage=view.stage, timeout=timeout or None,
                                  exclude=exclude, **options)
        view.report(report)
    # options that do not apply to some files, files skipped: the library's notes
    for line in report.notes:
        note(str(line))
    finish(report.exit_status())  # witness files and stdout written and closed
