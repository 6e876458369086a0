"""Polishing the dense method's rule and prior by complementary slackness, in floats
(docs/theory.md 2.12; the exact counterpart on all inputs is theory/certificates/repair.py).

RR's worst-case LP of one block (theory/worst_lp.py: rows a, columns c, outputs y),

    max t  s.t.  acc_Q(a) = sum_(c, y) C[a, c] g[a, y] Q[c, y] >= t,  Q row-stochastic,

has a minimax prior rho as its dual (theory/worst_ipm.py). At an optimal pair, the rows in
the prior's support are tight (acc_Q(a) = t) and the rule uses on each column only outputs
that tie for the prior (z[c, y] = sum_a rho_a C[a, c] g[a, y] maximal). Near the end of the
interior-point method the supports are known but the iterates are not accurate: when RR
says little (parity at small epsilons) C's rows are nearly equal, the normal matrix's
condition exceeds what even extended precision resolves, and the rule's worst case stalls
about 1e-9 below the prior's bound while the tolerance wants 1e-9 of the range.

So each end is solved again from the other's support, as the linear system it is:

* the rule (`polish_rule`): the outputs within reach of the best on every column (the
  others 0), the rows of the prior's support tight. The system is solved by least squares
  (an SVD in double precision) refined against its residual in extended precision
  (Golub and Van Loan, Matrix Computations, 4th ed., 3.5.3); when it leaves a null space
  (every row tight and every entry fractional, as for parity: t is free) the largest t
  that keeps Q in [0, 1] and the other rows above t is a small LP on the null space
  (solved by the callable the caller passes: theory/ builds LPs, never solves them);
* the prior (`polish_prior`): the rows the rule leaves tight, each tie of the rule's
  fractional outputs an equation z[c, y] = z[c, y'], and the masses summing to 1.

A polished rule or prior is only a candidate: the caller keeps it when its own float bound
is better, and the verdict rests on the exact or enclosed bounds of whatever is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpverify.lp.model import COLUMN_SCALE_FLOOR
from dpverify.theory.exact_rows import clean_distribution, clean_stochastic

WORK = np.longdouble
# the prior's support: masses above this fraction of the largest
SUPPORT = 1e-6
# outputs tied on a column: within this of its best score (relative to the prior's
# largest mass, the scale of z)
TIE = 1e-7
# ... and the finer ties tried after it, in order, while the rule's system leaves a null
# space too large (MAX_NULL): near the end the prior's scores tie on many more columns
# than the rule randomises (measured: a threshold at 30 parties, 737 active orbits and a
# support of 72: 789 columns tied within 1e-7, 307 within 1e-9, 112 within 1e-11; at
# 1e-11 the polished rule closed the bracket from 9.7e-10 to 2.7e-12, at 1e-13 to 8e-14)
FINER_TIES = (1e-9, 1e-11, 1e-13)
# a row the rule leaves tight: within this of its worst case
TIGHT = 1e-9
RANK = 1e-13  # singular values below this fraction of the largest span the null space,
NULL = 1e-13  # and those below this (in units of accuracy per unit of Q)
REFINE = 6
# The null-space LPs are dense over the null space's dimension (the rule's: one row per
# free entry; the prior's: columns x outputs rows): beyond this dimension the polish is
# left out (the interior point's rule or prior is kept).
MAX_NULL = 96
MAX_PAIRS = 20_000  # the prior's equations (ties of the rule): beyond, no polish


def _least_squares(matrix: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A least-squares solution of matrix @ x = rhs and an orthonormal basis of the null
    space (columns), both refined in extended precision. The null space takes the singular
    directions below RANK of the largest or below NULL: the unknowns are rule entries and
    t (in [0, 1]) and the rows accuracies, so a move along such a direction changes no row
    by more than NULL, while solving along it would amplify the residual's rounding."""
    # The null space needs every row of V^T: the thin SVD has them all when the matrix has
    # at least as many rows as columns, and then U is rows x columns, not rows x rows (a
    # full U of a prior's 18,881 tie equations in 3 unknowns took 16 s: an observer's
    # `sum` at 30 parties in three classes; thin, milliseconds)
    wide = matrix.shape[0] < matrix.shape[1]
    u, sv, vt = np.linalg.svd(np.asarray(matrix, dtype=np.float64), full_matrices=wide)
    top = float(sv[0]) if sv.size else 0.0
    rank = int(np.sum(sv > max(RANK * top, NULL))) if top > 0 else 0

    def pinv(r: np.ndarray) -> np.ndarray:
        r64 = np.asarray(r, dtype=np.float64)
        return np.asarray(vt[:rank].T @ ((u[:, :rank].T @ r64) / sv[:rank][:, None]
                                         if r64.ndim == 2 else
                                         (u[:, :rank].T @ r64) / sv[:rank]), dtype=WORK)

    x = np.zeros(matrix.shape[1], dtype=WORK)
    for _ in range(REFINE):
        x = x + pinv(rhs - matrix @ x)
    null = np.asarray(vt[rank:].T, dtype=WORK)
    for _ in range(2):  # inverse iteration: the double SVD's null vectors, refined
        null = null - pinv(matrix @ null)
    return x, null


def _tied(z: np.ndarray, scale: float, tie: float) -> list[np.ndarray]:
    top = z.max(axis=1)
    return [np.flatnonzero(z[c] >= top[c] - tie * scale) for c in range(z.shape[0])]


def polish_rule(C: np.ndarray, G: np.ndarray, prior: np.ndarray, solve,
                ties: Sequence[float] = (TIE,), enough: float = np.inf) -> np.ndarray | None:
    """A rule from the prior's supports (module docstring): C the block's dense channel
    (rows x columns), G its gains (rows x outputs), `prior` masses on the rows; `solve` a
    float LP solver (theory/worst_lp.Solve) for the null-space LP. Outputs within a tie of
    `ties` of a column's best are tied, each tie in turn until a rule's worst case reaches
    `enough`; the best rule found (by its worst case), or None when no system has a usable
    solution."""
    C, G, pi = C.astype(WORK), G.astype(WORK), np.asarray(prior, dtype=WORK)
    if not np.all(np.isfinite(pi)) or pi.max() <= 0:
        return None
    z = C.T @ (pi[:, None] * G)
    support = np.flatnonzero(pi > SUPPORT * pi.max())
    best, value = None, -np.inf
    for tie in ties:
        rule = _rule_on_ties(C, G, z, _tied(z, float(pi.max()), tie), support, solve)
        if rule is None:
            continue
        worst = float((((C @ rule) * G).sum(axis=1)).min())
        if worst > value:
            best, value = rule, worst
        if value >= enough:
            break
    return best


def _rule_on_ties(C, G, z, tied, support, solve) -> np.ndarray | None:
    """The rule of one set of ties (polish_rule), or None."""
    n, m = z.shape
    base = np.zeros((n, m), dtype=WORK)
    last = np.array([t[-1] for t in tied])
    base[np.arange(n), last] = 1
    js = np.array([c for c, t in enumerate(tied) for _ in t[:-1]], dtype=np.intp)
    ys = np.array([y for t in tied for y in t[:-1]], dtype=np.intp)
    if js.size + 1 - support.size > MAX_NULL:
        return None  # a null space too large for its LP, whatever the rank
    # acc(a) = base_acc(a) + B[a] @ x, x the entries Q[j, y] (y not the column's last tie;
    # Q[j, last] = 1 - the others), then t
    base_acc = ((C @ base) * G).sum(axis=1)
    B = C[:, js] * (G[:, ys] - G[:, last[js]])
    system = np.hstack([B[support], -np.ones((support.size, 1), dtype=WORK)])
    x, null = _least_squares(system, -base_acc[support])
    if null.shape[1]:  # t free along the null space: its largest
        if null.shape[1] > MAX_NULL or solve is None:
            return None
        x = _largest_t(x, null, B, base_acc, support, js, solve)
        if x is None:
            return None
    rule = base.copy()
    np.add.at(rule, (js, ys), x[:-1])
    np.add.at(rule, (js, last[js]), -x[:-1])
    if not np.all(np.isfinite(rule)):
        return None
    return clean_stochastic(rule)


def _largest_t(x, null, B, base_acc, support, js, solve):
    """x + null @ c with the largest t such that every entry of Q stays in [0, 1] and every
    row outside the support stays at or above t (an LP in c, built here and solved by
    `solve`); None when that LP fails."""
    x64, N = np.asarray(x, dtype=np.float64), np.asarray(null, dtype=np.float64)
    entries = N[:-1]  # Q's free entries as functions of c
    sums = np.zeros((int(js.max()) + 1 if js.size else 0, N.shape[1]))
    np.add.at(sums, js, entries)
    sum0 = np.zeros(sums.shape[0])
    np.add.at(sum0, js, x64[:-1])
    outside = np.setdiff1d(np.arange(B.shape[0]), support)
    slack = np.asarray(base_acc[outside] + B[outside] @ x[:-1] - x[-1], dtype=np.float64)
    rows_outside = np.asarray(B[outside], dtype=np.float64) @ entries - N[-1]
    from dpverify.lp.builder import LpBuilder  # lazy: scipy.sparse, only when polishing

    b = LpBuilder()
    c = b.add_cols(N.shape[1], cost=N[-1], lo=-np.inf)
    # 0 <= x_i + e_i c <= 1; the column's last entry 1 - sum >= 0; rows outside >= t
    for coef, lo, hi in ((entries, -x64[:-1], 1.0 - x64[:-1]),
                         (sums, -np.inf, 1.0 - sum0),
                         (rows_outside, -slack, np.inf)):
        if coef.shape[0] == 0:
            continue
        rows = b.add_rows(coef.shape[0], lo, hi)
        rr, cc = np.nonzero(coef)
        b.add(rows[rr], c[cc], coef[rr, cc])
    found = solve(b.build(maximize=True, name="polish-null-space", drop_tiny=True))
    if not found.optimal:
        return None
    step = null @ np.asarray(found.x, dtype=WORK)
    # the LP's solver works to its own tolerance (1e-7 by default): go from x towards its
    # solution only as far as every constraint holds in extended precision (a ratio test;
    # x itself is feasible when its entries are in [0, 1] and the other rows above t)
    values = [x[:-1], 1 - x[:-1], 1 - sum0.astype(WORK),
              base_acc[outside] + B[outside] @ x[:-1] - x[-1]]
    moves = [step[:-1], -step[:-1], -_sums(js, step[:-1], sum0.size),
             B[outside] @ step[:-1] - step[-1]]
    theta = WORK(1)
    for v, dv in zip(values, moves, strict=True):
        if v.size and np.any(v < 0):
            return x + step  # no feasible start: the LP's point (the caller clips it)
        down = dv < 0
        if np.any(down):
            theta = min(theta, WORK(np.min(-v[down] / dv[down])))
    return x + theta * step


# The rule's LP on the prior's ties (`rule_lp`): the ties tried, and its size (rows x free
# entries non-zeros at most). One tie: measured on two majorities in three and four classes
# (466 and 1,807 active orbits, brackets of 2.6e-9 and 4.6e-9 after the other polishes),
# ties within 1e-9 closed both to 5e-13 and 8e-14 in 0.3 and 0.5 s; within 1e-7, parity at
# 19 parties (a signal of 2e-9) gave HiGHS an LP it did not solve in 20 s. The finer tie
# is tried only where the coarser one's LP is over LP_WORK (a finer tie frees a subset of
# the entries: where the coarser LP is solved, the finer one's optimum is no better).
# Measured: a party's threshold at 30 parties in four classes, a block of 1,095 orbits
# and 2 outputs stalled 5.4e-9 wide; its LP at 1e-9 had 1,940 free entries (2.1e6 > LP_WORK),
# at 1e-11 720, and closed the block to 1.1e-11 in 0.8-1.5 s
LP_TIES = (1e-9, 1e-11)
LP_WORK = 2_000_000


def rule_lp(C: np.ndarray, G: np.ndarray, prior: np.ndarray, solve,
            ties: Sequence[float] = LP_TIES, most_free: int | None = None
            ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """A rule, and a prior, from one LP (a crossover where `polish_rule`'s system fails:
    when the prior's support is not exactly the tight rows, or the tight system is
    inconsistent): on each column the outputs within a tie of the prior's best are free,
    the others 0, and

        max t  s.t.  acc_Q(a) >= t for every row a,  Q's free entries >= 0, each column's
                     sum 1,

    solved by `solve`; its optimal rule is a lower bound as it stands, and its duals on
    the rows (they sum to 1) are a prior, whose bound the caller evaluates. Each LP
    column is scaled to its largest entry (a channel's entries span many decades; HiGHS
    drops entries below 1e-12 and works to absolute tolerances). The first tie of `ties`
    whose LP is not too large (LP_WORK, or more free entries than `most_free`): a finer
    tie frees a subset of the entries, so its optimum is no better once a coarser LP is
    solved. (rule, its dual prior), each None when no LP gives one (every LP too large,
    or not solved)."""
    from dpverify.lp.builder import LpBuilder  # lazy: scipy.sparse, only when polishing

    C, G, pi = C.astype(WORK), G.astype(WORK), np.asarray(prior, dtype=WORK)
    if not np.all(np.isfinite(pi)) or pi.max() <= 0:
        return None, None
    z = C.T @ (pi[:, None] * G)
    for tie in ties:
        tied = _tied(z, float(pi.max()), tie)
        js = np.array([c for c, t in enumerate(tied) if t.size > 1 for _ in t], dtype=np.intp)
        ys = np.array([y for t in tied if t.size > 1 for y in t], dtype=np.intp)
        if js.size == 0 or js.size * C.shape[0] > LP_WORK or (
                most_free is not None and js.size > most_free):
            continue  # nothing free (the prior's Bayes rule), or an LP too large
        base = np.zeros(z.shape, dtype=WORK)
        alone = np.flatnonzero([t.size == 1 for t in tied])
        base[alone, [tied[c][0] for c in alone]] = 1
        base_acc = ((C @ base) * G).sum(axis=1)
        B = np.asarray(C[:, js] * G[:, ys], dtype=np.float64)
        # at least COLUMN_SCALE_FLOOR: HiGHS refuses an LP with an entry of 1e15 or more, and the
        # column sums hold 1 / scale (measured: outputs rarely right on a column that ties
        # everywhere, scales of 1e-19 to 1e-23 at 21-24 parties and epsilons 3-5)
        scale = np.maximum(np.abs(B).max(axis=0), COLUMN_SCALE_FLOOR)
        b = LpBuilder()
        u = b.add_cols(js.size, hi=scale)  # u = Q[j, y] * scale
        t = b.add_cols(1, cost=1.0, lo=-np.inf)
        rows = b.add_rows(C.shape[0], -np.asarray(base_acc, dtype=np.float64), np.inf)
        rr, cc = np.nonzero(B)
        b.add(rows[rr], u[cc], (B / scale)[rr, cc])
        b.add(rows, np.repeat(t, rows.size), -1.0)
        columns, first = np.unique(js, return_inverse=True)
        sums = b.add_rows(columns.size, 1.0, 1.0)
        b.add(sums[first], u, 1.0 / scale)
        found = solve(b.build(maximize=True, name="polish-rule-lp", drop_tiny=True))
        if not found.optimal:
            return None, None
        rule = base.copy()
        np.add.at(rule, (js, ys), np.asarray(np.clip(found.x[:js.size] / scale, 0.0, 1.0),
                                             dtype=WORK))
        rule = clean_stochastic(rule)
        duals = np.abs(np.asarray(found.row_duals[:C.shape[0]], dtype=np.float64))
        return rule, (clean_distribution(duals) if duals.sum() > 0 else None)
    return None, None


def _sums(js: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    out = np.zeros(count, dtype=WORK)
    np.add.at(out, js, values)
    return out


def polish_prior(C: np.ndarray, G: np.ndarray, rule: np.ndarray, solve) -> np.ndarray | None:
    """A prior from the rule's supports (module docstring); when the equations leave a null
    space, the prior of least bound on it (an LP solved by `solve`, as for the rule). None
    when the system has no usable solution."""
    C, G, Q = C.astype(WORK), G.astype(WORK), np.asarray(rule, dtype=WORK)
    acc = ((C @ Q) * G).sum(axis=1)
    tight = np.flatnonzero(acc <= acc.min() + TIGHT)
    pairs = [(c, a, b) for c in range(Q.shape[0])
             for ys in [np.flatnonzero(Q[c] > TIE)]
             for a, b in zip(ys[:-1], ys[1:], strict=True)]
    if tight.size - (len(pairs) + 1) > MAX_NULL or len(pairs) > MAX_PAIRS:
        return None  # a null space too large for its LP, or a system too large
    system = np.ones((len(pairs) + 1, tight.size), dtype=WORK)
    if pairs:
        cs, a_s, b_s = (np.array(v, dtype=np.intp) for v in zip(*pairs, strict=True))
        system[:-1] = (C[tight][:, cs] * (G[tight][:, a_s] - G[tight][:, b_s])).T
    rhs = np.zeros(len(pairs) + 1, dtype=WORK)
    rhs[-1] = 1
    masses, null = _least_squares(system, rhs)
    if 0 < null.shape[1] <= MAX_NULL and solve is not None:
        masses = _least_bound(masses, null, C[tight], G[tight], solve)
    if masses is None or not np.all(np.isfinite(masses)):
        return None
    prior = np.zeros(C.shape[0], dtype=WORK)
    prior[tight] = masses
    return clean_distribution(prior)


def _least_bound(p0, null, C, G, solve):
    """p0 + null @ c >= 0 with the least bound sum_c max_y z[c, y] (z linear in the
    masses): the LP  min sum v  s.t.  v_c >= z[c, y](p0 + null c),  p0 + null c >= 0, built
    here and solved by `solve`; then a ratio test from p0 (None when the LP fails)."""
    from dpverify.lp.builder import LpBuilder  # lazy: scipy.sparse, only when polishing

    N = np.asarray(null, dtype=np.float64)
    Z0 = np.asarray(C.T @ (p0[:, None] * G), dtype=np.float64)  # (columns, m)
    n, m = Z0.shape
    # z[c, y](coefficients) = Z0 + sum_i coef_i * (C^T (null_i * G))[c, y]
    D = np.einsum("ac,ai,ay->cyi", np.asarray(C, dtype=np.float64), N,
                  np.asarray(G, dtype=np.float64))
    b = LpBuilder()
    coef = b.add_cols(N.shape[1], lo=-np.inf)
    v = b.add_cols(n, cost=1.0, lo=-np.inf)
    rows = b.add_rows(n * m, Z0.reshape(-1), np.inf)  # v_c - D c >= Z0
    b.add(rows, np.repeat(v, m), 1.0)
    rr, cc = np.nonzero(D.reshape(n * m, -1))
    b.add(rows[rr], coef[cc], -D.reshape(n * m, -1)[rr, cc])
    mass_rows = b.add_rows(N.shape[0], -np.asarray(p0, dtype=np.float64), np.inf)
    rr, cc = np.nonzero(N)
    b.add(mass_rows[rr], coef[cc], N[rr, cc])
    found = solve(b.build(maximize=False, name="polish-prior-null-space", drop_tiny=True))
    if not found.optimal:
        return None
    step = null @ np.asarray(found.x[:N.shape[1]], dtype=WORK)
    if np.any(p0 < 0):
        return p0 + step  # no feasible start: the LP's point (the caller clips it)
    down = step < 0
    theta = min(WORK(1), WORK(np.min(-p0[down] / step[down]))) if np.any(down) else WORK(1)
    return p0 + theta * step


__all__ = ["FINER_TIES", "TIE", "polish_prior", "polish_rule", "rule_lp"]
