"""Exact arithmetic for certificates: scaled-integer Kronecker transforms and e^eps brackets.

Every number here is an exact rational. A vector (or a matrix of columns) of rationals is
kept as integers over one common denominator (`Scaled`), so the fast Kronecker transform of
design.md runs on Python integers (numpy object arrays): `k` passes of 2x2 mixing, about
0.2 s for 2^16 points, against ~8 s with `fractions.Fraction`.

Randomized response (KOV 2015, Section 3): with lambda_i = p_i / q_i,
    S_i = [[lambda_i, 1], [1, lambda_i]] / (1 + lambda_i) = [[p_i, q_i], [q_i, p_i]] / (p_i + q_i)
    S_i^-1 = [[lambda_i, -1], [-1, lambda_i]] / (lambda_i - 1)
           = [[p_i, -q_i], [-q_i, p_i]] / (p_i - q_i)
so S = S_1 (x) ... (x) S_k is an integer transform followed by one division. S is symmetric
and its rows and columns sum to 1. When lambda_i = 1, S_i = [[1, 1], [1, 1]] / 2 is singular;
`rr_inverse_apply` then uses the identity on that axis, which inverts S_i on the vectors
that are constant along the axis (the only ones that arise: theory.md, "Certificates").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction

import numpy as np

from dpverify.records import record
from dpverify.spec.numbers import rational_text

# Rational brackets of e^eps carry this many significant bits: a relative width of about
# 2^-62 (2e-19), well inside the 1e-15 the certificate format asks for.
BRACKET_BITS = 64
MAX_RELATIVE_WIDTH = Fraction(1, 10**15)


# --------------------------------------------------------------------------- scaled ints


@record(eq=False)
class Scaled:
    """Exact rationals `num / den`: `num` an object array of Python ints, `den` an int > 0.

    `num` has shape (n,) or (n, c) (c columns transformed together).
    """

    num: np.ndarray
    den: int

    def __post_init__(self) -> None:
        if self.den <= 0:
            raise ValueError(f"the denominator must be positive: {self.den}")

    @staticmethod
    def from_fractions(values: Iterable) -> Scaled:
        """A vector or a matrix (nested sequences) of rationals -> one common denominator."""
        arr = np.array(values, dtype=object)
        flat = [Fraction(v) for v in arr.ravel()]
        den = math.lcm(*(f.denominator for f in flat)) if flat else 1
        num = np.array([f.numerator * (den // f.denominator) for f in flat], dtype=object)
        return Scaled(num.reshape(arr.shape), den)

    @staticmethod
    def from_ints(values, den: int = 1) -> Scaled:
        return Scaled(np.array(values, dtype=object), den)

    def fractions(self) -> list:
        """As Fractions (nested lists for a matrix)."""
        den = self.den
        out = np.array([Fraction(int(v), den) for v in self.num.ravel()], dtype=object)
        return out.reshape(self.num.shape).tolist()

    def column(self, j: int) -> Scaled:
        return Scaled(self.num[:, j], self.den)

    def total(self) -> Fraction:
        return Fraction(int(sum(self.num.ravel().tolist())), self.den)


def _kron_int(pairs: Sequence[tuple[int, int]], num: np.ndarray) -> np.ndarray:
    """(M_1 (x) ... (x) M_k) @ num with M_i = [[a_i, b_i], [b_i, a_i]] (integers), by k passes.

    Big-endian multi-index: axis 0 of the reshaped array is party 1 (x1 the most
    significant bit), as everywhere in dpverify.
    """
    k = len(pairs)
    shape = num.shape
    t = num.reshape((2,) * k + (-1,))
    for axis, (a, b) in enumerate(pairs):
        lo = np.take(t, 0, axis=axis)
        hi = np.take(t, 1, axis=axis)
        if b == 0:
            new0, new1 = a * lo, a * hi
        else:
            new0, new1 = a * lo + b * hi, b * lo + a * hi
        t = np.stack([new0, new1], axis=axis)
    return t.reshape(shape)


def lambda_pq(lam: Fraction) -> tuple[int, int]:
    """lambda = p / q in lowest terms, with lambda >= 1 required (DP: lambda = e^eps >= 1)."""
    lam = Fraction(lam)
    if lam < 1:
        raise ValueError(f"lambda must be >= 1: {lam}")
    return lam.numerator, lam.denominator


def first_argmax(row: Sequence) -> int:
    """The index of a row's largest entry, ties to the first (exact numbers compare
    exactly; the decision rules' "ties to the first output")."""
    best = 0
    for j in range(1, len(row)):
        if row[j] > row[best]:
            best = j
    return best


def row_max(num: np.ndarray) -> np.ndarray:
    """The largest entry of every row of an object array of exact integers."""
    return np.array([max(row) for row in num.tolist()], dtype=object)


def rr_apply(lambdas: Sequence[Fraction], v: Scaled) -> Scaled:
    """S v exactly, S = S_1 (x) ... (x) S_k (randomized response; S symmetric, so also S^T v)."""
    pq = [lambda_pq(lam) for lam in lambdas]
    num = _kron_int(pq, v.num)
    return Scaled(num, v.den * math.prod(p + q for p, q in pq))


def rr_inverse_apply(lambdas: Sequence[Fraction], v: Scaled) -> Scaled:
    """(x)_i M_i v with M_i = S_i^-1 (lambda_i > 1) or the identity (lambda_i = 1).

    For every v that is constant along each axis with lambda_i = 1, S (rr_inverse_apply(v))
    = v; and since 1^T S_i^-1 = 1^T, the sum is preserved: sum(result) = sum(v).
    """
    pairs, scale = [], 1
    for lam in lambdas:
        p, q = lambda_pq(lam)
        if p == q:
            pairs.append((1, 0))
        else:
            pairs.append((p, -q))
            scale *= p - q
    num = _kron_int(pairs, v.num)
    if scale < 0:  # cannot happen for lambda >= 1; kept so that `den` stays positive
        num, scale = -num, -scale
    return Scaled(num, v.den * scale)


# --------------------------------------------------------------------------- e^eps


def _floor_bits(x: Fraction, bits: int) -> Fraction:
    """The largest dyadic <= x with `bits` significant bits (x > 0)."""
    e = bits - (x.numerator.bit_length() - x.denominator.bit_length())
    if e >= 0:
        return Fraction((x.numerator << e) // x.denominator, 1 << e)
    return Fraction((x.numerator // (x.denominator << -e)) << -e)


def _ceil_bits(x: Fraction, bits: int) -> Fraction:
    """The smallest dyadic >= x with about `bits` significant bits (x > 0)."""
    e = bits - (x.numerator.bit_length() - x.denominator.bit_length())
    if e >= 0:
        return Fraction(-((-(x.numerator << e)) // x.denominator), 1 << e)
    return Fraction((-((-x.numerator) // (x.denominator << -e))) << -e)


def exp_bracket(eps: Fraction, bits: int = BRACKET_BITS) -> tuple[Fraction, Fraction]:
    """Rationals lo <= e^eps <= hi, rigorously, with (hi - lo) / lo below about 2^-(bits-2).

    Argument reduction r = eps / 2^j <= 1/2 and the Taylor series with an explicit
    remainder: for 0 <= r <= 1/2 and N + 2 > 2r,
        T_N(r) <= e^r <= T_N(r) + r^(N+1) / (N+1)! * 1 / (1 - r / (N+2))
                      <= T_N(r) + 2 r^(N+1)/(N+1)!
    then e^eps = (e^r)^(2^j) by j squarings, rounding the lower end down and the upper end
    up at every step (directed rounding keeps the bracket valid). eps = 0 gives (1, 1).
    """
    eps = Fraction(eps)
    if eps < 0:
        raise ValueError(f"epsilon must be >= 0: {eps}")
    if eps == 0:
        return Fraction(1), Fraction(1)
    j = 0
    while eps / (1 << j) > Fraction(1, 2):
        j += 1
    r = eps / (1 << j)
    work = bits + 2 * j + 40  # guard bits: each squaring at most doubles the relative error
    tol = Fraction(1, 1 << work)
    term = Fraction(1)
    total = Fraction(1)
    n = 0
    while True:
        n += 1
        term = term * r / n
        total += term
        remainder = 2 * term * r / (n + 1)  # >= sum_{i > n} r^i / i!  (r <= 1/2)
        if remainder <= tol:
            break
    lo = _floor_bits(total, work)
    hi = _ceil_bits(total + remainder, work)
    for _ in range(j):
        lo = _floor_bits(lo * lo, work)
        hi = _ceil_bits(hi * hi, work)
    lo, hi = _floor_bits(lo, bits), _ceil_bits(hi, bits)
    lo = max(lo, Fraction(1))  # e^eps >= 1 for eps >= 0: a valid, never looser, lower end
    if (hi - lo) > MAX_RELATIVE_WIDTH * lo:
        raise ArithmeticError(f"the bracket of e^{eps} is too wide: [{lo}, {hi}]")
    return lo, hi


def lambda_brackets(
    lambdas_exact: Sequence[Fraction] | None, epsilons_exact: Sequence[Fraction] | None
) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """(lower, upper) rational lambdas: both exact when given through `lambda`, else
    rigorous brackets lo <= e^eps <= hi (theory.md, "Certificates": the bound at the upper
    lambdas is valid for lambda, and RR at the lower lambdas is lambda-DP)."""
    if lambdas_exact is not None:
        exact = tuple(Fraction(v) for v in lambdas_exact)
        return exact, exact
    if epsilons_exact is None:
        raise ValueError("a spec needs exact lambdas or exact epsilons")
    pairs = [exp_bracket(Fraction(e)) for e in epsilons_exact]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


# --------------------------------------------------------------------------- coarse brackets


def flip(lam: Fraction) -> Fraction:
    """RR's flip probability rho = 1 / (1 + lambda) (KOV 2015, eq. (9))."""
    return 1 / (1 + Fraction(lam))


def bracket_cost(lower: Sequence[Fraction], upper: Sequence[Fraction]) -> Fraction:
    """sum_i rho(lower_i) - rho(upper_i): the most the optimum can move between the two
    sets of levels, relative to the gains' range (theory.md 2.6: coupling RR's flips, any
    rule's accuracy on any input moves by at most span * sum_i |rho_i - rho'_i|)."""
    return sum((flip(lo) - flip(hi) for lo, hi in zip(lower, upper, strict=True)),
               Fraction(0))


def simplest_between(a: Fraction, b: Fraction) -> Fraction:
    """The rational of smallest denominator in [a, b] (0 < a <= b), by continued fractions
    (Stern-Brocot): an integer when there is one, else n + 1 / (the simplest in
    [1 / (b - n), 1 / (a - n)]) for n = floor(a)."""
    n = a.numerator // a.denominator
    if n == a:
        return Fraction(n)
    if n + 1 <= b:
        return Fraction(n + 1)
    return n + 1 / simplest_between(1 / (b - n), 1 / (a - n))


def coarse_bracket(eps: Fraction, budget: Fraction) -> tuple[Fraction, Fraction]:
    """Rationals lo <= e^eps <= hi with small numerators and denominators and
    rho(lo) - rho(hi) <= budget (rho = 1 / (1 + lambda)): the simplest rationals in
    [lambda_min, L] and [H, lambda_max], where [L, H] is exp_bracket's fine bracket and
    rho(lambda_min) = rho(H) + budget / 2, rho(lambda_max) = rho(L) - budget / 2. A budget
    below the fine bracket's own cost gives the fine bracket."""
    eps = Fraction(eps)
    L, H = exp_bracket(eps)
    if L == H:
        return L, H
    half = budget / 2
    lo_floor = 1 / (flip(H) + half) - 1
    lo = L if lo_floor >= L else simplest_between(max(lo_floor, Fraction(1)), L)
    top = flip(L) - half
    if top <= 0:  # any lambda above H is close enough: the next integer
        hi = Fraction(H.numerator // H.denominator + 1)
    else:
        hi_ceiling = 1 / top - 1
        hi = H if hi_ceiling <= H else simplest_between(H, hi_ceiling)
    return lo, hi


# The share of the tolerance the coarse brackets may cost: small enough that no reported
# value moves visibly (tol * span / 2^20, about 1e-15 of the gains' range at the default
# --tol), yet brackets of about 25 bits instead of 64 for each lambda.
COARSE_SHARE = Fraction(1, 1 << 20)


def coarse_brackets(lambdas_exact: Sequence[Fraction] | None,
                    epsilons_exact: Sequence[Fraction] | None, tol: Fraction | float
                    ) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """Brackets of e^eps as coarse as the verdict allows (theory.md 2.6): their cost
    (bracket_cost) is at most COARSE_SHARE of tol, so that they move the optimum by at most
    that share of the tolerance (tol * span) and leave the rest to the construction. Each
    party gets an equal share; equal epsilons get equal brackets. Exact lambdas are
    returned as given."""
    if lambdas_exact is not None or epsilons_exact is None:
        return lambda_brackets(lambdas_exact, epsilons_exact)
    k = len(epsilons_exact)
    total = Fraction(tol) * COARSE_SHARE
    budget = total / k
    found = {e: coarse_bracket(Fraction(e), budget) for e in set(epsilons_exact)}
    lower = tuple(found[e][0] for e in epsilons_exact)
    upper = tuple(found[e][1] for e in epsilons_exact)
    if bracket_cost(lower, upper) > total:  # a tolerance finer than the fine brackets: those
        return lambda_brackets(lambdas_exact, epsilons_exact)  # (the verdict weighs them)
    return lower, upper


def product_words(lambdas: Sequence[Fraction]) -> int:
    """The 64-bit words of an integer of the exact transforms: a product over the parties
    of lambda_i's numerator or denominator, about sum_i bits(lambda_i) bits (lambdas from
    epsilon: brackets of some 64 bits each, BRACKET_BITS); at least 1."""
    bits = sum(max(v.numerator.bit_length(), v.denominator.bit_length()) for v in lambdas)
    return max(1, bits // 64)


def rational_string(value: Fraction) -> str:
    """'p/q', or 'p' for an integer: the certificate format's exact numbers, at any length
    (spec.numbers.rational_text)."""
    return rational_text(value)


def to_fmpq(v):
    """A rational as python-flint's fmpq (imported here: a verification that needs no exact
    linear algebra does not load python-flint)."""
    from flint import fmpq

    if isinstance(v, fmpq):
        return v
    v = Fraction(v)
    return fmpq(v.numerator, v.denominator)


def from_fmpq(v) -> Fraction:
    return Fraction(int(v.p), int(v.q))
