"""The count-query LPs (Gupte-Sundararajan, PODS 2010; Ghosh-Roughgarden-Sundararajan),
built as scipy.sparse arrays, and what turns their float solutions into rigorous bounds.

* `mechanism_lp`: the consumer's optimal alpha-DP oblivious mechanism (GS section 2.5).
* `post_processing_lp`: the minimax consumer's best post-processing of G (GS section 4.2).
* `dual_lower_bound`: weak duality from any row multipliers (a lower bound on a minimum).
* `repaired_mechanism`: a solver's mechanism made feasible (an upper bound on a minimum).
"""

from __future__ import annotations

import math

import numpy as np

from dpverify.defaults import LpForm
from dpverify.lp import LinearProgram, LpSolution
from dpverify.lp.builder import LpBuilder
from dpverify.lp.model import COLUMN_SCALE_FLOOR
from dpverify.records import record
from dpverify.theory.count.geometric import geometric_matrix, geometric_weights, minimax_loss
from dpverify.theory.exact_rows import clean_distribution, clean_stochastic

# --------------------------------------------------------------------------------------
# The LPs (built as scipy.sparse arrays; variables x[i, r] at column i*(n+1) + r)


def _add_rows(b: LpBuilder, rows, cols, vals, lo, hi, count: int) -> None:
    """`count` new rows; `rows` numbers them from 0 (the first new row)."""
    idx = b.add_rows(count, lo, hi)
    b.add(idx[np.asarray(rows, dtype=np.int64)], np.asarray(cols, dtype=np.int64), vals)


def _program(b: LpBuilder, c: np.ndarray, col_lower, col_upper, name: str,
             solver: str = "", drop_tiny: bool = False, prescaled: bool = False
             ) -> LinearProgram:
    """The columns (numbered from 0 by the rows above, created last) and the LP: a
    minimisation (`prescaled`: the caller scaled it, lp/model.py)."""
    b.add_cols(c.shape[0], cost=c, lo=col_lower, hi=col_upper)
    return b.build(maximize=False, name=name, solver=solver, drop_tiny=drop_tiny,
                   prescaled=prescaled)


def _stochastic_rows(rows: LpBuilder, N: int, offset: int = 0) -> None:
    """sum_r y[i, r] = 1 for every row i of the N x N block starting at column `offset`."""
    idx = np.arange(N * N)
    _add_rows(rows, idx // N, offset + idx, np.ones(N * N), 1.0, 1.0, N)


def mechanism_lp(loss: np.ndarray, alpha: float, side, prior: np.ndarray | None = None
                 ) -> LinearProgram:
    """The consumer's optimal alpha-DP oblivious mechanism (GS section 2.5; GRS).

    Variables x[i, r] >= 0 (and t for minimax). Constraints: rows of x sum to 1; for
    adjacent answers i, i+1 and every r, x[i,r] - alpha x[i+1,r] >= 0 and
    x[i+1,r] - alpha x[i,r] >= 0 (GS Definition 2). Minimax: minimise t subject to
    sum_r l(i,r) x[i,r] <= t for i in S. Bayes: minimise sum_i p_i sum_r l(i,r) x[i,r].
    """
    N = loss.shape[0]
    nx = N * N
    minimax = prior is None
    ncols = nx + (1 if minimax else 0)
    rows = LpBuilder()
    _stochastic_rows(rows, N)
    if alpha > 0 and N > 1:  # alpha = 0: no privacy constraint at all
        k = np.arange((N - 1) * N)
        upper, lower = k, k + N  # x[i, r] and x[i+1, r]
        both = np.concatenate([k, k])
        _add_rows(rows, both, np.concatenate([upper, lower]),
                 np.concatenate([np.ones(k.size), np.full(k.size, -alpha)]), 0.0, np.inf, k.size)
        _add_rows(rows, both, np.concatenate([lower, upper]),
                 np.concatenate([np.ones(k.size), np.full(k.size, -alpha)]), 0.0, np.inf, k.size)
    c = np.zeros(ncols)
    col_lower = np.zeros(ncols)
    col_upper = np.full(ncols, np.inf)
    if minimax:
        S = np.asarray(side, dtype=np.int64)
        t = nx
        # sum_r l(i,r) x[i,r] - t <= 0 for i in S
        ri = np.repeat(np.arange(S.size), N + 1)
        ci = np.concatenate([np.append(i * N + np.arange(N), t) for i in S])
        vi = np.concatenate([np.append(loss[i], -1.0) for i in S])
        _add_rows(rows, ri, ci, vi, -np.inf, 0.0, S.size)
        c[t] = 1.0
        col_lower[t] = -np.inf
    else:
        c[:nx] = (np.asarray(prior)[:, None] * loss).ravel()
    # alpha < 1e-12 is dropped by the solver (a relaxation): the verdict rests on the
    # bracket around the optimum (weak duality, a repaired mechanism), not on the objective
    return _program(rows, c, col_lower, col_upper, "count-mechanism", drop_tiny=True)


def post_processing_lp(loss: np.ndarray, alpha: float, side, form: str = LpForm.CHAIN
                       ) -> LinearProgram:
    """The minimax consumer's best randomised post-processing T of G (GS section 4.2).

    Variables T[k, r] >= 0, rows summing to 1, and t; minimise t subject to
    sum_r l(i,r) (G T)[i,r] <= t for i in S.

    form "dense" writes (G T)[i, r] = sum_k G[i,k] T[k,r] out: (n+1)^2 non-zeros per loss
    row. form "chain" (the default, same LP) uses G[i,k] = alpha^|i-k| w[k] (GS Definition
    4) and two first-order recurrences per column r,
        P[k,r] = alpha P[k-1,r] + w[k] T[k,r],   Q[k,r] = alpha Q[k+1,r] + w[k] T[k,r],
    so that (G T)[i,r] = P[i,r] + Q[i,r] - w[i] T[i,r]: O(n^2) non-zeros in all.
    """
    N = loss.shape[0]
    nT = N * N
    S = np.asarray(side, dtype=np.int64)
    rows = LpBuilder()
    _stochastic_rows(rows, N)
    if form == LpForm.DENSE:
        G = geometric_matrix(float(alpha), N - 1)
        t = nT
        ri = np.repeat(np.arange(S.size), nT + 1)
        ci = np.tile(np.arange(nT + 1), S.size)
        vi = np.concatenate([np.append(np.outer(G[i], loss[i]).ravel(), -1.0) for i in S])
        _add_rows(rows, ri, ci, vi, -np.inf, 0.0, S.size)
        ncols = nT + 1
    else:
        w = geometric_weights(float(alpha), N - 1).astype(np.float64)
        a = float(alpha)
        P, Q, t = nT, 2 * nT, 3 * nT
        k = np.arange(N)[:, None]
        r = np.arange(N)[None, :]
        cell = (k * N + r).ravel()  # (k, r) in row-major order
        kk = np.broadcast_to(k, (N, N)).ravel()
        eq = np.arange(nT)
        # P[k,r] - alpha P[k-1,r] - w[k] T[k,r] = 0 (the alpha term only for k >= 1)
        has = kk >= 1
        _add_rows(rows, np.concatenate([eq, eq, eq[has]]),
                 np.concatenate([P + cell, cell, P + cell[has] - N]),
                 np.concatenate([np.ones(nT), -w[kk], np.full(has.sum(), -a)]),
                 0.0, 0.0, nT)
        # Q[k,r] - alpha Q[k+1,r] - w[k] T[k,r] = 0 (the alpha term only for k < n)
        has = kk < N - 1
        _add_rows(rows, np.concatenate([eq, eq, eq[has]]),
                 np.concatenate([Q + cell, cell, Q + cell[has] + N]),
                 np.concatenate([np.ones(nT), -w[kk], np.full(has.sum(), -a)]),
                 0.0, 0.0, nT)
        # sum_r l(i,r) (P[i,r] + Q[i,r] - w[i] T[i,r]) - t <= 0 for i in S
        ri = np.repeat(np.arange(S.size), 3 * N + 1)
        ci = np.concatenate([np.concatenate([P + i * N + np.arange(N), Q + i * N + np.arange(N),
                                             i * N + np.arange(N), [t]]) for i in S])
        vi = np.concatenate([np.concatenate([loss[i], loss[i], -w[i] * loss[i], [-1.0]])
                             for i in S])
        _add_rows(rows, ri, ci, vi, -np.inf, 0.0, S.size)
        ncols = 3 * nT + 1
    c = np.zeros(ncols)
    c[-1] = 1.0
    col_lower = np.zeros(ncols)
    col_lower[ncols - 1] = -np.inf  # t is free; P, Q >= 0 (sums of non-negative terms)
    return _program(rows, c, col_lower, np.full(ncols, np.inf), "count-post-processing")


# --------------------------------------------------------------------------------------
# Rigorous brackets around an LP's optimum (the solver works to absolute tolerances of
# about 1e-7, and the optimal mechanism has entries as small as alpha^n, so its reported
# optimum can be off by far more than --tol; the verdict uses these brackets instead)


@record
class ColumnGroups:
    """What every optimal solution satisfies, column by column, for `dual_lower_bound`:
    `simplices`: (first column, N, exact) blocks of N x N variables whose rows are
    probability vectors (exact: sum 1) or sub-probability vectors (sum <= 1), entries >= 0;
    `scalars`: column -> (lower, upper)."""

    simplices: tuple[tuple[int, int, bool], ...]
    scalars: tuple[tuple[int, float, float], ...] = ()


def dual_lower_bound(lp: LinearProgram, sol: LpSolution, groups: ColumnGroups) -> float:
    """A lower bound on the optimum of the minimisation `lp` from any row multipliers y
    (weak duality), valid whatever the solver's accuracy.

    For every x feasible for `lp` that also satisfies `groups` (which every optimum does):
    c x = y (A x) + d x with d = c - A^T y, y (A x) >= sum_j min(y_j lo_j, y_j hi_j), and
    over a probability vector d x >= min_k d_k (over a sub-probability vector,
    >= min(0, min_k d_k)). Multipliers of the wrong sign for an infinite row bound are set
    to 0 first. With the solver's duals (d objective / d bound) this is the optimum up to
    the duals' accuracy.
    """
    y = np.asarray(sol.row_duals, dtype=np.float64).copy()
    lo, hi = lp.row_lower, lp.row_upper
    y[(y > 0) & ~np.isfinite(lo)] = 0.0
    y[(y < 0) & ~np.isfinite(hi)] = 0.0
    terms = [np.where(y > 0, y * np.where(np.isfinite(lo), lo, 0.0),
                      np.where(y < 0, y * np.where(np.isfinite(hi), hi, 0.0), 0.0))]
    d = lp.c - lp.A.rmatvec(y)
    covered = np.zeros(lp.num_cols, dtype=bool)
    for first, N, exact in groups.simplices:
        block = d[first:first + N * N].reshape(N, N).min(axis=1)
        terms.append(block if exact else np.minimum(block, 0.0))
        covered[first:first + N * N] = True
    for col, low, high in groups.scalars:
        terms.append(np.array([d[col] * (low if d[col] > 0 else high)]))
        covered[col] = True
    if not covered.all():
        raise ValueError("dual_lower_bound: every column needs a bound")
    total = math.fsum(np.concatenate(terms).tolist())  # no digits lost to cancellation
    return total if math.isfinite(total) else -math.inf


def repaired_mechanism(x: np.ndarray, alpha: float) -> np.ndarray:
    """A solver's mechanism made alpha-DP and row-stochastic again (an upper bound on the
    optimum is the loss of any feasible mechanism).

    Negatives are clipped and rows renormalised; then x is mixed with the uniform
    mechanism U (which is 1-DP, so it has slack (1-alpha)/N in every DP constraint):
    (1-theta) x + theta U with theta = 2v / (v + (1-alpha)/N) for the largest violation v.
    alpha = 1 asks for equal rows: the mean row repeated.
    """
    x = clean_stochastic(x)
    N = x.shape[0]
    if N == 1 or alpha == 0:
        return x
    if alpha == 1:
        return np.repeat(x.mean(axis=0, keepdims=True), N, axis=0)
    v = max(float((alpha * x[1:] - x[:-1]).max()), float((alpha * x[:-1] - x[1:]).max()), 0.0)
    if v == 0.0:
        return x
    theta = min(1.0, 2 * v / (v + (1 - alpha) / N))
    return (1 - theta) * x + theta / N


def t_range(loss: np.ndarray, side) -> tuple[float, float]:
    """At an optimum t is one of the consumer's expected losses: between the extremes."""
    rows = loss[np.asarray(side, dtype=np.int64)]
    return float(rows.min()), float(rows.max())


# --------------------------------------------------------------------------------------
# The minimax consumer's best post-processing, through its dual (GS section 4.2)

MAX_ROUNDS = 60  # rounds of constraint generation (seen: 3 to 8)


@record(eq=False)
class PostProcessing:
    """The best post-processing T of G for a minimax consumer and a least favourable prior
    q on S (LP duality: min over T of max_{i in S} sum_r l(i,r) (G T)[i,r] equals the max
    over q of sum_k min_r M_q[k, r], M_q = G^T diag(q) L). `solution` is the last LP's
    (for its status when it failed)."""

    T: np.ndarray | None
    q: np.ndarray | None
    solution: LpSolution


def _v_scale(M: np.ndarray) -> np.ndarray:
    """v_k = scale_k v'_k with scale_k the largest M[., k, .]: every row of prior_lp then
    reads v'_k - sum_i q_i M[i,k,r] / scale_k <= 0, with entries in [0, 1]."""
    scale = M.max(axis=(0, 2))
    scale[scale <= 0] = 1.0
    return scale


def _pair_rows(M: np.ndarray, active: list[tuple[int, int]], scale: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """The rows of prior_lp for the pairs (k, r) of `active`, in that order: their columns
    and entries, (len(active), s + 1) each (entries below 1e-12 of the row's scale 0)."""
    s = M.shape[0]
    ks = np.array([k for k, _ in active], dtype=np.int64)
    rs = np.array([r for _, r in active], dtype=np.int64)
    coef = -M[:, ks, rs].T / scale[ks][:, None]  # (len(active), s)
    coef[np.abs(coef) < 1e-12] = 0.0
    a = len(active)
    cols = np.concatenate([np.tile(np.arange(s), (a, 1)), (s + ks)[:, None]], axis=1)
    vals = np.concatenate([coef, np.ones((a, 1))], axis=1)
    return cols, vals


def prior_lp(M: np.ndarray, active: list[tuple[int, int]], side: np.ndarray,
             prescaled: bool = True) -> LinearProgram:
    """max sum_k v_k  s.t.  v_k - sum_{i in S} q_i G[i,k] l(i,r) <= 0 for (k, r) in `active`,
    sum_i q_i = 1, q >= 0, v free. `M[i, k, r]` = G[i, k] l(i, r) for i in S. The columns
    v_k are scaled (see below); entries below 1e-12 of their k's largest are dropped (HiGHS
    would drop them): the LP only finds q and T, whose values the caller computes from the
    full G. Returns the LP with v'_k = v_k / scale_k and the scales."""
    s, N = M.shape[0], M.shape[1]
    rows = LpBuilder()
    scale = _v_scale(M)
    cols, vals = _pair_rows(M, active, scale)
    a = len(active)
    _add_rows(rows, np.repeat(np.arange(a), s + 1), cols.ravel(), vals.ravel(), -np.inf, 0.0, a)
    _add_rows(rows, np.zeros(s, dtype=np.int64), np.arange(s), np.ones(s), 1.0, 1.0, 1)
    c = np.concatenate([np.zeros(s), scale])
    # scaled here (every entry in [-1, 1], each v' column's largest 1): by default HiGHS's
    # simplex does not scale it again (lp/highs.py); the q columns are not scaled, and
    # where a pair ends wide the generation runs afresh with HiGHS's scaling (_refined)
    return _program(rows, -c, np.concatenate([np.zeros(s), np.full(N, -np.inf)]),
                    np.full(s + N, np.inf), "count-least-favourable-prior", "simplex",
                    prescaled=prescaled)


def _near_minima(scores: np.ndarray, rel: float) -> set[tuple[int, int]]:
    """(k, r) with scores[k, r] within rel (of row k's largest magnitude) of row k's least."""
    low = scores.min(axis=1, keepdims=True)
    width = rel * np.maximum(np.abs(scores).max(axis=1, keepdims=True), 1e-300)
    return {(int(k), int(r)) for k, r in zip(*np.nonzero(scores <= low + width), strict=False)}


def _add_pairs(growing, M: np.ndarray, pairs: list[tuple[int, int]], scale: np.ndarray
               ) -> None:
    """prior_lp's rows of `pairs` added to a growing LP (compressed rows, zeros left out)."""
    cols, vals = _pair_rows(M, pairs, scale)
    keep = vals != 0.0
    starts = np.concatenate([[0], np.cumsum(keep.sum(axis=1))[:-1]])
    growing.add_rows(np.full(len(pairs), -np.inf), np.zeros(len(pairs)), starts, cols[keep],
                     vals[keep])


def best_post_processing(G: np.ndarray, loss: np.ndarray, side, solve_lp,
                         q_hint: np.ndarray | None = None, patience: int | None = None,
                         max_rows: int | None = None, band: int = 0,
                         grow=None, need: float | None = None, prescaled: bool = True
                         ) -> PostProcessing:
    """The minimax consumer's best post-processing of G, by constraint generation on the
    dual LP (prior_lp). The first rows are each k's best answers under the uniform prior
    and under `q_hint` (a distribution on 0..n, e.g. the optimal mechanism's least
    favourable prior: by complementary slackness the optimal T uses only answers that are
    best under an optimal q); then each round adds, for every k whose bound v_k the
    solution violates, its best answer, until none is violated. T[k, r] is the dual of row
    (k, r) (the v_k column makes every row of T sum to 1). `solve_lp(lp)` -> LpSolution.
    With `patience`, a generation whose q has had no positive value for that many rounds
    (q jumping from point mass to point mass: the indicator loss at small epsilon) gives
    up (T and q None: the caller solves the direct LP instead); so does one whose LP would
    grow beyond `max_rows` rows (the size guard, --max-nonzeros). With `band`, the first
    rows also hold every answer r within `band` of k: a prior q on a single point i then
    has a positive value (the answers near a k far from i are wrong for i), so q need not
    visit the points of S one by one before it mixes (the indicator and truncated losses).
    With `grow` (verifiers/solving.py `Solver.growing`: lp -> a growing LP, or None), the
    first LP is kept in the solver and each round's rows are added to it, solved again
    from its last basis: the same LP each round, in another order of rows. With `need` (the
    bracket's width the caller's verdict needs, in the loss's units), a pair wider than
    that is polished too (_refined). `prescaled`: prior_lp's, False for HiGHS's own scaling
    (the afresh run of _refined)."""
    S = np.asarray(side, dtype=np.int64)
    N = G.shape[0]
    M = G[S][:, :, None] * loss[S][:, None, :]  # M[i, k, r] = G[i,k] l(i,r), i in S
    scale = _v_scale(M)
    active = _near_minima(np.tensordot(np.full(S.size, 1.0 / S.size), M, 1), 0.0)
    if q_hint is not None and q_hint[S].sum() > 0:
        active |= _near_minima(np.tensordot(q_hint[S] / q_hint[S].sum(), M, 1), 1e-9)
    if band:
        ks, rs = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")
        near = np.abs(ks - rs) <= band
        active |= set(zip(ks[near].tolist(), rs[near].tolist(), strict=True))
    rows = sorted(active)  # at most about (3 + 2 band) (n + 1) rows
    at = np.arange(len(rows))  # the LP's row of each pair of `rows`
    sol = None
    growing = None
    best = 0.0  # the best value of a q found (sum_k min_r M_q[k, r])
    for round_ in range(MAX_ROUNDS):
        if growing is None:
            lp = prior_lp(M, rows, S, prescaled)
            growing = grow(lp) if grow is not None and round_ == 0 else None
            sol = solve_lp(lp) if growing is None else growing.solve()
        else:
            sol = growing.solve()
        if not sol.optimal:
            return PostProcessing(None, None, sol)
        q = np.clip(sol.x[:S.size], 0.0, None)
        v = sol.x[S.size:] * scale
        scores = np.tensordot(q, M, 1)  # [k, r]
        violated = scores.min(axis=1) < v - 1e-12 * scale
        fresh = {(k, r) for k, r in _near_minima(scores, 1e-12) if violated[k]} - active
        if not fresh:
            break
        best = max(best, math.fsum(scores.min(axis=1).tolist()))
        if patience is not None and round_ + 1 >= patience and not best > 0:
            return PostProcessing(None, None, sol)  # zigzag: q jumps between point masses
        active |= fresh
        if growing is None:
            rows = sorted(active)
            at = np.arange(len(rows))
        else:  # after the rows so far and the sum row
            new = sorted(fresh)
            at = np.concatenate([at, len(rows) + 1 + np.arange(len(new))])
            rows += new
            _add_pairs(growing, M, new, scale)
        if max_rows is not None and len(rows) + 1 > max_rows:
            return PostProcessing(None, None, sol)
    assert sol is not None
    afresh = None if growing is None else (  # the same generation, every LP afresh
        lambda: best_post_processing(G, loss, side, solve_lp, q_hint, patience, max_rows,
                                     band, need=need, prescaled=False))
    return _refined(_read_pair(sol, rows, at, S, N), G, loss, S, solve_lp, afresh, need)


def _refined(found: PostProcessing, G: np.ndarray, loss: np.ndarray, S: np.ndarray,
             solve_lp, afresh, need: float | None = None) -> PostProcessing:
    """The generation's pair, polished (polished_pair) where its bracket is wider than
    WARM_GAP of T's value or than `need`; where it stays wider than WARM_GAP after a grown
    LP, the generation run afresh (`afresh`: from old bases the grown LP can end at a pair
    its tolerances allow but a fresh generation closes tighter; afresh with HiGHS's own
    scaling, which the grown LP goes without: measured at n = 30, alpha 1/1000, the square
    loss, whose q columns span many orders, a pair 1.2e-5 relative wide unscaled), keeping
    the better end of each."""
    if found.T is None or not _wide(found, G, loss, S, need):
        return found
    found = _better(found, polished_pair(found, G, loss, S, solve_lp), G, loss, S)
    if afresh is not None and _wide(found, G, loss, S):
        again = afresh()
        if again.T is not None:
            found = _better(found, again, G, loss, S)
    return found


# The bracket, relative to T's value, a grown LP's pair may leave before the generation
# runs again afresh (the verdict's tolerance is --tol of the loss's range, far wider; this
# keeps the numbers shown as tight as a fresh generation's. Measured: n = 30, alpha 1/1000,
# the square loss, a value of 2.2e-6 (in the range's units): grown, the prior's bound
# 1.3e-11 below it, 6e-6 relative; afresh, 4e-14; the count family's members at n = 200:
# at most 6.5e-12 below values of 1e-2 or more)
WARM_GAP = 1e-8


def _wide(found: PostProcessing, G, loss, S, need: float | None = None) -> bool:
    """Whether the pair's bracket is wider than WARM_GAP of T's value (or than `need`)."""
    assert found.T is not None and found.q is not None
    value = _value(found.T, G, loss, S)
    limit = WARM_GAP * abs(value) if need is None else min(WARM_GAP * abs(value), need)
    return value - geometric_bound(G, loss, found.q) > limit


# The answers of each k that count as tied for the pair's prior q (relative to the largest
# score of k), and the most pairs (k, r) the polish's LP takes, per row of G
POLISH_TIES = 1e-9
POLISH_PAIRS_PER_ROW = 8
POLISH_USED = 1e-9  # the entries of T that count as used by tight_prior


def polished_pair(found: PostProcessing, G: np.ndarray, loss: np.ndarray, S: np.ndarray,
                  solve_lp) -> PostProcessing:
    """A pair (T, q) from the post-processing LP (GS section 4.2) restricted to the pairs
    (k, r) where T is positive or r is within POLISH_TIES of k's best answer under q: by
    complementary slackness an optimal T uses only answers that are best under an optimal
    q, so near the end of the generation this small LP holds an optimum, while the pair
    read from the prior LP's duals carries that LP's tolerances (seen: n = 200, epsilon 2,
    a truncated loss, T 2.2e-9 above its optimum in the loss's range, which no verdict
    could tell from a gap; polished, 4.6e-11, in 20 ms). Its columns are scaled to their
    largest entry. The new T and the prior that makes T's answers best (tight_prior; the
    small LP's own duals are a prior for its few columns only: seen, a point mass) are
    candidates only, each kept by the caller when its own value is better (computed from
    the full G). The pair given back where the LP is too large or fails."""
    assert found.T is not None and found.q is not None
    N = G.shape[0]
    scores = G.T @ (found.q[:, None] * loss)  # [k, r] = sum_i q_i G[i, k] l(i, r)
    low = scores.min(axis=1, keepdims=True)
    free = (found.T > 0) | (scores <= low + POLISH_TIES * np.abs(scores).max(axis=1,
                                                                          keepdims=True))
    ks, rs = np.nonzero(free)
    m = ks.size
    if m > POLISH_PAIRS_PER_ROW * N:
        return found
    entries = G[S][:, ks] * loss[S][:, rs]  # (|S|, m): row i, pair (k, r)
    scale = np.maximum(entries.max(axis=0), COLUMN_SCALE_FLOOR)
    entries = entries / scale
    entries[entries < 1e-12] = 0.0  # HiGHS would drop them; T's value uses the full G
    b = LpBuilder()
    cols = b.add_cols(m)  # T'[k, r] = scale T[k, r] >= 0
    t = b.add_cols(1, cost=1.0, lo=-np.inf)[0]
    sums = b.add_rows(N, 1.0, 1.0)  # sum_r T[k, r] = 1
    b.add(sums[ks], cols, 1.0 / scale)
    losses = b.add_rows(S.size, -np.inf, 0.0)  # sum_{k,r} G[i,k] l(i,r) T[k,r] <= t
    ii, jj = np.nonzero(entries)
    b.add(losses[ii], cols[jj], entries[ii, jj])
    b.add(losses, t, -1.0)
    sol = solve_lp(b.build(maximize=False, name="count-post-processing-polish",
                           solver="simplex"))
    if not sol.optimal:
        return found
    T = np.zeros((N, N))
    np.add.at(T, (ks, rs), np.clip(sol.x[:m], 0.0, None) / scale)
    T = clean_stochastic(T)
    return PostProcessing(T, tight_prior(T, G, loss, S), sol)


def tight_prior(T: np.ndarray, G: np.ndarray, loss: np.ndarray, S: np.ndarray) -> np.ndarray:
    """The prior q on S that makes every answer T uses (T[k, r] > POLISH_USED) a best
    answer of its k: v_k = sum_i q_i G[i, k] l(i, r) on those pairs and sum q = 1, with
    q_i = 0 where i's loss under G T is below the most (by POLISH_USED), solved by least
    squares, then clipped and normalised (complementary slackness of prior_lp with
    T; its LP solution meets each row only within the solver's tolerance, which summed
    over the n + 1 values v_k was 1.4e-9 of the loss's range at n = 100). A candidate:
    the caller values it (geometric_bound) and keeps the better prior."""
    N = G.shape[0]
    losses = (loss[S] * (G[S] @ T)).sum(axis=1)  # each i's expected loss under G T
    on = S[losses >= losses.max() - POLISH_USED]  # q_i > 0 only where i's loss is the most
    ks, rs = np.nonzero(T > POLISH_USED)
    s = on.size
    A = np.zeros((ks.size + 1, s + N))
    A[np.arange(ks.size), s + ks] = 1.0  # v_k
    A[np.arange(ks.size), :s] = -(G[on][:, ks] * loss[on][:, rs]).T  # - sum_i q_i M[i, k, r]
    A[-1, :s] = 1.0
    b = np.zeros(ks.size + 1)
    b[-1] = 1.0
    x = np.linalg.lstsq(A, b, rcond=None)[0]
    weights = np.zeros(N)
    weights[on] = x[:s]
    return clean_distribution(weights, on.tolist())


def _read_pair(sol: LpSolution, rows: list[tuple[int, int]], at: np.ndarray, S: np.ndarray,
               N: int) -> PostProcessing:
    """T from the duals of the rows (`at`: each pair's row in the LP), q from the primal."""
    T = np.zeros((N, N))
    duals = -np.asarray(sol.row_duals[at])  # d objective / d bound of `<=` rows
    for (k, r), y in zip(rows, duals.tolist(), strict=False):
        T[k, r] += max(y, 0.0)
    weights = np.zeros(N)
    weights[S] = np.clip(sol.x[:S.size], 0.0, None)
    return PostProcessing(clean_stochastic(T), clean_distribution(weights, S.tolist()), sol)


def geometric_bound(G: np.ndarray, loss: np.ndarray, weights: np.ndarray) -> float:
    """sum_k min_r sum_i q_i G[i,k] l(i,r): a lower bound on the loss of G followed by any
    post-processing, for a distribution q on S (theory/count/exact.py has the argument and
    the exact version)."""
    scores = G.T @ (weights[:, None] * loss)
    return math.fsum(scores.min(axis=1).tolist())


def _value(T: np.ndarray, G: np.ndarray, loss: np.ndarray, S: np.ndarray) -> float:
    """T's end of the bracket: the minimax loss of G T over S."""
    return float(minimax_loss(G @ T, loss, S.tolist()))


def _gap(found: PostProcessing, G, loss, S) -> float:
    assert found.T is not None and found.q is not None
    return _value(found.T, G, loss, S) - geometric_bound(G, loss, found.q)


def _better(a: PostProcessing, b: PostProcessing, G, loss, S) -> PostProcessing:
    """The better T (smaller value) and the better q (larger bound) of two pairs."""
    assert a.T is not None and a.q is not None and b.T is not None and b.q is not None
    T = a.T if _value(a.T, G, loss, S) <= _value(b.T, G, loss, S) else b.T
    q = a.q if geometric_bound(G, loss, a.q) >= geometric_bound(G, loss, b.q) else b.q
    return PostProcessing(T, q, b.solution)
