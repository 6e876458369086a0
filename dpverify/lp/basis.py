"""A starting basis for an exact simplex, from a float solve (design.md: floats find the
support, exact arithmetic proves it).

The exact revised simplex (dpverify.theory.exact_lp) starts from a basis: one column per row
of a standard-form LP (maximise cost z, rows z = rhs, z >= 0). `float_basis_finder` gives a
callable that solves the float twin of such an LP with HiGHS and returns the columns of its
optimal basis, or None. Only a starting point: the exact simplex checks it and pivots on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from dpverify.lp.builder import LpBuilder
from dpverify.lp.model import LinearProgram, LpSolution
from dpverify.lp.solve import solve as solve_lp

# (dense float rows, rhs, cost) -> the columns of an optimal basis (one per row), or None
# (dpverify.theory.worst_lp.BasisFinder)
FloatBasisFinder = Callable[[np.ndarray, np.ndarray, np.ndarray], Sequence[int] | None]


def float_basis_finder(*, solve: Callable[[LinearProgram], LpSolution] | None = None
                       ) -> FloatBasisFinder:
    """A basis finder backed by HiGHS: the optimal basis of the float twin of an exact
    standard-form LP, each row scaled to a largest entry of 1 (entries HiGHS cannot keep
    are dropped: a starting basis needs no more). `solve` solves it on HiGHS (the run's
    solving context, verifiers/solving.py, Solver.basis_finder), else plain HiGHS."""

    def find(rows: np.ndarray, rhs: np.ndarray, cost: np.ndarray) -> list[int] | None:
        scale = np.max(np.abs(rows), axis=1)
        scale[scale == 0] = 1.0
        b = LpBuilder()
        cols = b.add_cols(rows.shape[1], cost=cost)
        eq = b.add_rows(rows.shape[0], rhs / scale, rhs / scale)
        b.add_matrix(eq, cols, rows / scale[:, None])
        lp = b.build(maximize=True, name="exact-twin", drop_tiny=True)
        sol = solve(lp) if solve is not None else solve_lp(lp, "highs")
        if not sol.optimal or sol.basic_columns is None:
            return None
        basic = np.flatnonzero(sol.basic_columns)
        return basic.tolist() if basic.size == rows.shape[0] else None

    return find
