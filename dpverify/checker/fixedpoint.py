"""Fixed point on Python integers, for interval certificates on all 2^k inputs
(`dpverify-interval-certificate/1`; docs/theory.md 2.13): the transform of checker/factors.py
for RR's corner matrices, with every entry rounded down, on up to 2^20 inputs.

A non-negative number x in [0, 1] is the integer floor(x 2^F). S_i = [[p, q], [q, p]] /
(p + q) is applied as floor((a lo + b hi) / 2^G) with a = floor(2^G p / (p + q)),
b = floor(2^G q / (p + q)): every step rounds down and every weight is non-negative, so
each computed entry is at most the exact one, and at most E = 2k + 2 units below it (the
inputs' floor, then per pass at most 2^(F + 1 - G) <= 1/2 for the weights and 1 for the
floor: the exact weights of a row sum to 1, so earlier errors are not amplified). An
entry is thus a ball [c, c + E] (units 2^-F). The 2^k entries of a column are fields of
W bits of one Python integer, so a pass is a few operations on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from dpverify.checker import core
from dpverify.checker.fields import Matrix

# F: fixed-point fraction bits. The average's error is 2k + 3 units per score whatever the
# outputs; a worst case's rule value adds up to one error per output (m (2k + 2) units),
# so it gets 10 bits more (the construction leaves 2^-46 of room: m up to about 25,000).
FRACTION_BITS = 56
WORST_BITS = 66  # (plus log2 of the inputs for a prior)
WEIGHT_GUARD = 2  # G = F + 2
Units = Sequence[tuple[Fraction, ...]]  # gain rows in [0, 1], one per distinct f(x)


class Packed:
    """Columns of 2^k non-negative integers, each a field of `width` bytes of one Python
    integer (column c, input x at field c 2^k + x; x1 the most significant bit of x)."""

    def __init__(self, k: int, columns: list[list[int]], fraction: int):
        self.k, self.count, self.fraction = k, len(columns), fraction
        self.guard = fraction + WEIGHT_GUARD
        self.width = (fraction + self.guard + 2 + 7) // 8
        w = self.width
        encoded: dict[int, bytes] = {}

        def encode(v: int) -> bytes:
            out = encoded.get(v)
            if out is None:
                out = encoded[v] = v.to_bytes(w, "little")
            return out

        self.value = int.from_bytes(b"".join([encode(v) for col in columns for v in col]),
                                    "little")

    def fields(self, count: int, pattern: bytes) -> int:
        return int.from_bytes(pattern * count, "little")

    def transform(self, lambdas: Sequence[Fraction]) -> None:
        """Every column times S = S_1 (x) ... (x) S_k, rounded down (module docstring)."""
        k, w, g = self.k, self.width, self.guard
        fields = self.count << k
        keep = self.fields(fields, ((1 << (8 * w - g)) - 1).to_bytes(w, "little"))
        for i, lam in enumerate(lambdas):
            p, q = lam.numerator, lam.denominator
            a, b = (p << g) // (p + q), (q << g) // (p + q)
            d = 1 << (k - 1 - i)  # the distance of party i + 1's bit
            shift = 8 * w * d
            low = self.fields(fields // (2 * d), b"\xff" * (w * d) + bytes(w * d))
            v = self.value
            swapped = ((v & low) << shift) | ((v >> shift) & low)
            self.value = ((a * v + b * swapped) >> g) & keep

    def columns(self) -> list[list[int]]:
        """Every column as a list of 2^k integers."""
        n, w = 1 << self.k, self.width
        raw = self.value.to_bytes(self.count * n * w, "little")
        return [[int.from_bytes(raw[i:i + w], "little")
                 for i in range(c * n * w, (c + 1) * n * w, w)] for c in range(self.count)]


def scores(k: int, lambdas: Sequence[Fraction], columns: list[list[int]], fraction: int
           ) -> list[list[int]]:
    """The columns transformed at `lambdas`, rounded down."""
    packed = Packed(k, columns, fraction)
    packed.transform(lambdas)
    return packed.columns()


def error_units(k: int) -> int:
    """E: the most a computed entry is below the exact one, in units 2^-F."""
    return 2 * k + 2


def average_bits(grid: core.Grid, up: Sequence[Fraction], lo: Sequence[Fraction], rows: Units,
                 idx: list[int]) -> tuple[Fraction, Fraction]:
    """Uniform prior: per part and output y the column floor(g'(x, y) 2^F) (1 unit below
    g' at most) transformed at the upper lambdas (E units more), the best score of each
    corner summed (times 2^-k, the prior). With E + 1 units per corner and part added,
    the bound; as computed (lower ends), the value of their argmax rule, moved to the
    lower lambdas by the coupling bound (one transform, not two)."""
    k, n, F = len(up), len(idx), FRACTION_BITS
    units = [[(g.numerator << F) // g.denominator for g in row] for row in rows]
    columns = [[units[i][y] if b == part else 0 for i, part in zip(idx, grid.part, strict=True)]
               for b in range(grid.parts) for y in range(len(rows[0]))]
    total = _best_sum(scores(k, up, columns, F), grid.parts)
    scale = Fraction(1, n << F)
    bound = (total + n * grid.parts * (error_units(k) + 1)) * scale
    # The argmax rule of these (rounded-down) scores has accuracy at least total * scale at
    # the upper lambdas, and at the lower ones at most sum_i rho(lo_i) - rho(up_i) less
    # (rho = 1 / (1 + lambda): couple each party's flips; the gains are in [0, 1]).
    moved = sum((1 / (1 + a) - 1 / (1 + b) for a, b in zip(lo, up, strict=True)),
                Fraction(0))
    return bound, total * scale - moved


def _best_sum(columns: list[list[int]], parts: int) -> int:
    """The sum over corners and parts of the best output's score."""
    m = len(columns) // parts
    split = [columns[b * m:(b + 1) * m] for b in range(parts)]
    return sum(sum(best) for best in core.best_scores(split, max))


def halvings(top: Fraction) -> int:
    """The largest t >= 0 with top 2^t <= 1 (top > 0; top 2^t then lies in (1/2, 1] when
    top <= 1), from the bit lengths of its numerator and denominator: constant work
    however small a crafted prior makes top."""
    p, q = top.numerator, top.denominator
    e = q.bit_length() - p.bit_length()  # floor(log2(q / p)) is e or e - 1
    if e >= 0 and (p << e) > q:
        e -= 1
    return max(e, 0)


def prior_bound_bits(grid: core.Grid, up: Sequence[Fraction], prior: list[Fraction], rows: Units,
                     idx: list[int]) -> Fraction:
    """An upper end of sum_s sum_parts max_y S (prior g'_y 1_part)[s]: the columns scaled
    by 2^t (the largest entry in [1/2, 1]) with F + k fraction bits."""
    k, n = len(up), len(idx)
    top = max(prior[x] * max(rows[idx[x]]) for x in range(n))
    if top == 0:
        return Fraction(0)
    F = WORST_BITS + k
    scale = 2 ** (F + halvings(top))
    columns = [[math.floor(prior[x] * rows[idx[x]][y] * scale) if grid.part[x] == b else 0
                for x in range(n)] for b in range(grid.parts) for y in range(len(rows[0]))]
    total = _best_sum(scores(k, up, columns, F), grid.parts)
    return Fraction(total + n * grid.parts * error_units(k), scale)


def rule_value_bits(grid: core.Grid, lo: Sequence[Fraction], rules: list[Matrix], rows: Units,
                    idx: list[int]) -> Fraction:
    """A lower end of min_x sum_y g'(x, y) (S Q_(b(x), y))[x]: the rule's columns in fixed
    point rounded down, transformed (rounded down), weighted by the exact g' >= 0."""
    k, n, F = len(lo), len(idx), WORST_BITS
    m = len(rules[0][0])
    one = 1 << F
    columns = [[math.floor(rule[tau][y] * one) for tau in range(n)]
               for rule in rules for y in range(m)]
    spread = scores(k, lo, columns, F)
    den = math.lcm(*(g.denominator for row in rows for g in row))
    coef = [[int(g * den) for g in row] for row in rows]
    best = min(sum(coef[idx[x]][y] * spread[grid.part[x] * m + y][x] for y in range(m))
               for x in range(n))
    return Fraction(best, den * one)
