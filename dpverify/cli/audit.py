"""`dpverify audit FILE...`: explicit protocols (and count mechanisms) against the bounds."""

from __future__ import annotations

import sys

import click

from dpverify import api
from dpverify.cli.app import handle_errors, main
from dpverify.cli.options import (
    BACKEND,
    MAX_NONZEROS,
    OUTPUT_OPTIONS,
    add_options,
    consoles,
    json_option,
    note,
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
@json_option("Print one JSON array of result objects (one per file), nothing else.")
@add_options(OUTPUT_OPTIONS)
@handle_errors
def audit(paths, tol, backend, max_nonzeros, require_optimal, show_rules, as_json, quiet,
          no_color):
    """Audit the protocol files PATHS (`kind = "protocol"`; directories are searched).

    Per party: the privacy level the protocol achieves (exact for exact kernels) against
    the claimed one. Per agent and accuracy: its accuracy under its optimal decision rule,
    computed from the transcripts alone, against the relaxed optimum (the bound of
    `verify`) at the claimed levels and at the achieved ones, and randomized response.
    Verdicts: optimal (attains the bound within --tol), suboptimal (private, below the
    bound), not-private (misses a claimed level), contradiction (beats the bound at its
    own levels: a bug, reported loudly).

    A mechanism file with a [consumer] table is audited too: its exact alpha, the
    consumer's loss under its best post-processing against the optimal mechanism's, and
    whether it derives from the geometric mechanism.

    Exit status: 0 every protocol (and mechanism) optimal; 1 suboptimal, not-private or
    contradiction; 2 bad input; 3 could not decide.
    """
    from dpverify.console.audit import AuditView

    out, err = consoles(no_color)
    with AuditView(out, err, as_json=as_json, quiet=quiet, show_rules=show_rules) as view:
        report = api.audit_paths(paths, on_start=view.started, on_result=view.finished,
                                 tol=tol, backend=backend, max_nonzeros=max_nonzeros)
        view.report(report)
    for skipped in report.skipped:
        note(f"skipped {skipped.source}: {skipped.reason}")
    if require_optimal:
        note("--require-optimal is deprecated and has no effect: `suboptimal` always exits 1")
    sys.exit(report.exit_status())
