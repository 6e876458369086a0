"""RR's worst-case decision LP on all 2^k inputs by a dense interior-point method in the
space of priors (docs/theory.md, "The worst case without symmetry").

The worst case of randomized response (KOV 2015, eq. 6 for the observer; eq. 4 for one own
bit of a party) is the LP  max_Q min_x acc_Q(x),  acc_Q(x) = sum_{tau,y} P[x,tau] w(x,y)
Q[tau,y]. Its dual is a minimum over priors pi on the inputs:

    F(pi) = sum_tau max_y z[tau, y],   z[tau, y] = sum_x pi[x] P[x, tau] w(x, y),

so every prior gives an upper bound F(pi) and every rule Q a lower bound min_x acc_Q(x).
P = S_1 (x) ... (x) S_k is dense (every entry is positive), so the LP has 2^k * 2^k * |Y|
non-zeros (5e7 at k = 12) and a sparse simplex or interior-point code spends minutes on
it. Here the LP is solved as

    min_{pi, v} sum_tau v_tau   s.t.  v_tau >= z[tau, y]  (multiplier Q[tau, y]),
                                      pi >= 0 (multiplier r = acc_Q - t),  sum pi = 1 (t),

by Mehrotra's predictor-corrector method (Nocedal and Wright, Numerical Optimization,
2nd ed., Algorithm 14.3). Eliminating v leaves one dense, symmetric positive definite
system in pi per iteration,

    M = sum_tau P[:, tau] P[:, tau]^T (x) w K_tau w^T + diag(r / pi),
    K_tau = diag(d_tau) - d_tau d_tau^T / sum(d_tau),   d = Q / s,

which only depends on x through its function value: the inputs are grouped by their gain
row, and M is built block by block from BLAS products of P's rows (about |x|^2 2^k / 2
multiply-adds) and factored by Cholesky. Terms of output columns whose K is negligible are
left out of M (only the search direction changes; every residual is recomputed exactly).

Only floats here: the caller turns the best (pi, Q) pair into exact rationals and checks
the bracket [min_x acc_Q, F(pi)] in exact arithmetic (theory.certificates.worst). The LP
is described once, in theory/worst_lp.py: `dense_worst` takes its `over_inputs` form.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.linalg.blas import dgemm, dsyrk, sgemm, ssyrk
from threadpoolctl import threadpool_limits

from dpverify import clock
from dpverify.errors import SizeLimitError, SolverError
from dpverify.theory.exact_rows import clean_distribution, clean_stochastic
from dpverify.theory.rr import kron_apply, rr_channel, rr_matrix
from dpverify.theory.worst_channels import KronChannel
from dpverify.theory.worst_lp import WorstLp

# The dense method keeps P (rows x columns) and M (rows x rows) in memory and does about
# rows^2 * columns multiply-adds per iteration: 2^12 inputs is its design point.
MAX_DENSE_INPUTS = 4096
MAX_ITERATIONS = 40
TARGET_WIDTH = 1e-11  # stop once the float bracket is this narrow (gains in [0, 1])
DROP = 1e-8  # an output column whose K is below DROP * max is left out of M
# While the bracket is wider than this, M is built and factored in single precision (twice
# as fast; the direction is only a direction: every residual is recomputed exactly).
SINGLE_WIDTH = 1e-4
STEP = 0.995
# Everything but M and its factor is computed in extended precision (80-bit on x86-64;
# where long double is double, the method still works, with a wider final bracket): near
# the end d = q / s reaches 1e20 and the directions' rounding errors, multiplied by d, were
# the whole bracket in double precision (measured at k = 12: 1.2e-9 in double, 4.3e-10 in
# long double).
WORK = np.longdouble
# Stop once mu is this small and the bracket has not narrowed by 1% in STALL iterations.
STALL_MU = 1e-14
# The corrector's centring target never goes below this: further on, the directions'
# rounding noise (multiplied by d ~ 1/mu) grew faster than the bracket narrowed (measured
# at k = 12: a bracket of 1.5e-12 with the floor, 4.3e-10 without).
MU_FLOOR = 1e-16
STALL = 2


@dataclass(frozen=True)
class DenseWorst:
    """The best prior and the best rule found (each a bound of its own, so they may come
    from different iterations): a prior on the relevant inputs and a rule on all tau, with
    the float bracket they give and the iterations used."""

    prior: np.ndarray
    rule: np.ndarray
    lower: float
    upper: float
    iterations: int

    @property
    def width(self) -> float:
        return self.upper - self.lower


class _Problem:
    """The relevant inputs grouped by their gain row (the blocks of M), P's rows for them
    (dense, for M), and the Kronecker factors (for the products with P: O(k 2^k |Y|))."""

    def __init__(self, lambdas: Sequence[float], W: np.ndarray, rows: np.ndarray, n: int):
        distinct, classes = np.unique(W, axis=0, return_inverse=True)
        order = np.argsort(classes.ravel(), kind="stable")
        self.rows = rows[order]  # input index of each row
        self.W = np.ascontiguousarray(W[order], dtype=WORK)
        self.w = distinct  # (classes, m)
        bounds = np.searchsorted(classes.ravel()[order], np.arange(distinct.shape[0] + 1))
        self.blocks = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:],
                                                              strict=True)]
        self.factors = [rr_channel(float(lam)).astype(WORK) for lam in lambdas]
        self.n, self.m = n, W.shape[1]
        self.R = self.rows.size
        self.P = np.ascontiguousarray(rr_matrix(lambdas)[self.rows])

    def z(self, pi: np.ndarray) -> np.ndarray:
        """z[tau, y] = sum_x pi[x] P[x, tau] w(x, y)."""
        full = np.zeros((self.n, self.m), dtype=WORK)
        full[self.rows] = pi[:, None] * self.W
        return kron_apply([f.T for f in self.factors], full, WORK)

    def acc(self, q: np.ndarray) -> np.ndarray:
        """acc_Q(x) = sum_y w(x, y) (P Q)[x, y]."""
        return np.einsum("xy,xy->x", self.W, kron_apply(self.factors, q, WORK)[self.rows])

    def bracket(self, pi: np.ndarray, q: np.ndarray) -> tuple[float, float, np.ndarray,
                                                               np.ndarray]:
        """The float bracket of the pair made feasible (pi clipped and normalised, each row
        of Q clipped and normalised)."""
        p, rule = clean_distribution(pi), clean_stochastic(q)
        return float(self.acc(rule).min()), float(self.z(p).max(axis=1).sum()), p, rule

    def normal_matrix(self, d: np.ndarray, diag: np.ndarray, single: bool) -> np.ndarray:
        """M's upper triangle (see the module docstring), in single precision if asked."""
        dtype = np.float32 if single else np.float64
        d, diag = np.asarray(d, dtype=np.float64), np.asarray(diag, dtype=np.float64)
        syrk, gemm = (ssyrk, sgemm) if single else (dsyrk, dgemm)
        e = d.sum(axis=1)
        wd = self.w @ d.T  # (classes, n): sum_y w(a, y) d[tau, y]
        kn = np.abs(d - d * d / e[:, None]).max(axis=1)
        keep = np.flatnonzero(kn > DROP * kn.max()) if kn.max() > 0 else np.arange(self.n)
        M = np.zeros((self.R, self.R), dtype=dtype, order="F")
        rows = [np.asarray(self.P[ba][:, keep], dtype=dtype) for ba in self.blocks]
        for a, ba in enumerate(self.blocks):
            L = (self.w[a] * self.w[a]) @ d[keep].T - wd[a, keep] ** 2 / e[keep]
            M[ba, ba] = syrk(1.0, rows[a] * np.sqrt(np.clip(L, 0.0, None)).astype(dtype),
                             lower=0)
            for b in range(a + 1, len(self.blocks)):
                L = (self.w[a] * self.w[b]) @ d[keep].T - wd[a, keep] * wd[b, keep] / e[keep]
                M[ba, self.blocks[b]] = gemm(1.0, rows[a] * L.astype(dtype), rows[b],
                                             trans_b=1)
        M[np.diag_indices(self.R)] += diag.astype(dtype)
        return M


# Seconds a Cholesky of 4096 x 4096 may take on all BLAS threads (scaled by size^3) before
# the run falls back to one thread: measured on 2 cores, OpenBLAS's threaded Cholesky takes
# 0.5 s on an idle machine, 0.85 s on one thread, and 8-10 s when another process holds
# the other core.
SLOW_FACTOR = 1.2


def _factor(M: np.ndarray, st: _State):
    """Cholesky of M (upper triangle), with a growing ridge when rounding breaks it, on
    `st.blas_threads` BLAS threads (every core until one factor is slow, then one)."""
    top = float(np.max(np.abs(np.diag(M))))
    ridge = 0.0
    for _ in range(8):
        try:
            if ridge:
                M[np.diag_indices(M.shape[0])] += ridge
            start = time.perf_counter()
            with threadpool_limits(limits=st.blas_threads, user_api="blas"):
                cf = sla.cho_factor(M, lower=False, check_finite=False)
            if time.perf_counter() - start > SLOW_FACTOR * (M.shape[0] / 4096) ** 3:
                st.blas_threads = 1
            return cf
        except np.linalg.LinAlgError:
            ridge = max(ridge * 100, 10 * float(np.finfo(M.dtype).eps) * top)
    raise SolverError("the dense worst-case interior-point system is singular")


REFINE = 12  # at most this many refinement steps against the exact operator
REFINE_SINGLE = 2  # with the single-precision factor (early on, a rough direction will do)


def _solve(cf, rhs: np.ndarray, apply_m) -> np.ndarray:
    """M^-1 rhs: the factor's solve (single or double precision, and built without the
    dropped columns), then iterative refinement against the exact operator `apply_m` in
    extended precision (Golub and Van Loan, Matrix Computations, 4th ed., 3.5.3), kept only
    while it reduces the residual."""
    def raw(b):
        return np.asarray(sla.cho_solve(cf, b.astype(cf[0].dtype), check_finite=False),
                          dtype=WORK)

    x = raw(rhs)
    res = rhs - apply_m(x)
    norm = float(np.abs(res).max())
    for _ in range(REFINE if cf[0].dtype == np.float64 else REFINE_SINGLE):
        candidate = x + raw(res)
        new_res = rhs - apply_m(candidate)
        new_norm = float(np.abs(new_res).max())
        if not new_norm < norm:
            break
        x, res, norm = candidate, new_res, new_norm
    return x


def _max_step(x: np.ndarray, dx: np.ndarray) -> float:
    neg = dx < 0
    return min(1.0, float(np.min(-x[neg] / dx[neg]))) if np.any(neg) else 1.0


class _State:
    def __init__(self, prob: _Problem):
        R, n, m = prob.R, prob.n, prob.m
        self.pi = np.full(R, 1.0 / R, dtype=WORK)
        z = prob.z(self.pi)
        self.v = z.max(axis=1) + 1.0 / n
        self.s = self.v[:, None] - z
        self.q = np.full((n, m), 1.0 / m, dtype=WORK)
        self.r = np.full(R, 1.0 / R, dtype=WORK)
        self.t = 0.0
        self.blas_threads: int | None = None  # None: the BLAS default (every core)

    def mu(self) -> float:
        return float(((self.s * self.q).sum() + self.pi @ self.r) / (self.q.size
                                                                     + self.pi.size))


def _operator(prob: _Problem, st: _State, d: np.ndarray, e: np.ndarray):
    """v -> M v exactly (no column dropped), by products with P: O(rows x 2^k x |Y|)."""
    diag = st.r / st.pi

    def apply_m(v: np.ndarray) -> np.ndarray:
        zv = prob.z(v)
        bv = (d * zv).sum(axis=1) / e
        return prob.acc(d * (zv - bv[:, None])) + diag * v

    return apply_m


def _direction(prob: _Problem, st: _State, res, cf, ones_sol, c_s, c_r):
    """The Newton direction for complementarity targets c_s (s*q) and c_r (pi*r)."""
    r_s, r_v, r_pi, r_eq, d, e, apply_m = res
    g = (c_s - st.q * r_s) / st.s
    base_dv = (g.sum(axis=1) - r_v) / e
    rhs = -r_pi - prob.acc(g) + c_r / st.pi + prob.acc(d * base_dv[:, None])
    sol = _solve(cf, rhs, apply_m)
    dt = (r_eq - sol.sum()) / ones_sol.sum()
    dpi = sol + dt * ones_sol
    zd = prob.z(dpi)
    dv = (d * zd).sum(axis=1) / e + base_dv
    dq = d * (zd - dv[:, None]) + g
    # sum_y dq[tau, y] = r_v[tau] holds in exact arithmetic; in floats, with d = q / s up
    # to 1e20 near the end, the cancellation leaves errors that pile up in Q's row sums
    # (measured: 5e-9 at k = 12, the whole bracket). Put the row-sum residual back where
    # the step may move mass (in proportion to d).
    dq += (r_v - dq.sum(axis=1))[:, None] * (d / e[:, None])
    ds = dv[:, None] - zd + r_s
    dr = (c_r - st.r * dpi) / st.pi
    return dpi, dv, dq, ds, dr, dt


def _iterate(prob: _Problem, st: _State, single: bool) -> None:
    """One predictor-corrector step."""
    z = prob.z(st.pi)
    r_s = st.v[:, None] - z - st.s
    r_v = 1.0 - st.q.sum(axis=1)
    r_pi = prob.acc(st.q) - st.r - st.t
    r_eq = 1.0 - st.pi.sum()
    count = st.q.size + st.pi.size
    mu = ((st.s * st.q).sum() + st.pi @ st.r) / count
    d = st.q / st.s
    e = d.sum(axis=1)
    cf = _factor(prob.normal_matrix(d, st.r / st.pi, single), st)
    apply_m = _operator(prob, st, d, e)
    ones_sol = _solve(cf, np.ones(prob.R), apply_m)
    res = (r_s, r_v, r_pi, r_eq, d, e, apply_m)
    dpi, _, dq, ds, dr, _ = _direction(prob, st, res, cf, ones_sol, -st.s * st.q,
                                       -st.pi * st.r)
    ap = min(_max_step(st.pi, dpi), _max_step(st.s, ds))
    ad = min(_max_step(st.q, dq), _max_step(st.r, dr))
    mu_aff = (((st.s + ap * ds) * (st.q + ad * dq)).sum()
              + (st.pi + ap * dpi) @ (st.r + ad * dr)) / count
    sigma = min(1.0, (mu_aff / mu) ** 3) if mu > 0 else 0.0
    target = max(sigma * mu, MU_FLOOR)
    dpi, dv, dq, ds, dr, dt = _direction(prob, st, res, cf, ones_sol,
                                         target - st.s * st.q - ds * dq,
                                         target - st.pi * st.r - dpi * dr)
    ap = STEP * min(_max_step(st.pi, dpi), _max_step(st.s, ds))
    ad = STEP * min(_max_step(st.q, dq), _max_step(st.r, dr))
    st.pi, st.v, st.s = st.pi + ap * dpi, st.v + ap * dv, st.s + ap * ds
    st.q, st.r, st.t = st.q + ad * dq, st.r + ad * dr, st.t + ad * dt
    # keep the iterates strictly inside (rounding can touch the boundary)
    tiny = np.finfo(WORK).tiny
    for name in ("pi", "s", "q", "r"):
        setattr(st, name, np.maximum(getattr(st, name), tiny))


def dense_worst(lp: WorstLp, target: float = TARGET_WIDTH) -> DenseWorst:
    """RR's worst-case LP on all inputs (theory/worst_lp.py, `over_inputs`: the rows of one
    block, gains in [0, 1]): the best pair found, a prior on the block's inputs (in input
    order) and a rule on all tau, with its float bracket. SizeLimitError beyond
    MAX_DENSE_INPUTS inputs."""
    if not isinstance(lp.channel, KronChannel):
        raise ValueError("the dense method needs RR on all inputs (WorstLp.over_inputs)")
    lambdas = lp.channel.lambdas
    n, rows, W = lp.channel.columns, lp.rows, lp.gain
    if n > MAX_DENSE_INPUTS:
        raise SizeLimitError(f"the dense worst-case method takes at most {MAX_DENSE_INPUTS} "
                             f"inputs; this problem has {n}")
    prob = _Problem(lambdas, W, rows, n)
    R = prob.R
    inverse = np.empty(R, dtype=int)
    inverse[np.searchsorted(rows, prob.rows)] = np.arange(R)
    if float(W.max() - W.min()) == 0.0:  # every rule and every prior are optimal
        lo, hi, p, q = prob.bracket(np.ones(R), np.ones((n, W.shape[1])))
        return DenseWorst(np.asarray(p[inverse], dtype=np.float64),
                          np.asarray(q, dtype=np.float64), lo, hi, 0)
    st = _State(prob)
    lower, upper = -np.inf, np.inf
    prior: np.ndarray | None = None
    rule: np.ndarray | None = None
    iterations = stalled = 0
    while iterations < MAX_ITERATIONS:
        clock.check()  # the run's deadline, once per iteration
        iterations += 1
        try:
            _iterate(prob, st, single=upper - lower > SINGLE_WIDTH)
        except SolverError:
            if prior is not None:
                break
            raise
        lo, hi, p, q = prob.bracket(st.pi, st.q)
        before = upper - lower
        # a rule's worst case is a lower bound and a prior's F an upper bound, whatever
        # the other: keep the best of each
        if lo > lower:
            lower, rule = lo, np.asarray(q, dtype=np.float64)
        if hi < upper:
            upper, prior = hi, np.asarray(p[inverse], dtype=np.float64)
        stalled = stalled + 1 if upper - lower > 0.99 * before else 0
        mu = st.mu()
        if upper - lower <= target or (mu < STALL_MU and stalled >= STALL):
            break
    assert prior is not None and rule is not None
    return DenseWorst(prior, rule, lower, upper, iterations)


__all__ = ["MAX_DENSE_INPUTS", "DenseWorst", "dense_worst"]
