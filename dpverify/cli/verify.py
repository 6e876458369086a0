"""`dpverify verify PATH...`"""

from __future__ import annotations

import math
import sys
import time

import click

from dpverify.cli import handle_errors, main
from dpverify.errors import DpverifyError, SizeLimitError, SpecError
from dpverify.lp import BACKENDS
from dpverify.verify.options import DEFAULT_MAX_NONZEROS, DEFAULT_TOL, VerifyOptions
from dpverify.verify.result import ProblemResult, Verdict


def _tolerance(ctx, param, value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise click.BadParameter("must be a finite number >= 0")
    return value


common_options = [
    click.option("--tol", type=float, default=DEFAULT_TOL, show_default=True,
                 callback=_tolerance, help="Absolute tolerance for `optimal`."),
    click.option("--backend", type=click.Choice(BACKENDS), default="highs", show_default=True,
                 help="LP backend (cvxpy solves the same LP through cvxpy, as a cross-check)."),
    click.option("--max-nonzeros", type=click.IntRange(min=1), default=DEFAULT_MAX_NONZEROS,
                 show_default=True, help="Refuse LPs estimated to have more non-zeros."),
]


def add_options(options):
    def decorate(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


def exit_code(results: list[ProblemResult], invalid: int) -> int:
    """spec.md: 2 bad input; else 3 could not decide; else 1 a gap; else 0."""
    if invalid:
        return 2
    verdicts = {r.verdict for r in results}
    if Verdict.ERROR in verdicts:
        return 3
    if Verdict.GAP in verdicts:
        return 1
    return 0


def refused(spec, exc: DpverifyError, path) -> ProblemResult:
    """A problem that could not be decided (size limit): verdict `error`, never optimal.
    `spec` is None when the loader itself refused the file."""
    from pathlib import Path

    if spec is None:
        return ProblemResult(problem=Path(path).stem, source=str(path), kind="multiparty",
                             results=(), reason=str(exc))
    return ProblemResult(problem=spec.name, source=spec.source, kind=spec.kind,
                         results=(), reason=str(exc))


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@add_options(common_options)
@click.option("--json", "as_json", is_flag=True, help="Print spec.md's result objects only.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the summary line.")
@click.option("--show-rules", is_flag=True, help="Print RR's optimal decision rules.")
@click.option("--no-color", is_flag=True, help="No colours.")
@click.option("--lp-form", type=click.Choice(["chain", "dense"]), default="chain",
              show_default=True, help="How the corner points enter the LP (same LP either way).")
@click.option("--grid", type=click.IntRange(min=0), default=0,
              help="Add the rank-one points on an m-point grid of each party's segment (m >= 2).")
@click.option("--samples", type=click.IntRange(min=0), default=0,
              help="Add N random rank-one DP points.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed for --samples.")
@click.option("--certify", is_flag=True, help="Also build and check exact certificates.")
@handle_errors
def verify(paths, tol, backend, max_nonzeros, as_json, quiet, show_rules, no_color, lp_form,
           grid, samples, seed, certify):
    """Verify the problem files PATHS (directories are searched for *.toml).

    For each agent and accuracy: the relaxed protocol LP over the corner points (an upper
    bound over every DP protocol) against randomized response with its optimal decision
    rule. A verdict `optimal` needs both to succeed and agree within --tol.
    """
    from dpverify.console import make_console, print_json
    from dpverify.console.verify import print_problem, print_summary, rules_table
    from dpverify.spec import load
    from dpverify.verify.run import find_problems, verify_spec

    if grid == 1:
        raise click.BadParameter("must be 0 (off) or at least 2", param_hint="--grid")
    options = VerifyOptions(tol=tol, backend=backend, form=lp_form, max_nonzeros=max_nonzeros,
                            grid=grid, samples=samples, seed=seed, certify=certify)
    out = make_console(no_color=no_color)
    files = find_problems(paths)
    if not files:
        raise SpecError(", ".join(paths), "", None, "no *.toml problem files found")
    results: list[ProblemResult] = []
    invalid = 0
    start = time.perf_counter()
    for path in files:
        spec = None
        try:
            spec = load(path)
            result = verify_spec(spec, options)
        except SpecError as exc:
            invalid += 1
            click.echo(f"dpverify: {exc}", err=True)
            continue
        except SizeLimitError as exc:
            click.echo(f"dpverify: {exc}", err=True)
            results.append(refused(spec, exc, path))
            continue
        results.append(result)
        if not as_json and not quiet:
            print_problem(out, result, show_proof=certify, show_grid=bool(grid or samples))
            if show_rules and result.kind == "multiparty":
                for table in rules_table(result, spec.parties):
                    out.print(table)
                    out.print()
    if as_json:
        objs = [r.to_json() for r in results]
        print_json(objs[0] if len(files) == 1 and len(objs) == 1 else objs)
    else:
        print_summary(out, results, invalid, time.perf_counter() - start)
    sys.exit(exit_code(results, invalid))
