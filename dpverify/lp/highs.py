"""HiGHS backend through highspy's array interface (`HighsLp` + `passModel`).

design.md: build models from arrays, never the expression API; check both `run()`'s
status and `getModelStatus()`; the first `Highs()` of a process prints a banner on
stdout, which must never reach a user's stdout (it would corrupt `--json`).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from dpverify.lp.model import LinearProgram, LpSolution, LpStatus
from dpverify.lp.quiet import stdout_to_devnull

IPM_THRESHOLD = 20_000  # non-zeros above which HiGHS's interior point method is used
SMALL_MATRIX_VALUE = 1e-12  # HiGHS drops smaller matrix entries; refuse such LPs instead
_banner_lock = threading.Lock()
_banner_done = False


def _new_highs() -> Any:
    global _banner_done
    import highspy

    with _banner_lock:
        if _banner_done:
            h = highspy.Highs()
        else:
            with stdout_to_devnull():
                h = highspy.Highs()
            _banner_done = True
    h.setOptionValue("output_flag", False)
    return h


def _UNFINISHED() -> tuple[Any, ...]:
    import highspy

    ms = highspy.HighsModelStatus
    return (ms.kNotset, ms.kSolveError, ms.kUnknown)


def _model_status_table() -> dict[Any, LpStatus]:
    import highspy

    ms = highspy.HighsModelStatus
    return {
        ms.kOptimal: LpStatus.OPTIMAL,
        ms.kInfeasible: LpStatus.INFEASIBLE,
        ms.kUnbounded: LpStatus.UNBOUNDED,
        ms.kUnboundedOrInfeasible: LpStatus.INFEASIBLE,
        ms.kTimeLimit: LpStatus.TIME_LIMIT,
        ms.kIterationLimit: LpStatus.TIME_LIMIT,
        ms.kSolveError: LpStatus.ERROR,
        ms.kModelError: LpStatus.ERROR,
        ms.kLoadError: LpStatus.ERROR,
        ms.kPresolveError: LpStatus.ERROR,
        ms.kPostsolveError: LpStatus.ERROR,
    }


def _failed(status: LpStatus, start: float, message: str) -> LpSolution:
    empty = np.zeros(0)
    return LpSolution(status, float("nan"), empty, empty, time.perf_counter() - start,
                      "highs", message)


def _model(lp: LinearProgram) -> Any:
    """The HighsLp of `lp` (column-wise arrays); entries HiGHS cannot keep are zeroed when
    the LP allows it (`drop_tiny`), else the LP is refused (None): HiGHS would silently drop
    them and solve another LP."""
    import highspy

    A = lp.A  # compressed sparse columns, rows sorted (lp/model.py)
    data = A.data.astype(np.float64)
    if A.nnz and float(np.abs(data).min()) < SMALL_MATRIX_VALUE:
        if not lp.drop_tiny:
            return None
        data = np.where(np.abs(data) < SMALL_MATRIX_VALUE, 0.0, data)
    model = highspy.HighsLp()
    model.num_col_ = lp.num_cols
    model.num_row_ = lp.num_rows
    model.col_cost_ = np.ascontiguousarray(lp.c, dtype=np.float64)
    model.col_lower_ = np.ascontiguousarray(lp.col_lower, dtype=np.float64)
    model.col_upper_ = np.ascontiguousarray(lp.col_upper, dtype=np.float64)
    model.row_lower_ = np.ascontiguousarray(lp.row_lower, dtype=np.float64)
    model.row_upper_ = np.ascontiguousarray(lp.row_upper, dtype=np.float64)
    model.sense_ = highspy.ObjSense.kMaximize if lp.maximize else highspy.ObjSense.kMinimize
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.num_col_ = lp.num_cols
    model.a_matrix_.num_row_ = lp.num_rows
    model.a_matrix_.start_ = A.indptr.astype(np.int32)
    model.a_matrix_.index_ = A.indices.astype(np.int32)
    model.a_matrix_.value_ = data
    return model


def _configure(h: Any, lp: LinearProgram, time_limit: float | None, threads: int | None,
               feasibility_tol: float | None) -> str:
    """Set the options; returns the first algorithm tried."""
    if threads is not None:
        h.setOptionValue("threads", int(threads))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if feasibility_tol is not None:
        for name in ("primal_feasibility_tolerance", "dual_feasibility_tolerance"):
            h.setOptionValue(name, float(feasibility_tol))
    # Measured on the relaxed LPs (k = 9, 10): interior point with crossover is 2-8x
    # faster than dual simplex and still ends at a vertex (a basic optimal solution).
    first = lp.solver or ("ipm" if lp.nnz > IPM_THRESHOLD else "simplex")
    h.setOptionValue("solver", first)
    h.setOptionValue("small_matrix_value", SMALL_MATRIX_VALUE)
    if lp.prescaled:
        # the simplex's own scaling on an LP scaled by its caller: measured on the count
        # post-processing's dense prior LP at n = 200 (402 columns, 1,002 rows, entries in
        # [-1, 1]): 602 dual simplex iterations in 0.55 s unscaled, 1,496 in 1.6 s scaled;
        # the worst case's sub-cube LPs (rows scaled to a largest entry of 1): 1.9 s
        # against 4.8 s for 906 of them (theory/worst_lp.py, solve_float)
        h.setOptionValue("simplex_scale_strategy", 0)
    return first


def _run(h: Any, first: str) -> tuple[Any, Any]:
    """run(), with retries when the solve did not finish (seen: the worst-case RR LP at
    lambda = 1000, k = 8, and the count post-processing LP at n = 40 end `Not Set` after
    presolve): the other algorithm, then presolve off with each algorithm. Whatever a retry
    returns is still checked against an independent computation before any verdict.
    Returns (run status, model status)."""
    import highspy

    run_status = h.run()
    model_status = h.getModelStatus()
    other = "ipm" if first == "simplex" else "simplex"
    for solver, presolve in ((other, "on"), (first, "off"), (other, "off")):
        if run_status != highspy.HighsStatus.kError and model_status not in _UNFINISHED():
            break
        h.setOptionValue("solver", solver)
        h.setOptionValue("presolve", presolve)
        h.clearSolver()
        run_status = h.run()
        model_status = h.getModelStatus()
    return run_status, model_status


def solve_highs(
    lp: LinearProgram, *, time_limit: float | None = None, threads: int | None = None,
    feasibility_tol: float | None = None,
) -> LpSolution:
    """Solve `lp` with HiGHS; never raises for a solver failure, the status says it."""
    import highspy

    start = time.perf_counter()
    h = _new_highs()
    first = _configure(h, lp, time_limit, threads, feasibility_tol)
    model = _model(lp)
    if model is None:
        return _failed(LpStatus.ERROR, start,
                       f"matrix entries below {SMALL_MATRIX_VALUE:g} (HiGHS would drop them)")
    if h.passModel(model) == highspy.HighsStatus.kError:
        return _failed(LpStatus.ERROR, start, "passModel failed")
    return _solution(h, first, start, lp.num_cols, lp.num_rows)


def _solution(h: Any, first: str, start: float, num_cols: int, num_rows: int) -> LpSolution:
    """Run the model passed to `h` (with _run's retries) and read its solution."""
    import highspy

    run_status, model_status = _run(h, first)
    status = _model_status_table().get(model_status, LpStatus.UNKNOWN)
    message = h.modelStatusToString(model_status)
    if run_status == highspy.HighsStatus.kError and status is LpStatus.OPTIMAL:
        status, message = LpStatus.ERROR, "run() returned an error"
    if status is not LpStatus.OPTIMAL:
        return _failed(status, start, message)
    solution = h.getSolution()
    x = np.asarray(solution.col_value, dtype=np.float64)
    duals = np.asarray(solution.row_dual, dtype=np.float64)
    objective = float(h.getInfo().objective_function_value)
    if x.shape != (num_cols,) or duals.shape != (num_rows,) or not np.isfinite(objective):
        return _failed(LpStatus.ERROR, start, "malformed solution")
    # HiGHS reports row duals as d(objective)/d(bound) for both senses (checked by the
    # shared tiny-LP tests in tests/test_lp.py), which is our convention.
    return LpSolution(LpStatus.OPTIMAL, objective, x, duals,
                      time.perf_counter() - start, "highs", message,
                      basic_columns=_basic_columns(h, num_cols))


class GrowingHighs:
    """An LP kept in HiGHS between solves that grows by rows (constraint generation): each
    solve after `add_rows` starts from the last basis (HiGHS's dual simplex: the old basis
    stays dual feasible when rows are added), where a fresh model would start from
    nothing (measured: the count post-processing's ten rounds at n = 200, 3.8 s from
    scratch, about 1 s so). The same options and statuses as solve_highs; `solve` never
    raises for a solver failure."""

    def __init__(self, lp: LinearProgram, *, threads: int | None = None,
                 feasibility_tol: float | None = None):
        import highspy

        self.h = _new_highs()
        self.first = _configure(self.h, lp, None, threads, feasibility_tol)
        model = _model(lp)
        if model is None or self.h.passModel(model) == highspy.HighsStatus.kError:
            raise ValueError(f"HiGHS refuses the LP {lp.name!r} (entries below "
                             f"{SMALL_MATRIX_VALUE:g}, or passModel failed)")
        self.num_cols, self.num_rows = lp.num_cols, lp.num_rows

    def add_rows(self, lower: np.ndarray, upper: np.ndarray, starts: np.ndarray,
                 index: np.ndarray, values: np.ndarray) -> None:
        """Rows lower <= a x <= upper, row i's entries at columns index[starts[i]:starts[i
        + 1]] (compressed rows); entries below SMALL_MATRIX_VALUE are refused."""
        vals = np.asarray(values, dtype=np.float64)
        if vals.size and float(np.abs(vals).min()) < SMALL_MATRIX_VALUE:
            raise ValueError(f"row entries below {SMALL_MATRIX_VALUE:g} (HiGHS would drop "
                             "them)")
        count = int(np.asarray(lower).size)
        self.h.addRows(count, np.asarray(lower, dtype=np.float64),
                       np.asarray(upper, dtype=np.float64), int(vals.size),
                       np.asarray(starts, dtype=np.int32), np.asarray(index, dtype=np.int32),
                       vals)
        self.num_rows += count

    def solve(self, time_limit: float | None = None) -> LpSolution:
        start = time.perf_counter()
        if time_limit is not None:
            self.h.setOptionValue("time_limit", float(time_limit))
        return _solution(self.h, self.first, start, self.num_cols, self.num_rows)


def _basic_columns(h: Any, num_cols: int) -> np.ndarray | None:
    """The columns HiGHS reports basic, when it has a valid basis (None after IPM without
    crossover, or when the basis has basic row logicals: then it is no column basis)."""
    import highspy

    basis = h.getBasis()
    if not basis.valid:
        return None
    basic = highspy.HighsBasisStatus.kBasic
    cols = np.array([s == basic for s in basis.col_status], dtype=bool)
    if cols.shape != (num_cols,) or any(s == basic for s in basis.row_status):
        return None
    return cols
