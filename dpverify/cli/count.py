"""`dpverify derive FILE` and `dpverify release ...`: count queries beyond `verify`
(Gupte-Sundararajan, PODS 2010: Theorem 2, Lemma 3, Algorithm 1)."""

from __future__ import annotations

import sys

import click

from dpverify import api
from dpverify.cli.app import handle_errors, main
from dpverify.cli.options import NO_COLOR, add_options, consoles, json_option, timeout_option
from dpverify.policy import MAX_RELEASE_N
from dpverify.status import exit_status


@main.command(short_help="Can a mechanism be derived from the geometric mechanism?")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--tol", type=float, default=1e-9, show_default=True,
              help="Tolerance of the floating-point comparisons (unused in exact arithmetic).")
@json_option("Print one JSON object only.")
@add_options([NO_COLOR])
@timeout_option("Seconds for the mechanism file; a derivation still running then is "
                "undecided (exit status 3).")
@handle_errors
def derive(file, tol, as_json, no_color, timeout):
    """Can the mechanism in FILE be derived from the geometric mechanism?

    FILE is TOML with a [mechanism] table: `alpha` (or `epsilon`) and `matrix`, an
    (n+1) x (n+1) row-stochastic matrix (rows: true answers 0..n, columns: released
    answers; "p/q" strings allowed). dpverify checks that it is alpha-DP and tests
    x = G T for a row-stochastic T by two independent methods that must agree: a linear
    solve T = G^-1 x >= 0, and the local three-row test
    (1+alpha^2) x[i,j] >= alpha (x[i-1,j] + x[i+1,j]) (Gupte-Sundararajan Theorem 2).
    It prints T when it exists and the violating (i, j) otherwise.

    Arithmetic is exact when alpha is exact (given as `alpha`) and no matrix entry is a
    TOML float; otherwise floating point with --tol.

    With `delta` > 0 in [mechanism] (approximate privacy) the question is another: is the
    mechanism (epsilon, delta)-DP (its largest hockey-stick sum over adjacent answers, at
    e^epsilon), and does it serve every consumer of two adjacent answers, i.e. do its two
    rows dominate RR(epsilon, delta) (its tradeoff curve below RR's; for n = 1 every
    consumer)? Exact on the matrix's values.

    Exit status: 0 derivable; 1 not derivable (including: not alpha-DP); 2 bad input;
    3 undecided (the two tests disagree).
    """
    from dpverify.console import print_json
    from dpverify.console.count import found_json, print_found

    found = api.derive(file, tol=tol, timeout=timeout or None)
    if as_json:  # delta > 0: privacy and the consumers of two answers (the view's table)
        print_json(found_json(found))
    else:
        print_found(consoles(no_color)[0], found)
    sys.exit(found.exit_status())


@main.command(short_help="Release a count at several privacy levels (GS Algorithm 1).")
@click.option("--n", "n", type=int, required=True,
              help=f"Answers are 0..N (N <= {MAX_RELEASE_N}).")
@click.option("--alphas", required=True,
              help='Privacy levels alpha = e^-epsilon in [0, 1], strictly increasing, '
                   'comma-separated; exact rationals allowed ("1/10,1/2,0.9").')
@click.option("--answer", type=int, required=True, help="The true answer, in 0..N.")
@click.option("--seed", type=int, default=None,
              help="Seed of the random release (default: fresh, and printed).")
@click.option("--check", is_flag=True,
              help="Verify that each stage's marginal is exactly the alpha_j-geometric "
                   "mechanism and that every subset of stages is jointly as private as its "
                   "least private member (to 1e-12).")
@json_option("Print one JSON object only.")
@add_options([NO_COLOR])
@handle_errors
def release(n, alphas, answer, seed, check, as_json, no_color):
    """Release a count at several privacy levels at once (Gupte-Sundararajan Algorithm 1).

    Stage 1 releases the alpha_1-geometric mechanism's output; stage j+1 re-randomises
    stage j's release with T_j = G_{alpha_j}^-1 G_{alpha_(j+1)}, which is row-stochastic
    because alpha_(j+1) > alpha_j (Lemma 3), so stage j's release is distributed as the
    alpha_j-geometric mechanism and a coalition of consumers learns no more than its
    least private member. The matrices are built in exact rational arithmetic.

    Exit status: 0 every T_j is stochastic (and, with --check, every check passed);
    1 a check failed; 2 bad input; 3 too large to check.
    """
    from dpverify.console import print_json
    from dpverify.console.count import print_release, release_json

    done = api.release(n, alphas, answer, seed=seed, check=check)
    released = list(done.released)
    if as_json:
        print_json(release_json(done.plan, released, answer, done.seed, done.check))
    else:
        print_release(consoles(no_color)[0], done.plan, released, answer, done.seed,
                      done.check)
    sys.exit(exit_status(failed=not done.ok))
