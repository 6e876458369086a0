"""`dpverify derive FILE` and `dpverify release ...`: count queries beyond `verify`
(Gupte-Sundararajan, PODS 2010: Theorem 2, Lemma 3, Algorithm 1)."""

from __future__ import annotations

import sys

import click

from dpverify.cli import handle_errors, main
from dpverify.cli.options import NO_COLOR, add_options, json_option
from dpverify.status import exit_status
from dpverify.verifiers.count.release import MAX_RELEASE_N


@main.command(short_help="Can a mechanism be derived from the geometric mechanism?")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--tol", type=float, default=1e-9, show_default=True,
              help="Tolerance of the floating-point comparisons (unused in exact arithmetic).")
@json_option("Print one JSON object only.")
@add_options([NO_COLOR])
@handle_errors
def derive(file, tol, as_json, no_color):
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

    Exit status: 0 derivable; 1 not derivable (including: not alpha-DP); 2 bad input;
    3 undecided (the two tests disagree).
    """
    from dpverify.console import make_console, print_json
    from dpverify.console.count import derivation_json, print_derivation
    from dpverify.spec.count_loader import load_mechanism
    from dpverify.theory.count.geometric import as_exact_array
    from dpverify.theory.count.geometric import derive as derive_mechanism

    spec = load_mechanism(file)
    if spec.exact and spec.alpha_exact is not None:
        d = derive_mechanism(as_exact_array(spec.matrix), spec.alpha_exact)
    else:
        import numpy as np

        x = np.array([[float(v) for v in row] for row in spec.matrix], dtype=np.float64)
        d = derive_mechanism(x, spec.alpha, tol)
    if as_json:
        print_json(derivation_json(spec, d))
    else:
        print_derivation(make_console(no_color=no_color), spec, d)
    sys.exit(exit_status(failed=d.derivable is False, undecided=d.derivable is None))


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
    from dpverify.console import make_console, print_json
    from dpverify.console.count import print_release, release_json
    from dpverify.verifiers.count.release import multilevel_release, parse_alphas

    done = multilevel_release(n, parse_alphas(alphas), answer, seed=seed, check=check)
    released = list(done.released)
    if as_json:
        print_json(release_json(done.plan, released, answer, done.seed, done.check))
    else:
        print_release(make_console(no_color=no_color), done.plan, released, answer, done.seed,
                      done.check)
    sys.exit(exit_status(failed=not done.ok))
