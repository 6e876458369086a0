"""Backend dispatch: one name per backend, solver objects never leave their module."""

from __future__ import annotations

from dpverify.defaults import BACKENDS  # noqa: F401  (re-exported)
from dpverify.lp.model import LinearProgram, LpSolution


def solve(
    lp: LinearProgram,
    backend: str = "highs",
    *,
    time_limit: float | None = None,
    threads: int | None = None,
    feasibility_tol: float | None = None,
) -> LpSolution:
    """Solve `lp` with the named backend. A failure is reported in the status, not raised.

    `feasibility_tol` tightens the solver's primal and dual feasibility tolerances
    (HiGHS's default is 1e-7, coarser than dpverify's default verdict tolerance)."""
    if backend == "highs":
        from dpverify.lp.highs import solve_highs

        return solve_highs(lp, time_limit=time_limit, threads=threads,
                           feasibility_tol=feasibility_tol)
    if backend == "cvxpy":
        from dpverify.lp.cvxpy_backend import solve_cvxpy  # lazy: importing cvxpy takes 1-2 s

        return solve_cvxpy(lp, time_limit=time_limit, feasibility_tol=feasibility_tol)
    raise ValueError(f"unknown LP backend {backend!r}: choose one of {', '.join(BACKENDS)}")
