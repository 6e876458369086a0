"""The envelope bound: the best accuracy of any interactive protocol on bits that is
(epsilon_i, delta_i)-DP for each party, as a linear program over the products of rays
(issue 27; docs/theory.md, section 7.10). The four-ray LP (rays.py) is its relaxation with
a multilinear dual; here the dual may be any function on the products of rays that is
concave along every party's line.

**The grid.** A party with delta_i > 0 has four rays, ordered along its line of directions
(u, v) in R^2_+: REVEAL_0 = (1, 0), CORNER_0 = (lambda, 1)/(1 + lambda),
CORNER_1 = (1, lambda)/(1 + lambda), REVEAL_1 = (0, 1) (rr.py); a party with delta_i = 0
keeps its two corners. A *state* is a product of rays s = (s_1, ..., s_k), numbered as the
products of rays.py (mixed radix, party 1 most significant); T_s its column.

**Chords.** Each corner is a positive combination of its two neighbours on the line, and of
the two reveal rays:

    c0 = (lambda - 1)/lambda r0 + 1/lambda c1,     c0 = lambda/(1 + lambda) r0 + 1/(1 + lambda) r1
    c1 = (lambda - 1)/lambda r1 + 1/lambda c0,     c1 = lambda/(1 + lambda) r1 + 1/(1 + lambda) r0

A *chord* is one of these at one state: party j at a corner of s is replaced by the two
rays, with their weights, the other parties unchanged (`chords`). As a message, it is party
j splitting its factor in two: "reveal" and "flip" (or "reveal" either way).

**The LP (primal, a flow).** Mass 1 starts at each state of corners only (the all-ones
column is sum over {c0, c1}^k of T_s); mass sigma >= 0 may move along any chord (leaving
its state, arriving at its two states times their weights); the mass left at s is stopped
there with label l, theta[s, l] >= 0. Maximise the accuracy of sum theta[s, l] T_s under
the hockey-stick rows of rays.py (each party's reveal mass, at most delta_i).

**The dual (the certificate).** A prior pi, b(s) per state and nu >= 0 per hockey row with

    b(s) + sum_rows nu H_s  >=  sum_x pi[x] gain(x, l) T_s[x]   for every s and l     (E1)
    b(s)  >=  w1 b(s1) + w2 b(s2)                                 for every chord       (E2)

prove that every (epsilon_i, delta_i)-DP protocol has prior-average accuracy at most

    bound = sum_{s in {c0, c1}^k} b(s) + sum_rows nu delta_i(row).

(E2) makes the function B on rank-one columns that is multilinear on each product of
sectors (between neighbouring rays) and equal to b on the states concave in each party's
factor; (E1) and the convexity of the Lagrangian inside a sector make it majorise the
accuracy minus nu times the hockey-stick sums; a protocol's messages split factors, so
its transcripts' sum is at most B at the all-ones column (docs/theory.md 7.10 has the
proof). The four-ray certificate is the case b(s) = mu . T_s (equality in (E2)).

Exact (Fractions) and float versions of the chords; the dual is checked and repaired
exactly (`envelope_bound`, `check_envelope`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.records import record
from dpverify.theory.approx.certificate import hockey_keys, product_values
from dpverify.theory.approx.rays import ray_counts
from dpverify.theory.approx.rr import CORNER_0, CORNER_1, REVEAL_0, REVEAL_1

Number = Fraction | float

# repair: the concave function w(s) = prod_j phi(s_j), phi = 1 at the corners and 1/2 at
# the reveal rays, has slack in every chord of a party with lambda > 1
PHI_REVEAL = Fraction(1, 2)


def chord_rules(lam: Number) -> dict[int, tuple[tuple[int, Number, int, Number], ...]]:
    """For each corner, its two chords (target 1, weight 1, target 2, weight 2) (module
    docstring). Exact for a Fraction `lam`."""
    if isinstance(lam, Fraction | int):
        lam = Fraction(lam)
        one: Number = Fraction(1)
    else:
        lam, one = float(lam), 1.0
    near = ((lam - one) / lam, one / lam)
    far = (lam / (one + lam), one / (one + lam))
    return {CORNER_0: ((REVEAL_0, near[0], CORNER_1, near[1]),
                       (REVEAL_0, far[0], REVEAL_1, far[1])),
            CORNER_1: ((REVEAL_1, near[0], CORNER_0, near[1]),
                       (REVEAL_1, far[0], REVEAL_0, far[1]))}


@record(eq=False)
class Chords:
    """Every chord of the grid: at state `source[c]`, party `party[c]` (0-based) at a
    corner is replaced by `target1[c]` with weight `weight1[c]` and `target2[c]` with
    `weight2[c]` (weights floats, or Fractions in object arrays)."""

    source: np.ndarray
    party: np.ndarray
    target1: np.ndarray
    weight1: np.ndarray
    target2: np.ndarray
    weight2: np.ndarray

    def __len__(self) -> int:
        return int(self.source.size)


def state_digits(counts: Sequence[int]) -> np.ndarray:
    """Every state's rays: shape (prod counts, k), party 1 first (mixed radix)."""
    return np.indices(tuple(counts)).reshape(len(counts), -1).T.astype(np.int64)


def chords(lambdas: Sequence[Number], counts: Sequence[int]) -> Chords:
    """The chords of every party with four rays at every state where it is at a corner."""
    digits = state_digits(counts)
    strides = np.array([math.prod(counts[j + 1:]) for j in range(len(counts))],
                       dtype=np.int64)
    exact = all(isinstance(v, Fraction | int) for v in lambdas)
    parts: list[tuple] = []
    for j, (lam, c) in enumerate(zip(lambdas, counts, strict=True)):
        if c < 4:
            continue
        for corner, rules in chord_rules(lam).items():
            at = np.flatnonzero(digits[:, j] == corner)
            base = at - corner * strides[j]
            for t1, w1, t2, w2 in rules:
                parts.append((at, np.full(at.size, j), base + t1 * strides[j],
                              np.full(at.size, w1, dtype=object if exact else np.float64),
                              base + t2 * strides[j],
                              np.full(at.size, w2, dtype=object if exact else np.float64)))
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        weights = np.zeros(0, dtype=object if exact else np.float64)
        return Chords(empty, empty, empty, weights, empty, weights)
    return Chords(*(np.concatenate([p[i] for p in parts]) for i in range(6)))


def root_states(counts: Sequence[int]) -> np.ndarray:
    """The states of corners only: the all-ones column is the sum of their columns."""
    digits = state_digits(counts)
    return np.flatnonzero((digits <= CORNER_1).all(axis=1))


def _phi(counts: Sequence[int]) -> list[Fraction]:
    """w(s) = prod_j phi(s_j) for every state (the repair's concave function)."""
    digits = state_digits(counts)
    return [PHI_REVEAL ** int((row > CORNER_1).sum()) for row in digits]


def chord_slacks(lambdas: Sequence[Fraction], counts: Sequence[int],
                 b: Sequence[Fraction]) -> list[Fraction]:
    """b(source) - w1 b(target1) - w2 b(target2) for every chord, exactly."""
    ch = chords([Fraction(v) for v in lambdas], counts)
    return [b[s] - w1 * b[t1] - w2 * b[t2] for s, t1, w1, t2, w2 in
            zip(ch.source.tolist(), ch.target1.tolist(), ch.weight1.tolist(),
                ch.target2.tolist(), ch.weight2.tolist(), strict=True)]


def stop_values(lambdas: Sequence[Fraction], deltas: Sequence[Fraction],
                label_gains: Sequence[Sequence[Fraction]], prior: Sequence[Fraction],
                b: Sequence[Fraction], nu: Sequence[Fraction]) -> tuple[Fraction, int, int]:
    """The smallest b(s) + nu . H_s - sum_x pi[x] gain(x, l) T_s[x] of (E1) and where it
    is (s, l), exactly."""
    n = len(label_gains)
    values, total = product_values(lambdas, deltas, label_gains, prior, [Fraction(0)] * n,
                                   nu)
    den = math.lcm(*(Fraction(v).denominator for v in b)) if len(b) else 1
    scaled = [int(Fraction(v) * den) for v in b]
    L = values.shape[1]
    best, where = None, (0, 0)
    for s in range(values.shape[0]):
        offset = scaled[s] * total
        row = values[s]
        j = min(range(L), key=lambda lab: row[lab])
        v = offset + den * int(row[j])
        if best is None or v < best:
            best, where = v, (s, j)
    assert best is not None
    return Fraction(best, den * total), where[0], where[1]


@record
class EnvelopeBound:
    """A proved upper bound (normalised gains) on the accuracy of every interactive
    (epsilon_i, delta_i)-DP protocol for one agent: (E1) and (E2) hold exactly for
    (prior, b, nu) at `lambdas` and `deltas`, and bound = sum of b over the corner states
    + sum(nu delta)."""

    bound: Fraction
    prior: tuple[Fraction, ...]
    b: tuple[Fraction, ...]
    nu: tuple[Fraction, ...]
    lambdas: tuple[Fraction, ...]
    deltas: tuple[Fraction, ...]
    shift: Fraction = Fraction(0)  # the repair's constant, added to every b(s)
    bend: Fraction = Fraction(0)  # the repair's multiple of w, added to b


def envelope_total(lambdas: Sequence[Fraction], deltas: Sequence[Fraction],
                   b: Sequence[Fraction], nu: Sequence[Fraction]) -> Fraction:
    """sum_{s in {c0, c1}^k} b(s) + sum_rows nu delta_i(row)."""
    counts = ray_counts(deltas)
    keys = hockey_keys(lambdas, deltas)
    roots = root_states(counts).tolist()
    return sum((Fraction(b[s]) for s in roots), Fraction(0)) + sum(
        (Fraction(v) * Fraction(deltas[key.party - 1]) for v, key in
         zip(nu, keys, strict=True)), Fraction(0))


def envelope_bound(lambdas: Sequence[Fraction], deltas: Sequence[Fraction],
                   label_gains: Sequence[Sequence[Fraction]], prior: Sequence[Fraction],
                   b: Sequence[Fraction], nu: Sequence[Fraction]) -> EnvelopeBound:
    """(prior, b, nu) repaired into a proved bound: nu clipped at 0; for a party at
    lambda = 1 (its corners coincide) b made symmetric in its two corners (the larger
    value); then b + bend w, with the least bend that makes every chord (E2) hold (w has
    slack in every chord of a party with lambda > 1, and the chords of a party at
    lambda = 1 between its corners hold with equality), then b + shift, the least constant
    that makes (E1) hold (a constant keeps (E2): w1 + w2 = 1). `prior` must be a
    distribution."""
    lambdas = [Fraction(v) for v in lambdas]
    deltas = [Fraction(v) for v in deltas]
    prior = [Fraction(v) for v in prior]
    if any(v < 0 for v in prior) or sum(prior, Fraction(0)) != 1:
        raise ValueError("the prior must be a distribution")
    counts = ray_counts(deltas)
    nu = [max(Fraction(v), Fraction(0)) for v in nu]
    b = [Fraction(v) for v in b]
    digits = state_digits(counts)
    strides = [math.prod(counts[j + 1:]) for j in range(len(counts))]
    for j, lam in enumerate(lambdas):
        if lam == 1 and counts[j] == 4:
            for s in np.flatnonzero(digits[:, j] == CORNER_0).tolist():
                t = s + strides[j]  # the same state with party j at corner 1
                b[s] = b[t] = max(b[s], b[t])
    phi = _phi(counts)
    ch = chords(lambdas, counts)
    bend = Fraction(0)
    for s, t1, w1, t2, w2 in zip(ch.source.tolist(), ch.target1.tolist(),
                                 ch.weight1.tolist(), ch.target2.tolist(),
                                 ch.weight2.tolist(), strict=True):
        slack = b[s] - w1 * b[t1] - w2 * b[t2]
        room = phi[s] - w1 * phi[t1] - w2 * phi[t2]
        if slack < 0:
            if room <= 0:
                raise ArithmeticError("a chord between equal corners is violated")
            bend = max(bend, -slack / room)
    if bend:
        b = [v + bend * w for v, w in zip(b, phi, strict=True)]
    low, _, _ = stop_values(lambdas, deltas, label_gains, prior, b, nu)
    shift = -low if low < 0 else Fraction(0)
    if shift:
        b = [v + shift for v in b]
    return EnvelopeBound(envelope_total(lambdas, deltas, b, nu), tuple(prior), tuple(b),
                         tuple(nu), tuple(lambdas), tuple(deltas), shift, bend)


def check_envelope(cert: EnvelopeBound, label_gains: Sequence[Sequence[Fraction]]) -> bool:
    """Whether `cert` proves its bound: a distribution, nu >= 0, (E1) for every (s, l),
    (E2) for every chord, and the bound recomputed."""
    if any(v < 0 for v in cert.prior) or sum(cert.prior, Fraction(0)) != 1:
        return False
    if any(v < 0 for v in cert.nu):
        return False
    counts = ray_counts(cert.deltas)
    if len(cert.b) != math.prod(counts):
        return False
    if any(v < 0 for v in chord_slacks(cert.lambdas, counts, cert.b)):
        return False
    low, _, _ = stop_values(cert.lambdas, cert.deltas, label_gains, cert.prior, cert.b,
                            cert.nu)
    return low >= 0 and envelope_total(cert.lambdas, cert.deltas, cert.b,
                                       cert.nu) == cert.bound
