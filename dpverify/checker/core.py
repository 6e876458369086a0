"""The one checking core: every certificate format is read into this representation and
checked by the routines below (docs/theory.md 2.1-2.4, 2.8, 6.5, 7.4).

**The representation.** A `Grid` of inputs: one axis per party (its bit or symbol) or per
class of interchangeable parties (the number of ones in the class), `mass[x]` inputs at
point x (an orbit's size |W|; 1 without classes), and the part of a label each point
belongs to (a party agent's own bit or symbol; one part for the observer). The all-input
format is the orbit format with classes of one party; the multi-symbol and delta formats
have one axis per party. On top of it:

* `Dual`, an upper end (theory.md 2.1): per-axis ray matrices (`factors.py`: RR's corners,
  a class's orbit transform, the extreme rays of 6.2, the four rays of 7.4), the prior and
  gains on the grid, and the terms of the left-hand side (mu; with delta, nu through the
  hockey-stick parts of the rays). `check_dual` checks, for every product s of rays,

      sum_terms (K_t c_t)[s]  >=  sum_parts max_y (K (prior gain_y 1_part))[s]           (C)

  where K c = sum_x prod_i F_i[x_i][s_i] c[x], every column weighted by the masses (on
  orbits both sides are then |J| times those of (C'), theory.md 2.8, for the corner orbit
  J = s: the same inequality). For a party the label (y_b per own bit or symbol b)
  separates into one maximum per part, so this is (C) for every label (theory.md 2.3).
  (C) for every s proves OPT <= the bound (Claims 1 and 2 of theory.md 2.1; (C') of 2.8,
  (C'') of 6.5, (D) of 7.4).
* `Protocol`, a lower end (theory.md 2.4): per-axis channels read backwards (P(t | x)),
  one decision rule per part on the transcripts; `accuracy` recomputes its exact value.

The interval formats (checker/intervals.py) read into the same grid and take their bound
from `best_scores` of the same right-hand sides, computed in outward-rounded arithmetic.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeVar

from dpverify.checker import factors
from dpverify.checker.claim import CheckFailed
from dpverify.checker.fields import Matrix

T = TypeVar("T")
Describe = Callable[[int, tuple[int, ...], Fraction, Fraction], str]
Gains = tuple[tuple[Fraction, ...], ...]  # per point and output


@dataclass(frozen=True)
class Grid:
    """The certificate's inputs: axis i has `sizes[i]` points; point x (mixed radix, axis 1
    most significant) holds `mass[x]` inputs and belongs to part `part[x]` of a label."""

    sizes: tuple[int, ...]
    mass: tuple[int, ...]
    part: tuple[int, ...]
    parts: int

    def points(self) -> list[tuple[int, ...]]:
        """Every point as its coordinates, in order."""
        return list(itertools.product(*(range(n) for n in self.sizes)))


def party_grid(alphabets: Sequence[int], party: int) -> Grid:
    """One axis per party (`alphabets[i]` symbols); parts: the own symbol of party `party`
    (1-based), or one part for the observer (0)."""
    count = math.prod(alphabets)
    if not party:
        return Grid(tuple(alphabets), (1,) * count, (0,) * count, 1)
    stride, m = math.prod(alphabets[party:]), alphabets[party - 1]
    return Grid(tuple(alphabets), (1,) * count,
                tuple((x // stride) % m for x in range(count)), m)


def class_grid(sizes: Sequence[int], own: int | None) -> Grid:
    """One axis per class of `sizes[c]` parties (0..n_c ones, |W| = prod_c C(n_c, w_c)
    inputs per orbit); parts: the ones of class `own` (a party agent's own party alone),
    or one part (own None). Classes of one party are the inputs themselves."""
    grid = party_grid([n + 1 for n in sizes], 0 if own is None else own + 1)
    mass = [1]
    for n in sizes:
        mass = [a * math.comb(n, w) for a in mass for w in range(n + 1)]
    return Grid(grid.sizes, tuple(mass), grid.part, grid.parts)


# ------------------------------------------------------------------ the upper end


@dataclass(frozen=True)
class Term:
    """One term of (C)'s left-hand side: sum_x prod_i F_i[x_i][s_i] column[x]."""

    factors: tuple[factors.Factor, ...]
    column: tuple[Fraction, ...]


@dataclass(frozen=True)
class Dual:
    """An upper end in the one representation: (C) for every product s of the rays."""

    grid: Grid
    rays: tuple[factors.Factor, ...]
    prior: tuple[Fraction, ...]  # per input, at each point
    gain: Gains
    left: tuple[Term, ...]  # columns already weighted by the masses


def right_columns(grid: Grid, prior: Sequence[Fraction],
                  gain: Sequence[Sequence[Fraction]]) -> list[list[list[Fraction]]]:
    """columns[b][y][x] = prior[x] gain[x][y] mass[x] on the points of part b, else 0."""
    return [[[p * g[y] * s if b == part else Fraction(0)
              for p, g, s, part in zip(prior, gain, grid.mass, grid.part, strict=True)]
             for y in range(len(gain[0]))] for b in range(grid.parts)]


def best_scores(scores: Sequence[Sequence[Sequence[T]]],
                best: Callable[[Sequence[T]], T]) -> list[list[T]]:
    """scores[b][y][s] -> per part b and product s the best output's score."""
    return [[best(column) for column in zip(*part, strict=True)] for part in scores]


def check_dual(dual: Dual, describe: Describe) -> None:
    """(C) for every product s of rays, in integers: every column over one common
    denominator, both sides at one common scale (the factors' scales differ with delta).
    The first failure raises CheckFailed with `describe(s, label, left, right)`: the best
    label at s and both sides, exactly."""
    m, count = len(dual.gain[0]), len(dual.left)
    right = [c for part in right_columns(dual.grid, dual.prior, dual.gain) for c in part]
    ints, den = integer_columns([list(t.column) for t in dual.left] + right)
    left = [(factors.transform(t.factors, c), scale_of(t.factors))
            for t, c in zip(dual.left, ints[:count], strict=True)]
    scores = [[factors.transform(dual.rays, c)
               for c in ints[count + b * m:count + (b + 1) * m]] for b in range(dual.grid.parts)]
    best = [sum(values) for values in zip(*best_scores(scores, max), strict=True)]
    sides = left + [(best, scale_of(dual.rays))]
    scale = math.lcm(*(z for _, z in sides))
    lhs, rhs = rescaled(left, scale), rescaled(sides[-1:], scale)
    for s, (a, b) in enumerate(zip(lhs, rhs, strict=True)):
        if a < b:
            label = tuple(max(range(m), key=lambda y: part[y][s]) for part in scores)
            raise CheckFailed(describe(s, label, Fraction(a, den * scale),
                                       Fraction(b, den * scale)))


def integer_columns(columns: list[list[Fraction]]) -> tuple[list[list[int]], int]:
    """The columns' numerators over one common denominator (the least)."""
    den = math.lcm(*(v.denominator for c in columns for v in c))
    return [[v.numerator * (den // v.denominator) for v in c] for c in columns], den


def scale_of(axes: Sequence[factors.Factor]) -> int:
    return math.prod(f.scale for f in axes)


def rescaled(vectors: Sequence[tuple[list[int], int]], scale: int) -> list[int]:
    """sum_t vector_t (scale / scale_t), entry by entry: integers at one scale."""
    out = [v * (scale // vectors[0][1]) for v in vectors[0][0]]
    for vector, own in vectors[1:]:
        out = [a + v * (scale // own) for a, v in zip(out, vector, strict=True)]
    return out


# ------------------------------------------------------------------ the lower end


@dataclass(frozen=True)
class Protocol:
    """A lower end: a protocol given per axis by its channel read backwards
    (F[t][x] = P(t | x), times its scale), `weights[t]` transcripts at each transcript
    point (|J| on corner orbits, else 1), and a decision rule per part,
    rules[b][t][y] (rows distributions)."""

    grid: Grid
    channels: tuple[factors.Factor, ...]
    weights: tuple[int, ...]
    rules: tuple[Matrix, ...]
    gain: Gains


def accuracy(protocol: Protocol, kind: str) -> Fraction:
    """The protocol's exact accuracy with its rules (theory.md 2.4): on an input x at point
    x, acc(x) = sum_y gain[x][y] sum_t P(t | x) rules[part(x)][t][y]; then the mean over
    the inputs (`average`) or the minimum (`worst`). In integers: the rules' columns and
    the gains each over one denominator, totals[x] = |x| acc(x) times `scale`."""
    grid, m = protocol.grid, len(protocol.gain[0])
    ints, den = integer_columns([[rule[t][y] * w for t, w in enumerate(protocol.weights)]
                                 for rule in protocol.rules for y in range(m)])
    spread = [factors.transform(protocol.channels, c) for c in ints]
    gains, gain_den = integer_columns([list(row) for row in protocol.gain])
    totals = [sum(g[y] * spread[b * m + y][x] for y in range(m) if g[y])
              for x, (g, b) in enumerate(zip(gains, grid.part, strict=True))]
    scale = den * gain_den * scale_of(protocol.channels)
    if kind == "worst":
        return min(Fraction(t, s) for t, s in zip(totals, grid.mass, strict=True)) / scale
    return Fraction(sum(totals), scale * sum(grid.mass))
