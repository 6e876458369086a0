"""RR's worst-case decision LP on orbits, in exact arithmetic (KOV 2015, eq. 6; eq. 4 for
a party's own bit; docs/theory.md, "Symmetry").

Standard form, with the gains normalised to [0, 1] (so t >= 0) and the rule constant on
corner orbits:
    sum_{J, y} K[W, J] gain(W, y) q[J, y] - t - s_W = 0     for every relevant input orbit W
    sum_y q[J, y] = 1                                     for every corner orbit J
    maximise t,
with K[W, J] = |J| M[W, J] / |W| (theory/orbits/space.py). The prior's mass on W is the dual of
its row (-y_W). Solved by the exact revised simplex (theory/exact_lp.py) from a float
basis when one is given, else from the crash basis q[J, 0] = 1, t at the least accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

from dpverify.theory.exact import lambda_pq
from dpverify.theory.exact_lp import ExactLpError, simplex_from_basis
from dpverify.theory.orbits.space import OrbitSpace, class_matrix_t, denominator

BasisFinder = Callable[[np.ndarray, np.ndarray, np.ndarray], Sequence[int] | None]


def exact_spread_matrix(space: OrbitSpace) -> list[list[Fraction]]:
    """K[W, J] exactly (a Kronecker product of the classes' matrices)."""
    out = [[Fraction(1)]]
    for n, lam in zip(space.sizes, space.lambdas, strict=True):
        p, q = lambda_pq(lam)
        den = denominator(p, q, n)
        rows = class_matrix_t(p, q, n).entries()
        block = [[Fraction(math.comb(n, j) * int(rows[j * (n + 1) + w]),
                           math.comb(n, w) * den) for j in range(n + 1)] for w in range(n + 1)]
        out = [[a * b for a in row_a for b in row_b] for row_a in out for row_b in block]
    return out


def worst_lp_rows(space: OrbitSpace, gain: list[list[Fraction]], relevant: list[int]):
    """(rows, rhs, cost, crash basis) of the standard form above."""
    K = exact_spread_matrix(space)
    count, m = space.count, len(gain[0])
    nq = count * m
    width = nq + 1 + len(relevant)
    rows, rhs = [], []
    for i, w in enumerate(relevant):
        row = [Fraction(0)] * width
        for j in range(count):
            for y in range(m):
                row[j * m + y] = K[w][j] * gain[w][y]
        row[nq] = Fraction(-1)
        row[nq + 1 + i] = Fraction(-1)
        rows.append(row)
        rhs.append(Fraction(0))
    for j in range(count):
        row = [Fraction(0)] * width
        for y in range(m):
            row[j * m + y] = Fraction(1)
        rows.append(row)
        rhs.append(Fraction(1))
    cost = [Fraction(0)] * width
    cost[nq] = Fraction(1)
    worst = min(range(len(relevant)), key=lambda i: gain[relevant[i]][0])
    crash = [j * m for j in range(count)]
    crash += [nq + 1 + i for i in range(len(relevant)) if i != worst] + [nq]
    return rows, rhs, cost, crash


def exact_orbit_worst(space: OrbitSpace, gain: list[list[Fraction]], relevant: list[int],
                      finder: BasisFinder | None, basis: Sequence[int] | None = None):
    """(rule q[J][y], prior mass per input orbit, value, optimal basis), exactly."""
    rows, rhs, cost, crash = worst_lp_rows(space, gain, relevant)
    starts: list[Sequence[int] | None] = [basis] if basis is not None else []
    if finder is not None:
        floats = np.array([[float(v) for v in row] for row in rows])
        starts.append(finder(floats, np.array([float(v) for v in rhs]),
                             np.array([float(v) for v in cost])))
    starts.append(crash)
    solution = None
    for start in starts:
        if start is None:
            continue
        try:
            solution = simplex_from_basis(rows, rhs, cost, list(start))
            break
        except ExactLpError:
            if start is crash:
                raise
    assert solution is not None  # the crash basis is feasible
    m = len(gain[0])
    rule = [[solution.z[j * m + y] for y in range(m)] for j in range(space.count)]
    mass = [Fraction(0)] * space.count
    for i, w in enumerate(relevant):
        mass[w] = -solution.y[i]
    return rule, mass, solution.value, solution.basis
