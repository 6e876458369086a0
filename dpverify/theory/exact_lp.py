"""Exact linear programming: a revised simplex method in rational arithmetic (python-flint).

design.md: a float solve finds the support, then an exact solve and an exact check. The
float solver proposes a basis; this module takes it as the starting point, solves the basis
system exactly, and pivots (exactly) until the reduced costs prove optimality. A good
float basis needs no pivot at all; a poor one needs a few. Every answer is checked at the
end: A z = b, z >= 0 (primal feasibility) and c - y A <= 0 (dual feasibility), so a
returned solution is optimal by LP duality, whatever the float solver did.

Standard form:  maximise c z  subject to  A z = b,  z >= 0.

Each row is scaled to integers first (the solution does not change; the duals are scaled
back), and every iteration solves its basis systems afresh with flint's fraction-free
integer solver, which is faster here than keeping B^-1 up to date in rationals. Pricing is
Dantzig's rule (the largest reduced cost), switching to Bland's rule (the lowest index),
which cannot cycle, after a run of degenerate pivots.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flint import fmpz_mat

from dpverify import clock
from dpverify.records import record

# Degenerate pivots in a row after which pricing switches to Bland's rule for good.
DEGENERATE_RUN = 50


class ExactLpError(ArithmeticError):
    """The exact simplex could not start (a singular or infeasible basis) or finish."""


class PivotLimit(ExactLpError):
    """The exact simplex reached its `max_pivots` without an optimum (its budget: another
    start would pay the same again)."""


@record(eq=False)
class ExactSolution:
    """An optimal basic solution: `z` primal, `y` the duals of the rows (c_B B^-1), so the
    reduced costs are c - y A <= 0; `value` = c z = y b."""

    z: list[Fraction]
    y: list[Fraction]
    value: Fraction
    basis: tuple[int, ...]
    pivots: int


def _fractions(mat: Any) -> list[Fraction]:  # an fmpq_mat
    return [Fraction(int(v.p), int(v.q)) for v in mat.entries()]


class _IntegerLp:
    """The LP with every row (and the cost) scaled to integers: A[i] = scale[i] * rows[i]."""

    def __init__(self, rows: Sequence[Sequence], rhs: Sequence, cost: Sequence) -> None:
        self.m, self.n = len(rows), len(cost)
        self.scale: list[int] = []
        self.cols: list[list[tuple[int, int]]] = [[] for _ in range(self.n)]
        self.b: list[int] = []
        for i, (row, bi) in enumerate(zip(rows, rhs, strict=False)):
            if len(row) != self.n:
                raise ValueError(f"row {i} has {len(row)} entries, not {self.n}")
            if type(bi) is int and all(type(v) is int for v in row):
                # integers already (worst_lp's standard form): scale 1, no Fractions
                # (building them was most of a small exact solve's time)
                self.scale.append(1)
                for j, v in enumerate(row):
                    if v:
                        self.cols[j].append((i, v))
                self.b.append(bi)
                continue
            values = [Fraction(v) for v in row] + [Fraction(bi)]
            s = math.lcm(*(v.denominator for v in values))
            self.scale.append(s)
            for j, v in enumerate(values[:-1]):
                if v:
                    self.cols[j].append((i, int(v * s)))
            self.b.append(int(values[-1] * s))
        costs = [Fraction(v) for v in cost]
        self.cost_scale = math.lcm(*(v.denominator for v in costs))
        self.c = [int(v * self.cost_scale) for v in costs]

    def basis_matrix(self, basis: Sequence[int]) -> fmpz_mat:
        from flint import fmpz_mat  # lazy: python-flint only when the simplex runs

        B = fmpz_mat(self.m, self.m)
        for pos, j in enumerate(basis):
            for i, v in self.cols[j]:
                B[i, pos] = v
        return B

    def column(self, j: int) -> fmpz_mat:
        from flint import fmpz_mat

        col = fmpz_mat(self.m, 1)
        for i, v in self.cols[j]:
            col[i, 0] = v
        return col

    def reduced_costs(self, y: list[Fraction], skip: set[int]) -> dict[int, int]:
        """d_j = c_j - y A_j for every column not in `skip`, as integers over one positive
        common denominator (only signs and comparisons are needed)."""
        den = math.lcm(*(v.denominator for v in y))
        Y = [int(v * den) for v in y]
        out = {}
        for j in range(self.n):
            if j not in skip:
                out[j] = self.c[j] * den - sum(Y[i] * v for i, v in self.cols[j])
        return out


def _solve(B: fmpz_mat, rhs: fmpz_mat) -> list[Fraction]:
    try:
        return _fractions(B.solve(rhs))
    except ZeroDivisionError:
        raise ExactLpError("the basis is singular") from None


def simplex_from_basis(rows: Sequence[Sequence], rhs: Sequence, cost: Sequence,
                       basis: Sequence[int], *, max_pivots: int = 20_000) -> ExactSolution:
    """Maximise cost @ z subject to rows @ z = rhs, z >= 0, exactly, from `basis`.

    `basis` lists one column per row; it must be nonsingular and primal feasible
    (B^-1 rhs >= 0), else ExactLpError is raised and the caller tries another start.
    """
    lp = _IntegerLp(rows, rhs, cost)
    basis = list(basis)
    if len(basis) != lp.m or len(set(basis)) != lp.m:
        raise ExactLpError(f"a basis needs {lp.m} distinct columns, got {len(basis)}")
    from flint import fmpz_mat

    b = fmpz_mat(lp.m, 1, lp.b)
    degenerate, bland = 0, False
    for pivots in range(max_pivots + 1):
        clock.check()  # the run's deadline, once per pivot
        B = lp.basis_matrix(basis)
        x = _solve(B, b)
        if any(v < 0 for v in x):
            raise ExactLpError("the basis is not primal feasible")
        y = _solve(B.transpose(), fmpz_mat(lp.m, 1, [lp.c[j] for j in basis]))
        reduced = lp.reduced_costs(y, set(basis))
        enter = _entering(reduced, bland)
        if enter is None:
            return _solution(lp, basis, x, y, pivots)
        u = _solve(B, lp.column(enter))
        leave = _leaving(x, u, basis)
        if leave is None:
            raise ExactLpError("the LP is unbounded")
        degenerate = degenerate + 1 if x[leave] == 0 else 0
        bland = bland or degenerate >= DEGENERATE_RUN
        basis[leave] = enter
    raise PivotLimit(f"no optimum after {max_pivots} pivots")


def _entering(reduced: dict[int, int], bland: bool) -> int | None:
    positive = [(d, j) for j, d in reduced.items() if d > 0]
    if not positive:
        return None
    if bland:
        return min(j for _, j in positive)
    return max(positive, key=lambda dj: (dj[0], -dj[1]))[1]


def _leaving(x: list[Fraction], u: list[Fraction], basis: list[int]) -> int | None:
    best, ratio = -1, None
    for i, ui in enumerate(u):
        if ui > 0:
            r = x[i] / ui
            if ratio is None or r < ratio or (r == ratio and basis[i] < basis[best]):
                best, ratio = i, r
    return None if best < 0 else best


def _solution(lp: _IntegerLp, basis: list[int], x: list[Fraction], y: list[Fraction],
              pivots: int) -> ExactSolution:
    """The optimal basic solution, checked: A z = b, z >= 0 (dual feasibility was the stop
    test), and the duals of the original rows (y_i scale_i / cost_scale)."""
    z = [Fraction(0)] * lp.n
    for pos, j in enumerate(basis):
        z[j] = x[pos]
    lhs = [Fraction(0)] * lp.m
    for j, zj in enumerate(z):
        if zj:
            for i, v in lp.cols[j]:
                lhs[i] += v * zj
    if lhs != [Fraction(v) for v in lp.b] or any(v < 0 for v in z):
        raise ExactLpError("the final basis is not primal feasible (a bug)")
    duals = [v * s / lp.cost_scale for v, s in zip(y, lp.scale, strict=False)]
    value = Fraction(sum(c * zj for c, zj in zip(lp.c, z, strict=False)), lp.cost_scale)
    return ExactSolution(z=z, y=duals, value=value, basis=tuple(basis), pivots=pivots)
