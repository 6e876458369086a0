"""The range-restricted geometric mechanism and what derives from it (pure maths, no I/O).

References (theory.md section 2):
* GS: Gupte, Sundararajan, *Universally Optimal Privacy Mechanisms for Minimax Agents*,
  PODS 2010 (seed 001): Definition 4 (the range-restricted geometric mechanism), Theorem 2
  (derivability), Lemma 3 and Algorithm 1 (multi-level release), Theorem 1 (universal
  optimality for minimax consumers).
* GRS: Ghosh, Roughgarden, Sundararajan, *Universally Utility-Maximizing Privacy
  Mechanisms*, STOC 2009 (Bayesian consumers, deterministic remaps).

Every matrix here is (n+1) x (n+1), rows are true answers i, columns released answers r,
and privacy is `alpha = e^-epsilon` in [0, 1] (alpha = 0: no privacy; alpha = 1: the
release cannot depend on the answer).

The functions are generic over two number types: pass a float `alpha` (or float arrays)
for numpy float64 arithmetic, or a `Fraction` alpha (or object arrays of Fractions) for
exact arithmetic; the result has the matching type. Exact linear solves and products go
through python-flint (`fmpq_mat`), which is orders of magnitude faster than Fractions.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.records import record

Number = float | Fraction

# --------------------------------------------------------------------------------------
# Number plumbing


def is_exact(alpha: object) -> bool:
    return isinstance(alpha, (Fraction, int)) and not isinstance(alpha, bool)


def as_exact_array(rows) -> np.ndarray:
    """A matrix of exact rationals as a numpy object array of Fractions."""
    arr = np.array([[Fraction(v) for v in row] for row in rows], dtype=object)
    return arr.reshape(len(rows), -1) if len(rows) else arr.reshape(0, 0)


def _zeros(n1: int, exact: bool) -> np.ndarray:
    if exact:
        out = np.empty((n1, n1), dtype=object)
        out.fill(Fraction(0))
        return out
    return np.zeros((n1, n1))


def to_fmpq_mat(a: np.ndarray):
    import flint

    rows, cols = a.shape
    return flint.fmpq_mat(rows, cols, [flint.fmpq(int(Fraction(v).numerator),
                                                  int(Fraction(v).denominator))
                                       for v in a.ravel()])


def from_fmpq_mat(m) -> np.ndarray:
    rows, cols = m.nrows(), m.ncols()
    out = np.empty((rows, cols), dtype=object)
    for idx, v in enumerate(m.entries()):
        out[idx // cols, idx % cols] = Fraction(int(v.p), int(v.q))
    return out


def exact_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for object arrays of Fractions, exactly (through flint)."""
    return from_fmpq_mat(to_fmpq_mat(a) * to_fmpq_mat(b))


def check_alpha(alpha: Number) -> None:
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must lie in [0, 1]: {alpha}")


# --------------------------------------------------------------------------------------
# The geometric mechanism (GS Definition 4; theory.md section 2)


def geometric_weights(alpha: Number, n: int) -> np.ndarray:
    """w with G[i, k] = alpha^|i-k| * w[k].

    GS Definition 4: G[i,r] = (1-alpha)/(1+alpha) alpha^|i-r| for 0 < r < n (so w[r] is
    (1-alpha)/(1+alpha)), G[i,0] = alpha^i/(1+alpha) and G[i,n] = alpha^(n-i)/(1+alpha)
    (so w[0] = w[n] = 1/(1+alpha)). For n = 0 the single output has mass 1.
    """
    check_alpha(alpha)
    exact = is_exact(alpha)
    one = Fraction(1) if exact else 1.0
    a = Fraction(alpha) if exact else float(alpha)
    w = np.empty(n + 1, dtype=object if exact else np.float64)
    if n == 0:
        w[0] = one
        return w
    w[:] = (one - a) / (one + a)
    w[0] = w[n] = one / (one + a)
    return w


def _powers(alpha: Number, n: int) -> np.ndarray:
    """P[i, k] = alpha^|i-k| (with 0^0 = 1)."""
    dist = np.abs(np.subtract.outer(np.arange(n + 1), np.arange(n + 1)))
    if is_exact(alpha):
        a = Fraction(alpha)
        table = [a ** d for d in range(n + 1)]
        out = np.empty((n + 1, n + 1), dtype=object)
        for i in range(n + 1):
            for k in range(n + 1):
                out[i, k] = table[dist[i, k]]
        return out
    return np.power(float(alpha), dist.astype(np.float64))


def geometric_matrix(alpha: Number, n: int) -> np.ndarray:
    """The range-restricted alpha-geometric mechanism G (GS Definition 4), (n+1) x (n+1).

    alpha = 0 gives the identity; alpha = 1 gives identical rows (1/2, 0, ..., 0, 1/2).
    """
    return _powers(alpha, n) * geometric_weights(alpha, n)[None, :]


def geometric_inverse(alpha: Number, n: int) -> np.ndarray:
    """G^-1, which is tridiagonal (GS section 3; theory.md section 2).

    Row 0: (1, -alpha, 0, ...)/(1-alpha); row n: (..., 0, -alpha, 1)/(1-alpha);
    row 0 < i < n: (-alpha, 1+alpha^2, -alpha)/(1-alpha)^2 in columns i-1, i, i+1.
    G_1 (alpha = 1) is singular when n >= 1: ValueError.
    """
    check_alpha(alpha)
    exact = is_exact(alpha)
    n1 = n + 1
    out = _zeros(n1, exact)
    one = Fraction(1) if exact else 1.0
    a = Fraction(alpha) if exact else float(alpha)
    if n == 0:
        out[0, 0] = one
        return out
    if a == 1:
        raise ValueError("the 1-geometric mechanism has identical rows: it has no inverse")
    edge, mid = one / (one - a), one / (one - a) ** 2
    out[0, 0], out[0, 1] = edge, -a * edge
    out[n, n], out[n, n - 1] = edge, -a * edge
    for i in range(1, n):
        out[i, i - 1] = out[i, i + 1] = -a * mid
        out[i, i] = (one + a * a) * mid
    return out


def local_margins(x: np.ndarray, alpha: Number) -> np.ndarray:
    """The three-row quantities of the local derivability test (GS Theorem 2).

    M[0, j] = x[0,j] - alpha x[1,j]; M[n, j] = x[n,j] - alpha x[n-1,j];
    M[i, j] = (1+alpha^2) x[i,j] - alpha (x[i-1,j] + x[i+1,j]) for 0 < i < n.
    G^-1 x is M with rows 0 and n divided by (1-alpha) and the others by (1-alpha)^2,
    so x derives from G iff M >= 0. (At alpha = 1 the test still reads correctly: M >= 0
    forces every column to be constant, i.e. all rows equal.)
    """
    x = np.asarray(x)
    n = x.shape[0] - 1
    a = alpha
    if n == 0:
        return x.copy()
    m = x.copy()
    m[0] = x[0] - a * x[1]
    m[n] = x[n] - a * x[n - 1]
    if n >= 2:
        m[1:n] = (1 + a * a) * x[1:n] - a * (x[0:n - 1] + x[2:n + 1])
    return m


def apply_inverse(x: np.ndarray, alpha: Number) -> np.ndarray:
    """G^-1 x in O(n^2) through the tridiagonal structure (alpha < 1, or n = 0)."""
    n = np.asarray(x).shape[0] - 1
    m = local_margins(x, alpha)
    if n == 0:
        return m
    if alpha == 1:
        raise ValueError("the 1-geometric mechanism has identical rows: it has no inverse")
    one = Fraction(1) if is_exact(alpha) else 1.0
    m[0] = m[0] / (one - alpha)
    m[n] = m[n] / (one - alpha)
    if n >= 2:
        m[1:n] = m[1:n] / (one - alpha) ** 2
    return m


# --------------------------------------------------------------------------------------
# Differential privacy of an explicit mechanism (GS Definition 2)


def dp_violations(x: np.ndarray, alpha: Number, tol: float = 0.0) -> list[tuple[int, int]]:
    """(i, r) with alpha x[i+1,r] > x[i,r] + tol or alpha x[i,r] > x[i+1,r] + tol.

    GS Definition 2 for count queries: alpha x[i+1,r] <= x[i,r] and alpha x[i,r] <= x[i+1,r]
    for adjacent answers. The pair is reported as its first row i.
    """
    x = np.asarray(x)
    if x.shape[0] < 2:
        return []
    up = alpha * x[1:] - x[:-1]
    down = alpha * x[:-1] - x[1:]
    bad = np.asarray(up > tol, dtype=bool) | np.asarray(down > tol, dtype=bool)
    return [(int(i), int(r)) for i, r in np.argwhere(bad)]


def privacy_level(x: np.ndarray) -> float:
    """The largest alpha for which x is alpha-DP: min over adjacent rows of the ratios.

    A column where both rows are 0 constrains nothing; one zero and one positive entry
    give 0 (only alpha = 0, no privacy, allows it). n = 0: 1.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.shape[0] < 2:
        return 1.0
    a, b = x[:-1].reshape(x.shape[0] - 1, -1), x[1:].reshape(x.shape[0] - 1, -1)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    live = hi > 0
    if not live.any():
        return 1.0
    return float(np.min(lo[live] / hi[live]))


def is_stochastic(x: np.ndarray, tol: float = 0.0) -> bool:
    """Non-negative entries and rows summing to 1 (within tol; tol = 0 for exact input)."""
    x = np.asarray(x)
    if x.size == 0:
        return False
    neg = np.asarray(x < -tol, dtype=bool)
    sums = x.sum(axis=1)
    off = np.asarray(abs(sums - 1) > tol, dtype=bool)
    return not neg.any() and not off.any()


# --------------------------------------------------------------------------------------
# Derivability from G (GS Theorem 2): two independent tests that must agree


@record(eq=False)
class Derivation:
    """The answer to "can x be derived from the alpha-geometric mechanism?".

    `solve_T` is G^-1 x from a general linear solve (None at alpha = 1, n >= 1, where G is
    singular and x derives iff all its rows are equal); `solve_violations` are the (i, j)
    with T[i, j] < -tol; `local_violations` the (i, j) where the three-row test fails.
    `T` is a post-processing with G T = x when x derives (G^-1 x, or at alpha = 1 every
    row equal to x[0]).
    """

    alpha: Number
    exact: bool
    tol: float
    dp_violations: tuple[tuple[int, int], ...]
    solve_T: np.ndarray | None
    solve_violations: tuple[tuple[int, int], ...]
    local_margins: np.ndarray
    local_violations: tuple[tuple[int, int], ...]
    method: str  # how the linear-solve side was decided

    @property
    def dp(self) -> bool:
        return not self.dp_violations

    @property
    def by_solve(self) -> bool:
        return not self.solve_violations

    @property
    def by_local(self) -> bool:
        return not self.local_violations

    @property
    def agree(self) -> bool:
        return self.by_solve == self.by_local

    @property
    def derivable(self) -> bool | None:
        """True / False when both tests agree, None when undecided: they disagree, or say
        "derivable" about a mechanism that is not alpha-DP (every G T is alpha-DP)."""
        if not self.agree or (self.by_solve and not self.dp):
            return None
        return self.by_solve

    @property
    def T(self) -> np.ndarray | None:
        """A stochastic T with G T = x when x derives, else None."""
        if not self.derivable:
            return None
        return self.solve_T if self.solve_T is not None else self.equal_rows_T

    equal_rows_T: np.ndarray | None = None  # alpha = 1: every row x[0]


def _solve_general(x: np.ndarray, alpha: Number) -> np.ndarray:
    """G T = x by a general dense solve (LU in floats, exact elimination with flint).

    Independent of the tridiagonal formula for G^-1 on purpose: it is the second method.
    """
    n = x.shape[0] - 1
    G = geometric_matrix(alpha, n)
    if is_exact(alpha):
        return from_fmpq_mat(to_fmpq_mat(G).solve(to_fmpq_mat(x)))
    return np.linalg.solve(G, np.asarray(x, dtype=np.float64))


def derive(x: np.ndarray, alpha: Number, tol: float = 1e-9) -> Derivation:
    """Test whether x = G T for a row-stochastic T, by a linear solve and by the local
    three-row test (GS Theorem 2), and check that x is alpha-DP.

    Exact when `alpha` is a Fraction and `x` an object array of Fractions (tol is then
    ignored: every comparison is exact); floating point with tolerance `tol` otherwise.
    x must be square and row-stochastic (the caller validates it).
    """
    exact = is_exact(alpha)
    if exact:
        alpha = Fraction(alpha)
        x = np.asarray(x, dtype=object)
        t: float = 0.0
    else:
        alpha = float(alpha)
        x = np.asarray(x, dtype=np.float64)
        t = tol
    check_alpha(alpha)
    n = x.shape[0] - 1
    dp = tuple(dp_violations(x, alpha, t))
    margins = local_margins(x, alpha)
    local = tuple((int(i), int(j)) for i, j in np.argwhere(np.asarray(margins < -t, dtype=bool)))
    if alpha == 1 and n >= 1:
        # G_1 is singular with identical rows g = (1/2, 0, ..., 0, 1/2), so G_1 T has every
        # row equal to g T, which can be any distribution: x derives iff its rows are equal.
        diff = np.asarray(abs(x - x[:1]) > t, dtype=bool)
        bad = tuple((int(i), int(j)) for i, j in np.argwhere(diff))
        return Derivation(alpha, exact, tol, dp, None, bad, margins, local,
                          "alpha = 1: G has identical rows; x derives iff its rows are equal",
                          equal_rows_T=np.repeat(x[:1], n + 1, axis=0))
    T = _solve_general(x, alpha)
    bad = tuple((int(i), int(j)) for i, j in np.argwhere(np.asarray(-t > T, dtype=bool)))
    method = "exact rational elimination" if exact else "LU solve in floating point"
    return Derivation(alpha, exact, tol, dp, T, bad, margins, local, method)


# --------------------------------------------------------------------------------------
# Consumers: losses, monotonicity, values of a mechanism


def monotonicity_violation(loss: np.ndarray, rows=None) -> tuple[int, int] | None:
    """The first (i, r) where l(i, .) decreases as r moves away from i, or None.

    `rows`: the true answers i that matter (the side information; default all): a row
    outside it never enters the consumer's dis-utility, so it does not need to be monotone.

    GS section 2.2 asks l(i, r) to be "monotone non-decreasing in |i - r|, for every i":
    for r >= i, l(i, r+1) >= l(i, r), and for r <= i, l(i, r-1) >= l(i, r). The returned
    r is the farther of the two entries compared.
    """
    loss = np.asarray(loss)
    n1 = loss.shape[0]
    for i in (range(n1) if rows is None else rows):
        for r in range(i, n1 - 1):
            if loss[i, r + 1] < loss[i, r]:
                return i, r + 1
        for r in range(i, 0, -1):
            if loss[i, r - 1] < loss[i, r]:
                return i, r - 1
    return None


def is_monotone(loss: np.ndarray) -> bool:
    return monotonicity_violation(loss) is None


def minimax_loss(x: np.ndarray, loss: np.ndarray, side: Sequence[int]) -> Number:
    """A minimax consumer's dis-utility max_{i in S} sum_r l(i,r) x[i,r] (GS section 2.2)."""
    per_row = (np.asarray(loss) * np.asarray(x)).sum(axis=1)
    return max(per_row[i] for i in side)


def bayes_loss(x: np.ndarray, loss: np.ndarray, prior: np.ndarray) -> Number:
    """A Bayesian consumer's expected loss sum_i p_i sum_r l(i,r) x[i,r] (GRS)."""
    per_row = (np.asarray(loss) * np.asarray(x)).sum(axis=1)
    return (np.asarray(prior) * per_row).sum()


def bayes_remap(G: np.ndarray, loss: np.ndarray, prior: np.ndarray) -> tuple[Number, np.ndarray]:
    """The Bayesian consumer's best deterministic remap of G's output (GRS), directly.

    Given G's output k, the posterior weight of answer i is p_i G[i,k]; the consumer
    answers r(k) = argmin_r sum_i p_i G[i,k] l(i,r) (ties: the smallest r). Returns the
    expected loss sum_k min_r (...) and the remap r(k).
    """
    weighted = np.asarray(prior)[:, None] * np.asarray(G)  # p_i G[i, k]
    M = weighted.T @ np.asarray(loss)  # M[k, r] = sum_i p_i G[i,k] l(i,r)
    # the first index of each row's minimum, compared exactly (object arrays of Fractions
    # included: np.argmin would also work on them, but this states the tie rule plainly)
    remap = np.array([_first_argmin(list(row)) for row in M], dtype=np.int64)
    value = sum(M[k, remap[k]] for k in range(M.shape[0]))
    return value, remap


def _first_argmin(values: list) -> int:
    best = 0
    for r in range(1, len(values)):
        if values[r] < values[best]:
            best = r
    return best
