"""The solving context of a run: one callable that solves an LP with the run's backend,
threads and tolerances under one time policy (`VerifyOptions.solver()` builds it; every
verifier passes it down instead of unpacking the options at each LP).

The time policy, in one place:

* every LP gets at most the time left in the run (dpverify/clock.py: `verify --timeout`,
  a batch task's limit); when the run's time is up, `TimedOut` is raised (verdict `error`,
  reason `timeout`) rather than a solver status a verifier could mistake for its own;
* an LP whose failure is settled exactly (`exact_fallback`: the corner LP of the method
  `lp`) is abandoned after policy.FLOAT_LP_SECONDS;
* the API's `time_limit`, when given, is the limit of every LP instead (still within the
  run's time);
* a search with a budget of its own (the protocol search under delta > 0) gives each LP
  at most the budget's time left: `solver.at_most(seconds)`.

`LpEngine` is the backend as a function (`dpverify.lp.solve`'s signature): tests inject a
fake one through `VerifyOptions(solve_with=...)` instead of patching module globals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from dpverify import clock
from dpverify.defaults import Backend
from dpverify.lp.basis import FloatBasisFinder, float_basis_finder
from dpverify.lp.model import LinearProgram, LpSolution, LpStatus
from dpverify.lp.solve import solve as lp_solve
from dpverify.policy import FLOAT_LP_SECONDS
from dpverify.records import record

if TYPE_CHECKING:
    from dpverify.lp.highs import GrowingHighs

# (lp, backend, *, time_limit, threads, feasibility_tol) -> LpSolution: dpverify.lp.solve
LpEngine = Callable[..., LpSolution]

__all__ = ["GrowingLp", "LpEngine", "Solver"]


@record
class Solver:
    """Solves LPs for one run (module docstring): `solver(lp)`."""

    backend: Backend = Backend.HIGHS
    threads: int | None = None
    time_limit: float | None = None  # the API's limit per LP (None: the policy's)
    engine: LpEngine | None = None  # None: dpverify.lp.solve
    feasibility_tol: float | None = None  # None: the backend's default (HiGHS: 1e-7)
    exact_fallback: bool = False  # a failure is settled exactly: FLOAT_LP_SECONDS at most

    def __call__(self, lp: LinearProgram) -> LpSolution:
        engine = self.engine if self.engine is not None else lp_solve
        return self.timed(lambda limit: engine(
            lp, self.backend.value, time_limit=limit, threads=self.threads,
            feasibility_tol=self.feasibility_tol))

    def timed(self, run: Callable[[float | None], LpSolution]) -> LpSolution:
        """`run(time_limit)` under the time policy (module docstring): the LP's limit
        within the run's time left; TimedOut when the run's time is up."""
        deadline = clock.current()
        deadline.check()
        limit = self.limit()
        left = deadline.remaining()
        if left is not None:
            limit = left if limit is None else min(limit, left)
        solution = run(limit)
        if solution.status is LpStatus.TIME_LIMIT and deadline.expired:
            raise clock.TimedOut  # the run's time is up: not this LP's failure
        return solution

    def limit(self) -> float | None:
        """This LP's own time limit before the run's deadline (the policy)."""
        if self.time_limit is not None:
            return self.time_limit
        return FLOAT_LP_SECONDS if self.exact_fallback else None

    def at_most(self, seconds: float | None) -> Solver:
        """The same solver giving each LP at most `seconds` (a search's budget left; None:
        no cap of its own), within the run's time as always."""
        if seconds is None:
            return self
        limit = seconds if self.time_limit is None else min(self.time_limit, seconds)
        return replace(self, time_limit=limit)

    def tight(self, feasibility_tol: float) -> Solver:
        """The same solver with primal and dual feasibility tolerances `feasibility_tol`."""
        return replace(self, feasibility_tol=feasibility_tol)

    def settled_exactly(self) -> Solver:
        """The same solver for an LP whose failure is settled exactly (the policy gives it
        FLOAT_LP_SECONDS)."""
        return replace(self, exact_fallback=True)

    def on(self, backend: Backend) -> Solver:
        """The same solver on another backend (the exact simplex's start needs HiGHS's
        basis)."""
        return replace(self, backend=Backend(backend))

    def growing(self, lp: LinearProgram) -> GrowingLp | None:
        """`lp` kept in the backend to grow by rows and be solved again from its last
        basis (constraint generation), under this solver's options and time policy; None
        where the backend cannot (cvxpy, an injected engine: the caller solves each LP
        afresh) or refuses the LP."""
        if self.engine is not None or self.backend is not Backend.HIGHS:
            return None
        from dpverify.lp.highs import GrowingHighs  # lazy: highspy

        try:
            model = GrowingHighs(lp, threads=self.threads, feasibility_tol=self.feasibility_tol)
        except ValueError:
            return None
        return GrowingLp(self, model)

    def basis_finder(self) -> FloatBasisFinder:
        """The exact simplex's starting basis from HiGHS (dpverify.lp.basis), through this
        solver (its threads and time policy)."""
        return float_basis_finder(solve=self.on(Backend.HIGHS))


class GrowingLp:
    """An LP that grows by rows, solved again from its last basis (Solver.growing): each
    solve under the solver's time policy, as `solver(lp)`."""

    def __init__(self, solver: Solver, model: GrowingHighs):
        self.solver, self.model = solver, model

    def add_rows(self, lower, upper, starts, index, values) -> None:
        """Rows in compressed form (lp/highs.py GrowingHighs.add_rows)."""
        self.model.add_rows(lower, upper, starts, index, values)

    def solve(self) -> LpSolution:
        return self.solver.timed(self.model.solve)
