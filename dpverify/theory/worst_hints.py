"""Float hints for RR's worst-case LP on the classes' orbits (theory/worst_lp.py,
`over_class_orbits`): a rule and a minimax prior, which the caller rationalises and bounds
exactly or in arb balls (any rule and any prior give valid bounds, so nothing here decides
a verdict).

The orbit LP is small (hundreds of rows) but badly conditioned: a row W reads
sum_(J, y) K[W, J] g[W, y] Q[J, y] >= t with K[W, J] the law of the released orbit J given
W, a Kronecker product of the classes' blocks whose entries run from about 1e-13 to 0.1
at 20 parties, and whose rows are nearly equal in a class of small epsilon (the class's
block has eigenvalues ((lambda - 1) / (lambda + 1))^i, i = 0..n_c). At a feasibility
tolerance of 1e-10 a simplex or interior-point code then takes minutes on one member of a
family and milliseconds on its neighbour (measured: parity at 19 parties in classes of 3, 9
and 7 at epsilons 0.05, 1 and 2: HiGHS past 600 s). The dense interior-point method of
theory/worst_ipm.py solves the same LP in the space of priors, in extended precision,
with no tolerance on the matrix's entries (entries below 1e-12, which HiGHS drops, are
kept): it is the first choice while its dense work fits; HiGHS's column generation
(worst_lp.solve_float_columns) is the fallback.
"""

from __future__ import annotations

import numpy as np

from dpverify.errors import SizeLimitError, SolverError
from dpverify.records import record
from dpverify.theory.worst_candidates import dense_lp_ends
from dpverify.theory.worst_ipm import RETRY_WIDTH, DenseWorst, dense_worst
from dpverify.theory.worst_lp import Solve, WorstLp, solve_float_columns


@record(eq=False)
class WorstHints:
    """A rule on every column (rows of floats, not yet clipped), the prior's masses on the
    LP's rows, and whether they are a solution at all (`ok`; else the caller uses its own
    default hints). `how` names the method for notes and tests."""

    rule: np.ndarray
    masses: np.ndarray
    ok: bool
    how: str


# HiGHS's column generation writes the LP's coefficients out (rows x columns x outputs):
# beyond this many it is not tried.
MAX_COLUMNS_ENTRIES = 50_000_000
# A dense run that leaves a block of at most this many coefficients (rows x columns x
# outputs) wider than the caller's need is followed by HiGHS's dense LP (`check`, the
# caller's solver with its own time limit), and the better end of each is kept: any rule
# and any prior are bounds. Measured: a party's `sum` at 20 parties in classes of 3 and 17
# at epsilons 3 and 0.25, one own bit's block of 54 orbits and 21 outputs: the dense method
# stalled 7.2e-7 wide after 46 iterations (0.45 s), and the exact simplex that followed ran
# past 600 s; HiGHS's dense LP closed it to 1.1e-15 in 0.02 s.
CHECK_ENTRIES = 2_000_000
DENSE = "dense interior point"
COLUMNS = "column generation (HiGHS)"
DENSE_CHECKED = "dense interior point, then HiGHS's dense LP"


def dense_or_columns(lp: WorstLp, solve: Solve, enough: float | None = None,
                     seed: np.ndarray | None = None, check: Solve | None = None
                     ) -> WorstHints:
    """The hints of one block of RR's worst-case LP: the dense interior-point method
    (theory/worst_ipm.py, on active rows beyond a few hundred; a bracket within `enough`
    is the caller's need, worst_ipm.RETRY_WIDTH by default; the rows of `seed` join its
    first round), else (when it fails or its work is over its limit) HiGHS's column
    generation. With `check` (a time-limited solver), a small block the dense method left
    wider than the need is solved by HiGHS's dense LP too (CHECK_ENTRIES), the better rule
    and the better prior kept."""
    try:
        found = dense_worst(lp, solve=solve, enough=enough, seed=seed)
    except (SolverError, SizeLimitError):
        found = None
    if found is not None:
        need = RETRY_WIDTH if enough is None else enough
        if check is not None and found.width > need and \
                lp.rows.size * lp.channel.columns * lp.m <= CHECK_ENTRIES:
            return _checked(lp, found, check)
        return WorstHints(found.rule, found.prior, True, DENSE)
    rows, columns, m = int(lp.rows.size), int(lp.channel.columns), lp.m
    if rows * columns * m > MAX_COLUMNS_ENTRIES:  # its dense matrix would not fit
        empty = np.zeros((columns, m))
        return WorstHints(empty, np.full(rows, np.nan), False, COLUMNS)
    columns_found = solve_float_columns(lp, solve, name="rr-worst-on-orbits")
    return WorstHints(columns_found.rule, columns_found.masses, columns_found.ok, COLUMNS)


# `carried` compares every pair of output columns on every row: beyond this many
# comparisons (rows x outputs^2) it is not tried
MAX_DOMINANCE_ENTRIES = 50_000_000


def dominating(source: np.ndarray, target: np.ndarray) -> np.ndarray | None:
    """For each output column of `source` (gains, rows x outputs), a column of `target` at
    least as large on every row, or None if some column has none (the first such column;
    exact float comparisons)."""
    covers = np.all(target[:, None, :] >= source[:, :, None], axis=0)  # [source, target]
    if not bool(np.all(np.any(covers, axis=1))):
        return None
    return np.asarray(np.argmax(covers, axis=1))


def carried(found: WorstHints, source: np.ndarray, target: np.ndarray) -> WorstHints | None:
    """`found`, the hints of a worst-case LP with gains `source`, carried to the LP on the
    same rows and channel with gains `target` (theory.md 2.1), when the two sets of output
    columns dominate each other (every column of one is at most, row by row, a column of
    the other): the rule's mass on an output moves to a target column that dominates it,
    so no row's accuracy falls, and a target column is dominated by a source column, so
    the prior's bound sum_tau max_y z does not rise: the bracket is no wider. Measured: a
    party's `sum` under `-abs`, whose own bits' gains are the same columns shifted by one
    (40 parties in classes of 23, 15 and 2: each own bit's LP took 25-34 s). None where
    the columns do not dominate each other, or the hints are not a solution."""
    rows, outputs = source.shape
    if not found.ok or source.shape != target.shape or \
            rows * outputs * outputs > MAX_DOMINANCE_ENTRIES:
        return None
    forward, backward = dominating(source, target), dominating(target, source)
    if forward is None or backward is None:
        return None
    rule = np.zeros_like(found.rule)
    np.add.at(rule.T, forward, found.rule.T)  # rule[:, forward[y]] += found.rule[:, y]
    return WorstHints(rule, found.masses, True, found.how)


def _checked(lp: WorstLp, found: DenseWorst, check: Solve) -> WorstHints:
    """The dense method's pair with HiGHS's dense LP's rule and prior where they bound
    better (worst_candidates.dense_lp_ends)."""
    try:
        best = dense_lp_ends(lp, found, check, name="rr-worst-on-orbits-check")
    except SolverError:
        best = found
    kept = best.rule is found.rule and best.prior is found.prior
    return WorstHints(best.rule, best.prior, True, DENSE if kept else DENSE_CHECKED)


__all__ = ["CHECK_ENTRIES", "COLUMNS", "DENSE", "DENSE_CHECKED", "WorstHints", "carried",
           "dense_or_columns", "dominating"]
