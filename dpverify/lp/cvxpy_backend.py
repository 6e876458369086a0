"""cvxpy backend (the cross-check): the same LinearProgram, modelled in cvxpy, solved by HiGHS.

Imported lazily (`import cvxpy` costs 1-2 s). Duals are mapped to the convention of
`LpSolution` (d objective / d bound), checked against the shared tiny LPs in tests/test_lp.py.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from dpverify.lp.model import LinearProgram, LpSolution, LpStatus
from dpverify.lp.quiet import stdout_to_devnull


def _status_table() -> dict[str, LpStatus]:
    import cvxpy as cp

    return {
        cp.OPTIMAL: LpStatus.OPTIMAL,
        cp.INFEASIBLE: LpStatus.INFEASIBLE,
        cp.UNBOUNDED: LpStatus.UNBOUNDED,
        cp.OPTIMAL_INACCURATE: LpStatus.UNKNOWN,
        cp.INFEASIBLE_INACCURATE: LpStatus.INFEASIBLE,
        cp.UNBOUNDED_INACCURATE: LpStatus.UNBOUNDED,
        cp.USER_LIMIT: LpStatus.TIME_LIMIT,
        cp.SOLVER_ERROR: LpStatus.ERROR,
    }


def _row_constraints(lp: LinearProgram, x: Any) -> list[tuple[np.ndarray, Any, str]]:
    """The rows as three cvxpy constraints: equalities, `<=` rows and `>=` rows (a ranged
    row is in the last two)."""
    A = lp.A.to_scipy().tocsr()
    eq = np.isfinite(lp.row_lower) & (lp.row_lower == lp.row_upper)
    up = np.isfinite(lp.row_upper) & ~eq
    lo = np.isfinite(lp.row_lower) & ~eq
    groups = []
    for mask, kind in ((eq, "eq"), (up, "up"), (lo, "lo")):
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            continue
        block = A[rows]
        if kind == "eq":
            con = block @ x == lp.row_lower[rows]
        elif kind == "up":
            con = block @ x <= lp.row_upper[rows]
        else:
            con = block @ x >= lp.row_lower[rows]
        groups.append((rows, con, kind))
    return groups


def _column_bounds(lp: LinearProgram, x: Any) -> list[Any]:
    out: list[Any] = []
    lower = np.flatnonzero(np.isfinite(lp.col_lower))
    upper = np.flatnonzero(np.isfinite(lp.col_upper))
    if lower.size:
        out.append(x[lower] >= lp.col_lower[lower])
    if upper.size:
        out.append(x[upper] <= lp.col_upper[upper])
    return out


def solve_cvxpy(lp: LinearProgram, *, time_limit: float | None = None,
                feasibility_tol: float | None = None) -> LpSolution:
    import cvxpy as cp

    start = time.perf_counter()
    x = cp.Variable(lp.num_cols)
    groups = _row_constraints(lp, x)  # (row indices, constraint, kind)
    constraints: list[Any] = [con for _, con, _ in groups] + _column_bounds(lp, x)
    objective = cp.Maximize(lp.c @ x) if lp.maximize else cp.Minimize(lp.c @ x)
    problem = cp.Problem(objective, constraints)
    options = {}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    if feasibility_tol is not None:
        options["primal_feasibility_tolerance"] = float(feasibility_tol)
        options["dual_feasibility_tolerance"] = float(feasibility_tol)
    empty = np.zeros(0)
    try:
        with stdout_to_devnull(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Solution may be inaccurate": the status says it
            problem.solve(solver=cp.HIGHS, **options)
    except cp.error.SolverError as exc:
        return LpSolution(LpStatus.ERROR, float("nan"), empty, empty,
                          time.perf_counter() - start, "cvxpy", str(exc).splitlines()[0])
    status = _status_table().get(problem.status, LpStatus.UNKNOWN)
    if status is not LpStatus.OPTIMAL:
        return LpSolution(status, float("nan"), empty, empty,
                          time.perf_counter() - start, "cvxpy", str(problem.status))
    duals = np.zeros(lp.num_rows)
    for rows, con, kind in groups:
        value = np.asarray(con.dual_value, dtype=np.float64).reshape(-1)
        # cvxpy: duals of `<=` and `>=` are >= 0 for the problem as posed, and an
        # equality's dual has the sign of a `<=` row's. Map to d objective / d b.
        sign = {"eq": 1.0, "up": 1.0, "lo": -1.0}[kind]
        if not lp.maximize:
            sign = -sign
        duals[rows] += sign * value  # a ranged row has a <= and a >= part
    return LpSolution(LpStatus.OPTIMAL, float(problem.value), np.asarray(x.value, dtype=float),
                      duals, time.perf_counter() - start, "cvxpy", str(problem.status))
