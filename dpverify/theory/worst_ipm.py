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
from collections.abc import Callable, Sequence

import numpy as np

from dpverify import clock
from dpverify.errors import SizeLimitError, SolverError
from dpverify.policy import MAX_DENSE_INPUTS
from dpverify.records import record
from dpverify.theory.exact_rows import clean_distribution, clean_stochastic
from dpverify.theory.rr import kron_apply
from dpverify.theory.worst_channels import ClassChannel, KronChannel
from dpverify.theory.worst_lp import Solve, WorstLp
from dpverify.theory.worst_polish import FINER_TIES, TIE, polish_prior, polish_rule, rule_lp

# MAX_DENSE_INPUTS (dpverify/policy.py): 2^12 inputs, the dense method's design point
MAX_DENSE_WORK = 4096 ** 3  # multiply-adds of one iteration's M (rows^2 x columns)
MAX_ITERATIONS = 60
TARGET_WIDTH = 1e-11  # stop once the float bracket is this narrow (gains in [0, 1])
DROP = 1e-8  # an output column whose K is below DROP * max is left out of M
# While the bracket is wider than this, M is built and factored in single precision (twice
# as fast; the direction is only a direction: every residual is recomputed exactly).
SINGLE_WIDTH = 1e-4
# ... and only from this many rows: below, double precision costs little, and single
# precision once left a block stuck at a bracket of 8e-5 for 15 iterations (a party at 39
# parties, on 211 active orbits)
SINGLE_ROWS = 1024
STEP = 0.995
# Everything but M and its factor is computed in extended precision (80-bit on x86-64;
# where long double is double, the method still works, with a wider final bracket): near
# the end d = q / s reaches 1e20 and the directions' rounding errors, multiplied by d, were
# the whole bracket in double precision (measured at k = 12: 1.2e-9 in double, 4.3e-10 in
# long double).
WORK = np.longdouble
# ... but only once mu is below this (or, forecast from its last ratio, will be after the
# next iteration: precise_from), or once the end game stalls in float64 (where it would
# end, it goes on in long double: _ended): until then the products with P's factors (most
# of an iteration's time on orbits: 3.7 ms a product in long double, 0.05 ms in float64,
# at 1,260 orbits in classes of 13, 8 and 9 and 31 outputs; 8.6 and 0.37 ms at 1,728
# orbits and 41 outputs) are made in float64, and only their results are extended. The
# end game decides: an observer's `sum` at 40 parties in classes of 35 and 5 (216 orbits,
# 41 outputs) reached 8e-12 in 35 iterations in float64 (0.8 s), and 2.3e-14 in 42 with
# long double from a bracket of 1e-6 on (3.0 s), its middle iterations 0.15 s each
# against 0.025 s (at k = 12, double precision throughout, not only in the products,
# stalled at 1.2e-9 where long double reached 4.3e-10).
PRECISE_MU = 1e-14
# Stop once mu is this small and the bracket has not narrowed by 1% in STALL iterations.
STALL_MU = 1e-14
# The corrector's centring target never goes below this: further on, the directions'
# rounding noise (multiplied by d ~ 1/mu) grew faster than the bracket narrowed (measured
# at k = 12: a bracket of 1.5e-12 with the floor, 4.3e-10 without).
MU_FLOOR = 1e-16
STALL = 2
# ... and at any mu once it has not narrowed by 1% in this many iterations: the method is
# stuck (measured: 9 parties with epsilons up to 29, a bracket of 1e-5 for 40 iterations),
# and the polish or the caller's fallback take over
STUCK = 8


@record
class DenseWorst:
    """The best prior and the best rule found (each a bound of its own, so they may come
    from different iterations): a prior on the block's rows and a rule on its columns (all
    tau, or a party's block's: theory/worst_lp.py block_on_inputs), with the float bracket
    they give and the iterations used."""

    prior: np.ndarray
    rule: np.ndarray
    lower: float
    upper: float
    iterations: int

    @property
    def width(self) -> float:
        return self.upper - self.lower


class _Problem:
    """The relevant rows grouped by their gain row (the blocks of M), P's rows for them
    (dense, for M), and P's Kronecker factors (for the products with P: O(k 2^k |Y|) on
    all inputs, O(orbits sum_c (n_c + 1) |Y|) on the classes' orbits)."""

    def __init__(self, factors: Sequence[np.ndarray], dense: np.ndarray, W: np.ndarray,
                 rows: np.ndarray, n: int):
        distinct, classes = np.unique(W, axis=0, return_inverse=True)
        order = np.argsort(classes.ravel(), kind="stable")
        self.rows = rows[order]  # input index of each row
        self.W = np.ascontiguousarray(W[order], dtype=WORK)
        self.w = distinct  # (classes, m)
        bounds = np.searchsorted(classes.ravel()[order], np.arange(distinct.shape[0] + 1))
        self.blocks = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:],
                                                              strict=True)]
        self.factors = [np.asarray(f, dtype=WORK) for f in factors]
        # the products' float64 twins, for the iterations before the end game (`precise`
        # False): BLAS instead of long double's loops
        self.W64 = np.asarray(self.W, dtype=np.float64)
        self.factors64 = [np.asarray(f, dtype=np.float64) for f in factors]
        self.precise = True  # _dense_block sets it per iteration (precise_from, _ended)
        self.n, self.m = n, W.shape[1]
        self.R = self.rows.size
        self.P = np.ascontiguousarray(dense[order])

    def precise_from(self, mu: float, before: float = np.inf) -> bool:
        """Whether the next iteration makes its products in long double: once mu, or the
        mu the next iteration is headed for (mu times its last ratio mu / `before`, the mu
        of the iteration before), is below PRECISE_MU (or once `_ended` set `precise`
        where float64 stalled), and from then on. The forecast: mu fell from 8.5e-14 to
        5.2e-16 in one iteration of a block, whose end game from there, after its switch
        at mu alone, stalled at a bracket of 7e-11 (1e-12 when it switched one iteration
        sooner)."""
        ahead = mu * min(1.0, mu / before) if 0 < before < np.inf else mu
        return self.precise or mu < PRECISE_MU or ahead < PRECISE_MU

    def _arithmetic(self) -> tuple[list[np.ndarray], np.ndarray, type]:
        """P's factors, the gain rows and the dtype of the products: long double where
        `precise`, else their float64 twins."""
        if self.precise:
            return self.factors, self.W, WORK
        return self.factors64, self.W64, np.float64

    def z(self, pi: np.ndarray) -> np.ndarray:
        """z[tau, y] = sum_x pi[x] P[x, tau] w(x, y), in the precision of `_arithmetic`,
        returned in long double."""
        factors, W, dtype = self._arithmetic()
        full: np.ndarray = np.zeros((self.n, self.m), dtype=dtype)
        full[self.rows] = np.asarray(pi, dtype=dtype)[:, None] * W
        return np.asarray(kron_apply([f.T for f in factors], full, dtype), dtype=WORK)

    def acc(self, q: np.ndarray) -> np.ndarray:
        """acc_Q(x) = sum_y w(x, y) (P Q)[x, y], in the precision of `z`."""
        factors, W, dtype = self._arithmetic()
        products = kron_apply(factors, np.asarray(q, dtype=dtype), dtype)
        return np.asarray(np.einsum("xy,xy->x", W, products[self.rows]), dtype=WORK)

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
        from scipy.linalg.blas import dgemm, dsyrk, sgemm, ssyrk  # lazy: scipy is heavy

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
    import scipy.linalg  # lazy: scipy and threadpoolctl are heavy to import
    from threadpoolctl import threadpool_limits

    top = float(np.max(np.abs(np.diag(M))))
    ridge = 0.0
    for _ in range(8):
        try:
            if ridge:
                M[np.diag_indices(M.shape[0])] += ridge
            start = time.perf_counter()
            with threadpool_limits(limits=st.blas_threads, user_api="blas"):
                cf = scipy.linalg.cho_factor(M, lower=False, check_finite=False)
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
    import scipy.linalg  # lazy: scipy is heavy to import

    def raw(b):
        return np.asarray(scipy.linalg.cho_solve(cf, b.astype(cf[0].dtype),
                                                 check_finite=False),
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


def dense_work(lp: WorstLp) -> int:
    """Multiply-adds of one iteration (M from P's rows: rows^2 x columns) for the size
    guard of dense_worst."""
    return int(lp.rows.size) ** 2 * int(lp.channel.columns)


# Below this many rows the method runs on one BLAS thread first: its matrices are small,
# and OpenBLAS's threads cost more than they save (measured on 2 cores under load: a
# party's threshold at 30 parties, two blocks of 630 orbits, 12.3 s on two threads, 3.7 s
# on one). Where that run's bracket stays wider than RETRY_WIDTH it runs again on every
# thread, and the better end of each is kept (any prior and any rule are bounds): the end
# game of the method depends on the order of BLAS's sums (measured: parity at 19 parties
# ended 2e-10 above its optimum on one thread, within 1e-13 on two; a party's `sum` at
# 40 parties, 390 orbits and 41 outputs, within 2e-12 on one thread and 5e-8 on two).
THREADED_ROWS = 2048
RETRY_WIDTH = 1e-10


def dense_worst(lp: WorstLp, target: float = TARGET_WIDTH, solve: Solve | None = None,
                enough: float | None = None, seed: np.ndarray | None = None) -> DenseWorst:
    """RR's worst-case LP of one block (theory/worst_lp.py: `over_inputs`, the inputs, or
    `over_class_orbits`, the classes' orbits; gains in [0, 1]): the best pair found, a prior
    on the block's rows (in their order) and a rule on every column, with its float
    bracket. Beyond ACTIVE_FROM rows, on a growing set of active rows (`_by_rows`). When
    the bracket is wider than `target` the pair is polished (theory/worst_polish.py;
    `solve`, a float LP solver, takes the null-space LPs there). SizeLimitError beyond
    MAX_DENSE_INPUTS inputs, or when the active rows' work passes MAX_DENSE_WORK. A bracket
    within `enough` (the caller's need: an orbit certificate's share of --tol) ends the row
    generation and is not run again on every BLAS thread; RETRY_WIDTH by default. `seed`:
    rows (positions) that join the row generation's first round (a similar LP's support)."""
    if not isinstance(lp.channel, KronChannel | ClassChannel):
        raise ValueError("the dense method needs RR as a Kronecker product (over_inputs or "
                         "over_class_orbits)")
    n = lp.channel.columns
    if isinstance(lp.channel, KronChannel) and n > MAX_DENSE_INPUTS:
        raise SizeLimitError(f"the dense worst-case method takes at most {MAX_DENSE_INPUTS} "
                             f"inputs; this problem has {n}")
    from threadpoolctl import threadpool_limits  # lazy: heavy to import

    if _on_active_rows(lp):
        _load_blas()
        return _by_rows(lp, target, solve, enough, seed)  # its blocks choose their threads
    need = RETRY_WIDTH if enough is None else enough
    if _first_threads(lp.rows.size) is None:
        return _dense_block(lp, target, solve, need=need)
    _load_blas()
    with threadpool_limits(limits=1, user_api="blas"):
        found = _dense_block(lp, target, solve, need=need)
    if found.width <= need:
        return found
    # on every BLAS thread: another path of rounding
    return _best_of(found, _dense_block(lp, target, solve, need=need))



def dense_again(lp: WorstLp, target: float = TARGET_WIDTH, solve: Solve | None = None
                ) -> DenseWorst | None:
    """The second run of `dense_worst` alone, on every BLAS thread, for a caller that ran
    the first with `enough=float("inf")` and tried other hints in between (hints.py); None
    where the first run was on every thread already (THREADED_ROWS, or orbits on active
    rows), so that a second would repeat it."""
    if _first_threads(lp.rows.size) is None or _on_active_rows(lp):
        return None
    return _dense_block(lp, target, solve)


def _on_active_rows(lp: WorstLp) -> bool:
    """Whether dense_worst solves the block by row generation (`_by_rows`): the classes'
    orbits beyond ACTIVE_FROM rows, gains not all equal."""
    return (isinstance(lp.channel, ClassChannel) and lp.rows.size > ACTIVE_FROM
            and float(lp.gain.max() - lp.gain.min()) > 0 and _rows_dominate(lp))


def _rows_dominate(lp: WorstLp) -> bool:
    """Whether the rows' share of an iteration's cost (M: rows^2 x columns, in BLAS) is at
    least ACTIVE_GAIN times the share that does not shrink with the rows (the products
    with P's factors on every column and output, in extended precision near the end:
    columns x outputs x the factors' sizes, LONG_COST times dearer a multiply-add), so
    that a round on a few rows is several times cheaper than one on the whole block; or
    whether the whole block is past MAX_DENSE_WORK, which active rows may stay within."""
    assert lp.channel.factors is not None
    sizes = sum(int(np.shape(f)[0]) for f in lp.channel.factors)
    return (int(lp.rows.size) ** 2 >= ACTIVE_GAIN * LONG_COST * lp.m * sizes
            or dense_work(lp) > MAX_DENSE_WORK)


def _best_of(a: DenseWorst, b: DenseWorst) -> DenseWorst:
    """The better rule (larger lower end) and the better prior (smaller upper end) of two
    runs."""
    low = a if a.lower >= b.lower else b
    high = a if a.upper <= b.upper else b
    return DenseWorst(high.prior, low.rule, low.lower, high.upper,
                      a.iterations + b.iterations)


# Beyond this many rows an orbit LP is solved on active rows: a minimax prior's support is
# usually far smaller than the block there (measured: 30 of 750 orbits for majority in
# four classes), and one iteration costs (rows)^2 x columns. Not on all inputs: a random
# table's prior at k = 12 has 2,508 of 4,096 inputs in its support, and the active rows
# grew to 3,971 in ten rounds (170 s, against 40 s dense).
# (700, not 400: blocks of 405 to 630 orbits took 1.5-3.6 CPU seconds at once and 2-20 s
# on active rows, whose first rounds of 96 and 192 rows stalled at 60 iterations: `sum`
# at 40 parties in classes of 14 and 26 with 41 outputs, 19.6 s -> 3.7 s, CPU)
ACTIVE_FROM = 700
# ... and only where a round on a few rows is far cheaper than one on all of them
# (`_rows_dominate`). An iteration costs about A + B rows^2, A for the products with P's
# factors on every column (columns x outputs x sum of the factors' sizes multiply-adds in
# long double, about 38 of them an iteration) and B for M (columns multiply-adds a row
# pair, in BLAS); measured: a party's `sum` at 40 parties in classes of 23, 15 and 2, 1,104
# orbits and 41 outputs, 0.26 s an iteration on 96 rows and 0.62 s on all, so that a
# long-double multiply-add of A costs LONG_COST times one of B; its four rounds on 96-491
# rows took 42 s before the last on all 1,104 (34 s), where a round on 96 rows of majority
# (2 outputs) is hundreds of times cheaper than one on 750. ACTIVE_GAIN: blocks solved at
# once were faster at ratios rows^2 / (outputs x sizes) of 626 to 1,552 (paired plain runs:
# 14.3 -> 13.2 s, 87.9 -> 36.5 s, 39.9 -> 26.0 s, 29.9 -> 18.4 s), rounds at 7,600 and more
# (two outputs: 1.4-5x faster); 6 x LONG_COST = 3,000 lies between
LONG_COST = 500
# (measured when every iteration made its products in long double; since PRECISE_MU the
# iterations before the end game make them in float64, the end game in long double:
# LONG_COST = 50, which sent more blocks to active rows, was 30-50% slower on three `sum`
# members of 1,092-1,260 orbits)
ACTIVE_GAIN = 6
ACTIVE_START = 96  # the rows of least accuracy under the uniform prior's Bayes rule
ACTIVE_ROUNDS = 12
# Once the active rows pass this fraction of the block, the next round takes them all: a
# support that large is closed one round sooner, where growing it cost up to four more
# interior-point runs (measured: `sum` in three classes of 8, 10 and 4 parties, 495 orbits,
# whose prior's support is 477 of them: 27 s in seven rounds, 7 s in three)
ACTIVE_ALL = 0.6
# When fewer than ACTIVE_START rows are violated, the rows the rule leaves within this of
# the prior's bound (gains in [0, 1]) join with them: the next round's rule, fitted to
# more rows, pushes its neighbours below the bound (measured: a threshold at 30 parties in
# four classes, 3,920 orbits, a support of about 1,000 rows: eight rounds, the last four
# adding 208, 37, 6 and 1 rows). Not when many are violated: the near rows then pushed a
# party's `sum` at 40 parties (1,104 rows) from 608 active rows to all of them, 85 -> 103 s
ACTIVE_NEAR = 1e-2
# A round whose bracket is within this, and whose rule already leaves a row outside the
# round more than the bracket's width below the round's own worst row, ends there: that
# row joins whatever the round's end game finds, and the end game (the last half of the
# iterations, where the steps are short) would be spent on an LP that is not the last
ROUND_WIDTH = 1e-3


def _by_rows(lp: WorstLp, target: float, solve: Solve | None, enough: float | None,
             seed: np.ndarray | None = None) -> DenseWorst:
    """Row generation (the dual's support generation): the LP on the active rows gives a
    prior that is a prior of the whole block (an upper bound as it stands) and a rule on
    every column, whose worst case over all rows is the lower bound; rows the rule leaves
    more than `target` below the prior's bound join, the most violated first, until none
    does, or until the bracket is within `enough` (if given); the rows of `seed` join the
    first round. A bracket still wider than `enough` (RETRY_WIDTH if not given), where the
    last round ran on one BLAS thread, has that round once more on every thread (measured:
    an observer's `sum` at 30 parties in three classes, 1,260 orbits, whose last round of
    1,260 rows ended 2.6e-10 wide against a need of 2.5e-10: 36 to 112 s on two threads
    for a bracket no narrower)."""
    assert lp.channel.factors is not None
    factors = [np.asarray(f, dtype=WORK) for f in lp.channel.factors]
    G = np.asarray(lp.gain, dtype=WORK)
    n, R = lp.channel.columns, lp.rows.size

    def accuracies(rule: np.ndarray) -> np.ndarray:
        return (kron_apply(factors, np.asarray(rule, dtype=WORK), WORK)[lp.rows] * G).sum(1)

    full = np.zeros((n, G.shape[1]), dtype=WORK)
    full[lp.rows] = G / R
    z = kron_apply([f.T for f in factors], full, WORK)
    bayes = np.zeros((n, G.shape[1]))
    bayes[np.arange(n), np.argmax(z, axis=1)] = 1.0
    active = np.sort(np.argsort(accuracies(bayes), kind="stable")[:ACTIVE_START])
    if seed is not None:
        active = np.union1d(active, np.asarray(seed, dtype=int))
    lower, upper = -np.inf, np.inf
    prior = rule = None
    iterations = 0
    from threadpoolctl import threadpool_limits  # lazy: heavy to import

    stop = target if enough is None else max(target, enough)
    retry = RETRY_WIDTH if enough is None else enough
    solved = active
    for _ in range(ACTIVE_ROUNDS):
        block = lp.restricted(active)
        others = np.setdiff1d(np.arange(R), active)

        def until(lo: float, hi: float, now: np.ndarray, others=others) -> bool:
            if hi - lo > ROUND_WIDTH or others.size == 0:
                return False
            return float(accuracies(now)[others].min()) < lo - max(hi - lo, target)

        # rows of one gain row (level set) are worth its best gain whatever the rule: such
        # a round is not polished (measured: a threshold at 40 parties in four classes,
        # 10,773 orbits, whose first round's 96 rows were all f = 1: its polish's LPs
        # took 11 s of 29 s)
        several = np.unique(block.gain, axis=0).shape[0] > 1
        with threadpool_limits(limits=_first_threads(active.size), user_api="blas"):
            found = _dense_block(block, target, solve, polish=several, until=until,
                                 need=retry)
        solved = active
        iterations += found.iterations
        acc = accuracies(found.rule)
        if float(acc.min()) > lower:
            lower, rule = float(acc.min()), found.rule
        if found.upper < upper:
            upper = found.upper
            prior = np.zeros(R)
            prior[active] = found.prior
        if upper - lower <= stop:
            break
        grown = _grown(active, acc, upper, target, found)
        if grown is None:
            break
        active = grown
    assert prior is not None and rule is not None
    if upper - lower > retry and _first_threads(solved.size) == 1:
        sub = lp.restricted(solved)
        # the last rows once more, on every BLAS thread (see THREADED_ROWS), not every
        # round again (measured: majority at 30 parties in four classes, 1,995 orbits:
        # the last round of 367 rows ended 8.6e-10 wide on one thread, 4e-12 on two)
        again = _dense_block(sub, target, solve, need=retry)
        iterations += again.iterations
        masses = np.zeros(R)
        masses[solved] = again.prior
        value = float(accuracies(again.rule).min())
        best = _best_of(DenseWorst(prior, rule, lower, upper, 0),
                        DenseWorst(masses, again.rule, value, again.upper, 0))
        prior, rule, lower, upper = best.prior, best.rule, best.lower, best.upper
    return DenseWorst(prior, rule, lower, upper, iterations)


def _grown(active: np.ndarray, acc: np.ndarray, upper: float, target: float,
           found: DenseWorst) -> np.ndarray | None:
    """The next round's rows after a round on `active` (`acc`: its rule's accuracy on every
    row; `upper`: the best prior's bound), or None when no row keeps the bracket wider than
    the target: the violated rows, the most violated first, at most as many as there are
    (and at least ACTIVE_START); when they are few, the nearly violated after them; all rows
    once they would be most of the block."""
    R = acc.size
    outside = np.setdiff1d(np.arange(R), active)
    worse = outside[acc[outside] < upper - target]
    # after a round ended early (`until`), the rows its rule leaves clearly below (by more
    # than its bracket's width): the others may be below by its imprecision only
    clear = outside[acc[outside] < found.lower - found.width]
    if clear.size:
        worse = clear
    if worse.size == 0:
        return None
    near = outside[acc[outside] < upper + ACTIVE_NEAR] if worse.size < ACTIVE_START else worse
    fresh = near[np.argsort(acc[near], kind="stable")][:max(ACTIVE_START, active.size)]
    grown = np.union1d(active, fresh)
    return np.arange(R) if grown.size > ACTIVE_ALL * R else grown


def _load_blas() -> None:
    """Load scipy's BLAS (the normal matrix's products, its Cholesky factor) before a
    thread limit is set: threadpool_limits limits the libraries loaded when it is
    entered, and scipy ships an OpenBLAS of its own beside numpy's. Imported inside the
    limit, it ran on every thread: the first block of a run was not on one thread
    (measured: an observer at k = 9, 25 iterations to a bracket of 1.8e-9, the same on
    both runs; truly on one thread 3.2e-10)."""
    import scipy.linalg.blas  # noqa: F401  (lazy: scipy is heavy to import)


def _first_threads(rows: int) -> int | None:
    """BLAS threads of a block's first run: one below THREADED_ROWS rows, else every thread
    (None: BLAS's default)."""
    return 1 if rows < THREADED_ROWS else None


def _dense_block(lp: WorstLp, target: float, solve: Solve | None, polish: bool = True,
                 until: Callable[[float, float, np.ndarray], bool] | None = None,
                 need: float = np.inf) -> DenseWorst:
    """The method on every row of the block (module docstring); a bracket wider than
    `target` at the end is polished, unless `polish` is False (a round of `_by_rows` on
    rows of one gain row, whose LP is worth that row's best gain whatever the rule).
    `until(lower, upper, rule)`, asked after each iteration with the best bracket and rule
    so far, ends the method early (unpolished) when it returns True. `need`: the caller's
    need, beyond which the polish ends with the rule's LP (`_polished`)."""
    n, rows, W = lp.channel.columns, lp.rows, lp.gain
    if dense_work(lp) > MAX_DENSE_WORK:
        raise SizeLimitError(f"the dense worst-case method takes at most {MAX_DENSE_WORK:.3g} "
                             f"multiply-adds an iteration; this block needs "
                             f"{dense_work(lp):.3g} ({rows.size:,} rows, {n:,} columns)")
    assert lp.channel.factors is not None
    prob = _Problem(lp.channel.factors, lp.channel.floats(), W, rows, n)
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
    coarse_stalled = False
    mu = previous = np.inf
    prob.precise = False  # float64 products until precise_from says otherwise
    while iterations < MAX_ITERATIONS:
        clock.check()  # the run's deadline, once per iteration
        iterations += 1
        # long double once mu is small (d = q / s grows as at the end), or from a stall
        prob.precise = prob.precise_from(mu, previous)
        try:
            _iterate(prob, st, single=(prob.R >= SINGLE_ROWS and upper - lower > SINGLE_WIDTH
                                       and not coarse_stalled))
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
        # single precision that stops narrowing the bracket is done with (measured: a
        # party's block at 39 parties stuck at 8e-5 for 15 iterations)
        coarse_stalled = coarse_stalled or upper - lower > 0.9 * before
        mu, previous = st.mu(), mu
        done, stalled = _ended(prob, upper - lower, target, mu, stalled)
        if done:
            break
        if until is not None and rule is not None and until(lower, upper, rule):
            polish = False  # the caller is done with this LP: no end game, no polish
            break
    assert prior is not None and rule is not None
    prob.precise = True  # the problem's products as they were (nothing uses them after)
    if polish and upper - lower > target:
        lower, upper, prior, rule = _polished(lp, lower, upper, prior, rule, solve, target,
                                              need)
    return DenseWorst(prior, rule, lower, upper, iterations)


def _ended(prob: _Problem, width: float, target: float, mu: float, stalled: int
           ) -> tuple[bool, int]:
    """Whether the method ends after an iteration, and the stall count to go on with: it
    ends with the bracket within `target`, when it is stuck (STUCK iterations without
    narrowing, at any mu: more precision does not unstick it), or at the end game's stall
    (mu below STALL_MU, STALL such iterations) in long double. The end game's stall in
    float64 does not end it: it switches `prob` to long double (float64's rounding may be
    what stalls it), with the count reset."""
    if width <= target or stalled >= STUCK:
        return True, stalled
    if mu < STALL_MU and stalled >= STALL:
        if prob.precise:
            return True, stalled
        prob.precise = True
        return False, 0
    return False, stalled


# Seconds the rule's LP of `_polished` may take (where the solver takes a limit): the two
# it closed took 0.3 and 0.5 s; an LP it cannot solve quickly is one it rarely helps
RULE_LP_SECONDS = 5.0


def _polished(lp: WorstLp, lower: float, upper: float, prior: np.ndarray, rule: np.ndarray,
              solve: Solve | None, target: float, need: float = np.inf
              ) -> tuple[float, float, np.ndarray, np.ndarray]:
    """The bracket after polishing (theory/worst_polish.py): the rule solved again from the
    prior's supports, then (while the bracket is wider than `target`) the prior from the
    rule's; then, while it is still wider than the caller's `need`, the rule's LP on the
    prior's ties (`_on_ties`); each kept when its bound is better."""
    from threadpoolctl import threadpool_limits  # lazy

    C = np.asarray(lp.channel.floats(), dtype=WORK)
    G = np.asarray(lp.gain, dtype=WORK)
    with threadpool_limits(limits=1, user_api="blas"):  # small SVDs: one thread is faster
        # the finer ties while the rule leaves the bracket wider than the target
        candidate = polish_rule(C, G, prior, solve, (TIE, *FINER_TIES), upper - target)
    lower, rule = _better_rule(C, G, candidate, lower, rule)
    if upper - lower <= target:
        return lower, upper, prior, rule
    with threadpool_limits(limits=1, user_api="blas"):
        masses = polish_prior(C, G, rule, solve)
    upper, prior = _better_prior(C, G, masses, upper, prior)
    if upper - lower <= max(target, need) or solve is None:
        return lower, upper, prior, rule
    return _on_ties(C, G, lower, upper, prior, rule, solve)


def _better_rule(C: np.ndarray, G: np.ndarray, candidate, lower: float, rule: np.ndarray
                 ) -> tuple[float, np.ndarray]:
    """(lower, rule) with `candidate` kept if its worst case is higher."""
    if candidate is not None:
        value = float((((C @ candidate) * G).sum(axis=1)).min())
        if value > lower:
            return value, np.asarray(candidate, dtype=np.float64)
    return lower, rule


def _better_prior(C: np.ndarray, G: np.ndarray, masses, upper: float, prior: np.ndarray
                  ) -> tuple[float, np.ndarray]:
    """(upper, prior) with `masses` kept if its bound is lower."""
    if masses is not None:
        bound = float((C.T @ (masses[:, None] * G)).max(axis=1).sum())
        if bound < upper:
            return bound, np.asarray(masses, dtype=np.float64)
    return upper, prior


def _on_ties(C: np.ndarray, G: np.ndarray, lower: float, upper: float, prior: np.ndarray,
             rule: np.ndarray, solve: Solve, most_free: int | None = None
             ) -> tuple[float, float, np.ndarray, np.ndarray]:
    """The rule's LP on the prior's ties (worst_polish.rule_lp, at most `most_free` free
    entries if given) and its dual prior, each kept when its bound is better."""
    from threadpoolctl import threadpool_limits  # lazy

    # a run's solver (verifiers/solving.py) gives the LP at most RULE_LP_SECONDS
    capped = getattr(solve, "at_most", None)
    lp_solve = capped(RULE_LP_SECONDS) if capped is not None else solve
    with threadpool_limits(limits=1, user_api="blas"):
        candidate, masses = rule_lp(C, G, prior, lp_solve, most_free=most_free)
    lower, rule = _better_rule(C, G, candidate, lower, rule)
    upper, prior = _better_prior(C, G, masses, upper, prior)
    return lower, upper, prior, rule


def polish_on_ties(lp: WorstLp, found: DenseWorst, solve: Solve,
                   most_free: int | None = None) -> DenseWorst:
    """`found` (any pair: a run of this method, or the best ends of several hints) after the
    rule's LP on its prior's ties, the last step of the polish (`_polished`), for a caller
    that ran the method without it (`enough=inf`) and tried other hints first; each end
    kept when better; `most_free`, the most free entries its LP may have. A caller's
    cheap step before HiGHS's LP on the whole block (measured: an observer's `sum` at
    k = 9, stalled 2e-9 wide on both runs of the method, closed to 6e-11 in 0.3 s, where
    HiGHS's dense LP took 6.5 s)."""
    C = np.asarray(lp.channel.floats(), dtype=WORK)
    G = np.asarray(lp.gain, dtype=WORK)
    lower, upper, prior, rule = _on_ties(C, G, found.lower, found.upper, found.prior,
                                         found.rule, solve, most_free)
    return DenseWorst(prior, rule, lower, upper, found.iterations)


__all__ = ["MAX_DENSE_INPUTS", "MAX_DENSE_WORK", "RETRY_WIDTH", "DenseWorst", "dense_again",
           "dense_work", "dense_worst", "polish_on_ties"]
