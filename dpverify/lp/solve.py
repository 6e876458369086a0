"""Backend dispatch: one name per backend, solver objects never leave their module."""

from __future__ import annotations

from dpverify.lp.model import LinearProgram, LpSolution

BACKENDS = ("highs", "cvxpy")


def solve(
    lp: LinearProgram,
    backend: str = "highs",
    *,
    time_limit: float | None = None,
    threads: int | None = None,
) -> LpSolution:
    """Solve `lp` with the named backend. A failure is reported in the status, not raised."""
    if backend == "highs":
        from dpverify.lp.highs import solve_highs

        return solve_highs(lp, time_limit=time_limit, threads=threads)
    if backend == "cvxpy":
        from dpverify.lp.cvxpy_backend import solve_cvxpy  # lazy: importing cvxpy takes 1-2 s

        return solve_cvxpy(lp, time_limit=time_limit)
    raise ValueError(f"unknown LP backend {backend!r}: choose one of {', '.join(BACKENDS)}")
