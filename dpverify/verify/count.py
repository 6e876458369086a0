"""The count-query verifier: is the geometric mechanism universally optimal?

Gupte-Sundararajan (GS, PODS 2010, Theorem 1) for minimax consumers and Ghosh-Roughgarden-
Sundararajan (GRS, STOC 2009) for Bayesian consumers (theory.md section 2). Two independent
computations per problem, and `optimal` only when both succeed and agree within the
tolerance:

* the optimal alpha-DP oblivious mechanism for the consumer: an LP over x[i, r]
  (`mechanism_optimum`: the least loss any alpha-DP mechanism can have);
* the candidate: the geometric mechanism G followed by the consumer's best post-processing
  (minimax: an LP over randomised T, GS section 4.2; Bayes: the best deterministic remap,
  computed directly, GRS), evaluated on the mechanism G T it induces (`geometric_value`).

Losses are minimised, so `gap = geometric_value - mechanism_optimum >= 0` up to rounding.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpverify.lp import LinearProgram, LpSolution, solve
from dpverify.spec.count_loader import loss_table
from dpverify.spec.count_model import CountSpec
from dpverify.theory.geometric import (
    bayes_loss,
    bayes_remap,
    geometric_matrix,
    geometric_weights,
    minimax_loss,
    monotonicity_violation,
)
from dpverify.verify.options import VerifyOptions, check_limit
from dpverify.verify.result import ProblemResult, Verdict, judge


@dataclass(frozen=True, eq=False)
class CountResult:
    """The one result of a count problem (spec.md: `agent` "consumer", `accuracy`
    "minimax" or "bayes", `mechanism_optimum` and `geometric_value`)."""

    agent: str
    accuracy: str
    mechanism_optimum: float | None
    geometric_value: float | None
    hypothesis: str  # "monotone" or "not-monotone": is l(i, r) non-decreasing in |i - r|?
    verdict: Verdict
    seconds: float
    reason: str = ""
    mechanism: np.ndarray | None = None  # an optimal alpha-DP mechanism x*[i, r]
    post_processing: np.ndarray | None = None  # T[k, r]: G T is the candidate mechanism
    extra: dict[str, Any] = field(default_factory=dict)

    rule = None  # count results have no multi-party decision rule

    @property
    def gap(self) -> float | None:
        if self.mechanism_optimum is None or self.geometric_value is None:
            return None
        return self.geometric_value - self.mechanism_optimum

    @property
    def optimum(self) -> float | None:
        """The value `[expect]` entries are compared with: the optimal mechanism's loss."""
        return self.mechanism_optimum

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agent": self.agent, "accuracy": self.accuracy,
            "mechanism_optimum": _num(self.mechanism_optimum),
            "geometric_value": _num(self.geometric_value),
            "gap": _num(self.gap), "verdict": self.verdict.value,
            "hypothesis": self.hypothesis, "seconds": round(self.seconds, 4),
        }
        if self.reason:
            out["reason"] = self.reason
        out.update(self.extra)
        return out


def _num(x: float | None) -> float | None:
    if x is None or not np.isfinite(x):
        return None
    return float(x)


# --------------------------------------------------------------------------------------
# Sizes


def estimate_nonzeros(spec: CountSpec, options: VerifyOptions) -> int:
    """Non-zeros of the largest LP the verifier would build, computed without building."""
    N, s = spec.n + 1, len(spec.side_information)
    mechanism = N * N + (4 * spec.n * N if spec.alpha > 0 else 0)
    if spec.model == "bayes":
        return mechanism
    mechanism += s * (N + 1)
    if options.form == "dense":
        post = N * N + s * (N * N + 1)
    else:
        post = 7 * N * N + s * (3 * N + 1)
    return max(mechanism, post)


def check_size(spec: CountSpec, options: VerifyOptions) -> int:
    """Refuse (SizeLimitError, exit 3) before building anything too large."""
    return check_limit(spec.source, estimate_nonzeros(spec, options), options, f"n = {spec.n}")


# --------------------------------------------------------------------------------------
# The LPs (built as scipy.sparse arrays; variables x[i, r] at column i*(n+1) + r)


class _Rows:
    """Accumulates constraint rows as COO triplets with their bounds."""

    def __init__(self) -> None:
        self.r: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.lo: list[np.ndarray] = []
        self.hi: list[np.ndarray] = []
        self.count = 0

    def add(self, rows, cols, vals, lo, hi, count: int) -> None:
        self.r.append(np.asarray(rows, dtype=np.int64) + self.count)
        self.c.append(np.asarray(cols, dtype=np.int64))
        self.v.append(np.asarray(vals, dtype=np.float64))
        self.lo.append(np.broadcast_to(np.asarray(lo, dtype=np.float64), (count,)))
        self.hi.append(np.broadcast_to(np.asarray(hi, dtype=np.float64), (count,)))
        self.count += count

    def program(self, c: np.ndarray, col_lower, col_upper, name: str) -> LinearProgram:
        ncols = c.shape[0]
        A = sp.coo_matrix((np.concatenate(self.v), (np.concatenate(self.r),
                                                     np.concatenate(self.c))),
                          shape=(self.count, ncols)).tocsc()
        A.eliminate_zeros()
        return LinearProgram(c=c, A=A, row_lower=np.concatenate(self.lo),
                             row_upper=np.concatenate(self.hi),
                             col_lower=np.asarray(col_lower, dtype=np.float64),
                             col_upper=np.asarray(col_upper, dtype=np.float64),
                             maximize=False, name=name)


def _stochastic_rows(rows: _Rows, N: int, offset: int = 0) -> None:
    """sum_r y[i, r] = 1 for every row i of the N x N block starting at column `offset`."""
    idx = np.arange(N * N)
    rows.add(idx // N, offset + idx, np.ones(N * N), 1.0, 1.0, N)


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
    rows = _Rows()
    _stochastic_rows(rows, N)
    if alpha > 0 and N > 1:  # alpha = 0: no privacy constraint at all
        k = np.arange((N - 1) * N)
        upper, lower = k, k + N  # x[i, r] and x[i+1, r]
        both = np.concatenate([k, k])
        rows.add(both, np.concatenate([upper, lower]),
                 np.concatenate([np.ones(k.size), np.full(k.size, -alpha)]), 0.0, np.inf, k.size)
        rows.add(both, np.concatenate([lower, upper]),
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
        rows.add(ri, ci, vi, -np.inf, 0.0, S.size)
        c[t] = 1.0
        col_lower[t] = -np.inf
    else:
        c[:nx] = (np.asarray(prior)[:, None] * loss).ravel()
    return rows.program(c, col_lower, col_upper, "count-mechanism")


def post_processing_lp(loss: np.ndarray, alpha: float, side, form: str = "chain"
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
    rows = _Rows()
    _stochastic_rows(rows, N)
    if form == "dense":
        G = geometric_matrix(float(alpha), N - 1)
        t = nT
        ri = np.repeat(np.arange(S.size), nT + 1)
        ci = np.tile(np.arange(nT + 1), S.size)
        vi = np.concatenate([np.append(np.outer(G[i], loss[i]).ravel(), -1.0) for i in S])
        rows.add(ri, ci, vi, -np.inf, 0.0, S.size)
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
        rows.add(np.concatenate([eq, eq, eq[has]]),
                 np.concatenate([P + cell, cell, P + cell[has] - N]),
                 np.concatenate([np.ones(nT), -w[kk], np.full(has.sum(), -a)]),
                 0.0, 0.0, nT)
        # Q[k,r] - alpha Q[k+1,r] - w[k] T[k,r] = 0 (the alpha term only for k < n)
        has = kk < N - 1
        rows.add(np.concatenate([eq, eq, eq[has]]),
                 np.concatenate([Q + cell, cell, Q + cell[has] + N]),
                 np.concatenate([np.ones(nT), -w[kk], np.full(has.sum(), -a)]),
                 0.0, 0.0, nT)
        # sum_r l(i,r) (P[i,r] + Q[i,r] - w[i] T[i,r]) - t <= 0 for i in S
        ri = np.repeat(np.arange(S.size), 3 * N + 1)
        ci = np.concatenate([np.concatenate([P + i * N + np.arange(N), Q + i * N + np.arange(N),
                                             i * N + np.arange(N), [t]]) for i in S])
        vi = np.concatenate([np.concatenate([loss[i], loss[i], -w[i] * loss[i], [-1.0]])
                             for i in S])
        rows.add(ri, ci, vi, -np.inf, 0.0, S.size)
        ncols = 3 * nT + 1
    c = np.zeros(ncols)
    c[-1] = 1.0
    col_lower = np.zeros(ncols)
    col_lower[nT:] = -np.inf  # P, Q (chain form) and t are free
    return rows.program(c, col_lower, np.full(ncols, np.inf), "count-post-processing")


def clean_stochastic(T: np.ndarray) -> np.ndarray:
    """A solver's T made exactly feasible: negatives clipped, rows renormalised."""
    T = np.clip(T, 0.0, None)
    sums = T.sum(axis=1, keepdims=True)
    return T / np.where(sums > 0, sums, 1.0)


# --------------------------------------------------------------------------------------
# Rigorous brackets around an LP's optimum (the solver works to absolute tolerances of
# about 1e-7, and the optimal mechanism has entries as small as alpha^n, so its reported
# optimum can be off by far more than --tol; the verdict uses these brackets instead)


@dataclass(frozen=True)
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
    d = lp.c - lp.A.T @ y
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


def _t_range(loss: np.ndarray, side) -> tuple[float, float]:
    """At an optimum t is one of the consumer's expected losses: between the extremes."""
    rows = loss[np.asarray(side, dtype=np.int64)]
    return float(rows.min()), float(rows.max())


# --------------------------------------------------------------------------------------
# The verifier


# HiGHS's default feasibility tolerance (1e-7) is coarser than the smallest entries of G
# when alpha^n is small; the count LPs are small, so they are always solved tightly.
FEASIBILITY_TOL = 1e-10


def _solve(lp: LinearProgram, options: VerifyOptions) -> LpSolution:
    return solve(lp, options.backend, time_limit=options.time_limit, threads=options.threads,
                 feasibility_tol=FEASIBILITY_TOL)


def _failure(spec: CountSpec, hypothesis: str, start: float, what: str, sol: LpSolution,
             optimum: float | None = None) -> CountResult:
    return CountResult("consumer", spec.model, optimum, None, hypothesis, Verdict.ERROR,
                       time.perf_counter() - start,
                       reason=f"{what} LP: {sol.status.value} ({sol.message})")


def _note(verdict: Verdict, violation: tuple[int, int] | None, model: str) -> str:
    theorem = ("Gupte-Sundararajan Theorem 1" if model == "minimax"
               else "Ghosh-Roughgarden-Sundararajan")
    if violation is None:
        if verdict is Verdict.GAP:
            return (f"CONTRADICTS {theorem}: the loss is monotone in |i - r|, so the "
                    "geometric mechanism should be optimal; this is a bug or a numerical "
                    "failure, please report it")
        return ""
    i, r = violation
    why = (f"the loss is not monotone in |i - r| (l({i}, {r}) is smaller than its "
           f"neighbour nearer to {i}), so {theorem} does not apply")
    if verdict is Verdict.GAP:
        return f"gap expected: {why}"
    if verdict is Verdict.OPTIMAL:
        return f"{why}; the geometric mechanism is optimal here anyway"
    return ""


def verify_count(spec: CountSpec, options: VerifyOptions) -> ProblemResult:
    """Verify one count problem: one result (the consumer)."""
    header = {"n": spec.n, "alpha": spec.alpha}
    check_size(spec, options)
    result = _verify_consumer(spec, options)
    return ProblemResult(spec.name, spec.source, spec.kind, (result,), header)


def _verify_consumer(spec: CountSpec, options: VerifyOptions) -> CountResult:
    start = time.perf_counter()
    exact_loss = loss_table(spec)
    loss = exact_loss.astype(np.float64)
    side = spec.side_information
    violation = monotonicity_violation(exact_loss, rows=side)
    hypothesis = "monotone" if violation is None else "not-monotone"
    alpha = spec.alpha
    N = spec.n + 1
    G = geometric_matrix(alpha, spec.n)
    minimax = spec.model == "minimax"
    prior = (np.zeros(0) if spec.prior is None
             else np.array([float(p) for p in spec.prior], dtype=np.float64))
    t_range = _t_range(loss, side)

    # 1. The optimal alpha-DP mechanism (an LP), and a bracket [dual bound, loss of the
    #    solution repaired to be exactly feasible] around its true optimum.
    mech_lp = mechanism_lp(loss, alpha, side, None if minimax else prior)
    mech = _solve(mech_lp, options)
    if not mech.optimal:
        return _failure(spec, hypothesis, start, "optimal-mechanism", mech)
    optimum = mech.objective
    mechanism = mech.x[:N * N].reshape(N, N)
    groups = ColumnGroups(((0, N, True),), ((N * N, *t_range),) if minimax else ())
    mech_lower = dual_lower_bound(mech_lp, mech, groups)
    repaired = repaired_mechanism(mechanism, alpha)
    mech_upper = float(minimax_loss(repaired, loss, side) if minimax
                       else bayes_loss(repaired, loss, prior))

    # 2. The candidate: G and the consumer's best post-processing.
    if minimax:
        post_lp = post_processing_lp(loss, alpha, side, options.form)
        post = _solve(post_lp, options)
        if not post.optimal:
            return _failure(spec, hypothesis, start, "post-processing", post, optimum)
        T = clean_stochastic(post.x[:N * N].reshape(N, N))
        # The candidate's value is that of the mechanism G T actually induced, so a
        # solver's rounding cannot make the geometric mechanism look better than it is.
        value = float(minimax_loss(G @ T, loss, side))
        blocks = [(0, N, True)]
        if options.form != "dense":
            blocks += [(N * N, N, False), (2 * N * N, N, False)]  # P and Q rows sum <= 1
        post_groups = ColumnGroups(tuple(blocks), ((post_lp.num_cols - 1, *t_range),))
        value_lower = min(value, dual_lower_bound(post_lp, post, post_groups))
    else:
        remapped, remap = bayes_remap(G, loss, prior)  # GRS: a deterministic remap suffices
        value = value_lower = float(remapped)
        T = np.zeros((N, N))
        T[np.arange(N), remap] = 1.0

    verdict, reason, extra = _decide(value, value_lower, optimum, mech_lower, mech_upper,
                                     options.tol)
    if verdict is Verdict.ERROR and reason.startswith("undecided"):
        reason += f"; alpha^n = {alpha ** spec.n:.3g}"
    note = _note(verdict, violation, spec.model)
    if note:
        extra["note"] = note
    return CountResult("consumer", spec.model, optimum, value, hypothesis, verdict,
                       time.perf_counter() - start, reason=reason, mechanism=mechanism,
                       post_processing=T, extra=extra)


def _decide(value: float, value_lower: float, optimum: float, mech_lower: float,
            mech_upper: float, tol: float) -> tuple[Verdict, str, dict[str, Any]]:
    """The verdict. Losses are minimised, so the candidate's value is the upper one.

    optimal: the candidate agrees with the mechanism LP's optimum within tol (the two
      independent computations, judged as in the multi-party verifier);
    gap: they disagree, and an alpha-DP mechanism (the LP's, repaired to be exactly
      feasible) beats the candidate's proven lower bound by more than tol, so the gap is no
      rounding artefact;
    error: anything else (a numerical failure, or the solutions are not accurate enough
      to tell a gap from rounding). The proven lower bound on every alpha-DP mechanism
      also catches a candidate that is impossibly good.
    """
    if value < mech_lower - max(tol, 1e-12 * (1 + abs(mech_lower))):  # beyond rounding
        return Verdict.ERROR, (
            f"the geometric mechanism's loss {value:.12g} is below the proven lower bound "
            f"{mech_lower:.12g} on every DP mechanism: a numerical failure"), {}
    verdict, _ = judge(value, optimum, tol)
    if verdict is Verdict.OPTIMAL:
        return Verdict.OPTIMAL, "", {}
    if value_lower - mech_upper > tol:
        return Verdict.GAP, "", {}
    if value < optimum - tol:
        return Verdict.ERROR, (
            f"the geometric mechanism's loss is below the optimal-mechanism LP's optimum by "
            f"{optimum - value:.3g}: the LP was solved inaccurately"), {}
    return Verdict.ERROR, (
        f"undecided: the LP solutions are not accurate enough to tell a gap of "
        f"{value - optimum:.3g} from rounding (the optimal mechanism's loss lies in "
        f"[{mech_lower:.12g}, {mech_upper:.12g}], the geometric mechanism's in "
        f"[{value_lower:.12g}, {value:.12g}])"), {"mechanism_bounds": [mech_lower, mech_upper]}
