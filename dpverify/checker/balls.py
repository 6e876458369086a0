"""arb balls (python-flint: outward rounded, with exponents that never under- or overflow)
for interval certificates on orbits (`dpverify-orbit-interval-certificate/1`; docs/theory.md
2.13): a class's orbit transform whose entries are balls, for checker/factors.py's one
transform, and the ends of sums of balls.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from flint import arb, arb_poly, fmpq

from dpverify.checker.core import Grid
from dpverify.checker.factors import Factor, transform
from dpverify.checker.fields import Matrix

ARB_BITS = 96  # arb's working precision on orbits


def ball(x: Fraction) -> Any:
    return arb(fmpq(x.numerator, x.denominator))


def upper_end(b: Any) -> Fraction:
    man, exp = b.upper().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def lower_end(b: Any) -> Fraction:
    man, exp = b.lower().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


class BallClass:
    """A class of n parties at lambda = p / q on the number of ones (theory.md 2.8), in
    balls: sum_j y_j A^j B^(n - j) with A = (p z + q) / (p + q), B = (p + q z) / (p + q),
    the masses' transform (ClassOrbits of checker/factors.py, normalised), split in halves
    recursively. The powers of A and B are kept for this certificate only."""

    def __init__(self, n: int, lam: Fraction):
        p, q = lam.numerator, lam.denominator
        s = ball(Fraction(p + q))
        self.n = n
        self.base = {"A": arb_poly([ball(Fraction(q)) / s, ball(Fraction(p)) / s]),
                     "B": arb_poly([ball(Fraction(p)) / s, ball(Fraction(q)) / s])}
        self.cache: dict[tuple[str, int], Any] = {}

    @property
    def points(self) -> int:
        return self.n + 1

    @property
    def size(self) -> int:
        return self.n + 1

    @property
    def scale(self) -> int:
        return 1

    def power(self, name: str, e: int) -> Any:
        if e == 0:
            return arb_poly([1])
        if e == 1:
            return self.base[name]
        if (name, e) not in self.cache:
            self.cache[(name, e)] = self.power(name, e // 2) * self.power(name, e - e // 2)
        return self.cache[(name, e)]

    def mix(self, chunks: list[list[Any]]) -> list[list[Any]]:
        fibers = [self.fiber(list(y)) for y in zip(*chunks, strict=True)]
        return [list(column) for column in zip(*fibers, strict=True)]

    def fiber(self, y: list[Any]) -> list[Any]:
        def half(lo: int, hi: int) -> Any:
            if hi - lo == 1:
                return arb_poly([y[lo]])
            mid = (lo + hi) // 2
            return half(lo, mid) * self.power("B", hi - mid) + \
                self.power("A", mid - lo) * half(mid, hi)

        coeffs = half(0, self.n + 1).coeffs()
        return list(coeffs) + [arb(0)] * (self.n + 1 - len(coeffs))


def class_factors(sizes: Sequence[int], lambdas: Sequence[Fraction]) -> tuple[Factor, ...]:
    return tuple(BallClass(n, lam) for n, lam in zip(sizes, lambdas, strict=True))


def label_scores(grid: Grid, factors: Sequence[Factor], prior: Sequence[Any],
                 gain: Sequence[Sequence[Fraction]]) -> list[list[list[Any]]]:
    """Per part b and output y, M (prior g'_y 1_part): the masses of the corner sums."""
    g = [[ball(v) for v in row] for row in gain]
    return [[transform(factors, [p * row[y] if part == b else arb(0)
                                 for p, row, part in zip(prior, g, grid.part, strict=True)])
             for y in range(len(gain[0]))] for b in range(grid.parts)]


def ball_sum(best: Sequence[Sequence[Any]]) -> Any:
    """The sum, in arb (outward rounded), over parts and corner orbits."""
    total = arb(0)
    for part in best:
        for value in part:
            total += value
    return total


def rule_value(grid: Grid, factors: Sequence[Factor], rules: list[Matrix],
               gain: Sequence[Sequence[Fraction]]) -> Fraction:
    """A lower end of min_W sum_y g'(W, y) (M (|J| Q_y))_W / |W|."""
    count, m = len(grid.mass), len(gain[0])
    acc = [arb(0)] * count
    sizes = [arb(s) for s in grid.mass]
    for b, rule in enumerate(rules):
        for y in range(m):
            spread = transform(factors, [ball(rule[j][y]) * sizes[j] if rule[j][y] else arb(0)
                                         for j in range(count)])
            for w in range(count):
                if grid.part[w] == b and gain[w][y]:
                    acc[w] += ball(gain[w][y]) * spread[w] / sizes[w]
    return min(lower_end(a) for a in acc)
