"""One shared set of tiny LPs with known optimum and duals, run against every backend.

The dual convention of `LpSolution.row_duals` (dpverify.lp.model) is d objective / d b,
where b is the row's active bound, for both senses. Each case states its duals worked
out by hand, and `test_duals_are_derivatives` checks the convention independently by
finite differences (re-solving with a perturbed bound), so a sign slip in a backend
cannot hide behind a sign slip in a hand-written number.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, replace

import numpy as np
import pytest
import scipy.sparse as sp

from dpverify.lp import BACKENDS, LinearProgram, LpStatus, solve

INF = np.inf
TOL = 1e-9


def make_lp(c, A, row_lower, row_upper, col_lower, col_upper, maximize, name) -> LinearProgram:
    return LinearProgram(
        c=np.asarray(c, dtype=float), A=sp.csc_matrix(np.asarray(A, dtype=float)),
        row_lower=np.asarray(row_lower, dtype=float), row_upper=np.asarray(row_upper, dtype=float),
        col_lower=np.asarray(col_lower, dtype=float), col_upper=np.asarray(col_upper, dtype=float),
        maximize=maximize, name=name,
    )


@dataclass(frozen=True)
class Case:
    lp: LinearProgram
    status: LpStatus
    objective: float | None = None
    x: tuple[float, ...] | None = None
    duals: tuple[float, ...] | None = None


CASES = {
    # max 3x + 2y  s.t.  x + y <= 4,  x + 3y <= 6,  x, y >= 0.
    # Vertices (4,0): 12, (3,1): 11, (0,2): 4 -> x = (4, 0), objective 12.
    # Row 1 is active: raising its bound to 4 + d gives x = 4 + d, objective 12 + 3d -> 3.
    # Row 2 is slack -> 0. (Non-degenerate: y >= 0 has reduced cost 3 - 2 = 1 > 0.)
    "max-le": Case(
        make_lp([3, 2], [[1, 1], [1, 3]], [-INF, -INF], [4, 6], [0, 0], [INF, INF], True, "max-le"),
        LpStatus.OPTIMAL, 12.0, (4.0, 0.0), (3.0, 0.0)),
    # min 2x + 3y  s.t.  x + y >= 2,  x + 2y >= 3,  x, y >= 0.
    # Vertices (0,2): 6, (1,1): 5, (3,0): 6 -> x = (1, 1), objective 5, both rows active.
    # Solving 2 = u1 + u2, 3 = u1 + 2 u2 gives u = (1, 1): raising either lower bound by d
    # raises the cost by d, so d objective / d b = +1 for both.
    "min-ge": Case(
        make_lp([2, 3], [[1, 1], [1, 2]], [2, 3], [INF, INF], [0, 0], [INF, INF], False,
                "min-ge"),
        LpStatus.OPTIMAL, 5.0, (1.0, 1.0), (1.0, 1.0)),
    # max 2x - y  s.t.  x - y = 1,  x + y <= 5,  x >= 0, y free.
    # x = b1 + y, b1 + 2y <= b2 -> y = (b2 - b1)/2, objective 2 b1 + y = 1.5 b1 + 0.5 b2
    # = 4 at (b1, b2) = (1, 5): x = (3, 2), duals (1.5, 0.5).
    "max-eq-free": Case(
        make_lp([2, -1], [[1, -1], [1, 1]], [1, -INF], [1, 5], [0, -INF], [INF, INF], True,
                "max-eq-free"),
        LpStatus.OPTIMAL, 4.0, (3.0, 2.0), (1.5, 0.5)),
    # max -x + y  s.t.  x - y >= -4 (i.e. y <= x + 4),  x + y >= 1,  0 <= x <= 5, 0 <= y <= 3.
    # y wants up, x down: y = 3 (its upper bound), x = 0 (x - y = -3 >= -4 slack):
    # objective 3 with the bounded column at its bound and both rows slack -> duals (0, 0).
    # Row 1 >= in a max problem made active below ("max-ge").
    "max-bounded": Case(
        make_lp([-1, 1], [[1, -1], [1, 1]], [-4, 1], [INF, INF], [0, 0], [5, 3], True,
                "max-bounded"),
        LpStatus.OPTIMAL, 3.0, (0.0, 3.0), (0.0, 0.0)),
    # max -x - y  s.t.  x + 2y >= 4,  x, y >= 0.  Vertices (4,0): -4, (0,2): -2 -> (0, 2).
    # Raising the bound to 4 + d: y = 2 + d/2, objective -2 - d/2 -> dual -0.5 (<= 0, as a
    # >= row of a maximisation must have).
    "max-ge": Case(
        make_lp([-1, -1], [[1, 2]], [4], [INF], [0, 0], [INF, INF], True, "max-ge"),
        LpStatus.OPTIMAL, -2.0, (0.0, 2.0), (-0.5,)),
    # min -x - 2y  s.t.  x + y = 3,  0 <= x <= 5,  0 <= y <= 2.
    # y = 2 at its upper bound, x = 1: objective -5. Raising b by d: x = 1 + d, objective
    # -5 - d -> dual -1.
    "min-eq-bounded": Case(
        make_lp([-1, -2], [[1, 1]], [3], [3], [0, 0], [5, 2], False, "min-eq-bounded"),
        LpStatus.OPTIMAL, -5.0, (1.0, 2.0), (-1.0,)),
    # max x  s.t.  x + y <= 1,  x + y >= 2: no feasible point.
    "infeasible": Case(
        make_lp([1, 0], [[1, 1], [1, 1]], [-INF, 2], [1, INF], [0, 0], [INF, INF], True,
                "infeasible"),
        LpStatus.INFEASIBLE),
    # max x + y  s.t.  x - y <= 1,  x, y >= 0: (t + 1, t) is feasible for every t.
    "unbounded": Case(
        make_lp([1, 1], [[1, -1]], [-INF], [1], [0, 0], [INF, INF], True, "unbounded"),
        LpStatus.UNBOUNDED),
    # min -x  s.t.  x + y >= 1,  0 <= x, y (bounded below only): x -> inf, unbounded below.
    "unbounded-min": Case(
        make_lp([-1, 0], [[1, 1]], [1], [INF], [0, 0], [INF, INF], False, "unbounded-min"),
        LpStatus.UNBOUNDED),
}

# A ranged row (both bounds finite and different). The relaxed LPs never build one, but
# LinearProgram allows it.
# max x  s.t.  1 <= x + y <= 4,  0 <= x, y <= 10: x = 4, y = 0, the upper side active -> +1.
# min x + 2y  s.t. the same row: x = 1, y = 0, the lower side active: d objective / d b = +1.
RANGED = {
    "ranged-max": Case(
        make_lp([1, 0], [[1, 1]], [1], [4], [0, 0], [10, 10], True, "ranged-max"),
        LpStatus.OPTIMAL, 4.0, (4.0, 0.0), (1.0,)),
    "ranged-min": Case(
        make_lp([1, 2], [[1, 1]], [1], [4], [0, 0], [10, 10], False, "ranged-min"),
        LpStatus.OPTIMAL, 1.0, (1.0, 0.0), (1.0,)),
}

ALL = {**CASES, **RANGED}


def _params(cases):
    out = []
    for backend in BACKENDS:
        for name in cases:
            out.append(pytest.param(backend, name, id=f"{backend}-{name}"))
    return out


@pytest.mark.parametrize(("backend", "name"), _params(ALL))
def test_status_optimum_solution_and_duals(backend: str, name: str) -> None:
    case = ALL[name]
    sol = solve(case.lp, backend)
    assert sol.status is case.status, (sol.status, sol.message)
    assert sol.backend == backend
    if case.status is not LpStatus.OPTIMAL:
        assert not sol.optimal
        assert not np.isfinite(sol.objective)  # no number that could be mistaken for a value
        return
    assert sol.optimal
    assert sol.objective == pytest.approx(case.objective, abs=TOL)
    np.testing.assert_allclose(sol.x, case.x, atol=1e-8)
    np.testing.assert_allclose(sol.row_duals, case.duals, atol=1e-8)
    # The objective reported is the objective of the x reported.
    assert float(case.lp.c @ sol.x) == pytest.approx(sol.objective, abs=1e-8)


def _with_bound(lp: LinearProgram, row: int, delta: float) -> LinearProgram:
    """Move both finite bounds of `row` by delta (an equality stays an equality)."""
    lo, hi = lp.row_lower.copy(), lp.row_upper.copy()
    if np.isfinite(lo[row]):
        lo[row] += delta
    if np.isfinite(hi[row]):
        hi[row] += delta
    return replace(lp, row_lower=lo, row_upper=hi)


@pytest.mark.parametrize(("backend", "name"),
                         [p for p in _params(CASES) if CASES[p.values[1]].status
                          is LpStatus.OPTIMAL])
def test_duals_are_derivatives(backend: str, name: str) -> None:
    """row_duals[r] = d objective / d b_r, measured by re-solving (central difference)."""
    lp = CASES[name].lp
    base = solve(lp, backend)
    h = 1e-3
    for row in range(lp.num_rows):
        up = solve(_with_bound(lp, row, h), backend)
        down = solve(_with_bound(lp, row, -h), backend)
        assert up.optimal and down.optimal
        slope = (up.objective - down.objective) / (2 * h)
        assert base.row_duals[row] == pytest.approx(slope, abs=1e-6), (name, row)


def test_finite_difference_check_can_fail() -> None:
    """Negative control: a flipped sign is caught by the derivative check above."""
    lp = CASES["max-le"].lp
    flipped = -solve(lp, "highs").row_duals[0]
    up = solve(_with_bound(lp, 0, 1e-3), "highs").objective
    down = solve(_with_bound(lp, 0, -1e-3), "highs").objective
    assert flipped != pytest.approx((up - down) / 2e-3, abs=1e-6)


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("backend", BACKENDS)
def test_time_limit_is_reported_not_raised(backend: str) -> None:
    """A tiny time limit never yields a wrong `optimal` with a made-up value."""
    case = CASES["max-le"]
    sol = solve(case.lp, backend, time_limit=1e-9)
    if sol.optimal:  # solved in presolve before the clock was looked at: must be right
        assert sol.objective == pytest.approx(case.objective, abs=TOL)
    else:
        assert sol.status in (LpStatus.TIME_LIMIT, LpStatus.ERROR, LpStatus.UNKNOWN)


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown LP backend 'glpk'"):
        solve(CASES["max-le"].lp, "glpk")


def test_linear_program_checks_shapes() -> None:
    with pytest.raises(ValueError, match="column arrays"):
        make_lp([1, 2, 3], [[1, 1]], [0], [1], [0, 0], [1, 1], True, "bad")
    with pytest.raises(ValueError, match="row arrays"):
        make_lp([1, 2], [[1, 1]], [0, 0], [1], [0, 0], [1, 1], True, "bad")


_SOLVE_SCRIPT = textwrap.dedent("""
    import numpy as np, scipy.sparse as sp
    from dpverify.lp import LinearProgram, solve
    lp = LinearProgram(c=np.array([3.0, 2.0]), A=sp.csc_matrix(np.array([[1.0, 1.0]])),
                       row_lower=np.array([-np.inf]), row_upper=np.array([4.0]),
                       col_lower=np.zeros(2), col_upper=np.full(2, np.inf))
    for backend in {backends!r}:
        s = solve(lp, backend)
        assert s.optimal and abs(s.objective - 12.0) < 1e-9, (backend, s)
    import sys
    sys.stderr.write("solved\\n")
""")


def _run_python(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env, check=False)


def test_highs_banner_does_not_reach_stdout() -> None:
    done = _run_python(_SOLVE_SCRIPT.format(backends=("highs",)))
    assert done.returncode == 0, done.stderr
    assert "solved" in done.stderr  # the script did run to the end
    assert done.stdout == ""


def test_banner_control_highs_prints_one() -> None:
    """Negative control: a bare `highspy.Highs()` does print the banner on stdout here, so
    the test above would see it if dpverify did not redirect it."""
    done = _run_python("import highspy\nh = highspy.Highs()\n")
    assert done.returncode == 0, done.stderr
    assert "HiGHS" in done.stdout


def test_cvxpy_backend_keeps_stdout_clean() -> None:
    done = _run_python(_SOLVE_SCRIPT.format(backends=("cvxpy", "highs")))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_the_compressed_columns_match_scipy():
    """lp/model.py's CscMatrix (no scipy at import): triplets with duplicates and zeros,
    products both ways, and conversions, against scipy.sparse on random matrices."""
    from dpverify.lp.model import CscMatrix

    rng = np.random.default_rng(0)
    for _ in range(40):
        m, n = (int(v) for v in rng.integers(1, 8, 2))
        r, c = rng.integers(0, m, 25), rng.integers(0, n, 25)
        v = rng.standard_normal(25)
        v[:4] = 0.0
        v[4], r[4], c[4], v[5], r[5], c[5] = 1.5, 0, 0, -1.5, 0, 0  # duplicates summing to 0
        mine = CscMatrix.from_coo(r, c, v, (m, n))
        ref = sp.csc_matrix((v, (r, c)), shape=(m, n))
        ref.sum_duplicates()
        ref.eliminate_zeros()
        ref.sort_indices()
        assert mine.nnz == ref.nnz and np.array_equal(mine.indptr, ref.indptr)
        assert np.array_equal(mine.indices, ref.indices) and np.allclose(mine.data, ref.data)
        x, y = rng.standard_normal(n), rng.standard_normal(m)
        assert np.allclose(mine.matvec(x), ref @ x) and np.allclose(mine.rmatvec(y), ref.T @ y)
        assert np.allclose(CscMatrix.of(ref).toarray(), ref.toarray())
        assert np.allclose(mine.to_scipy().toarray(), ref.toarray())
    # negative control: a matrix that differs in one entry is told apart
    other = CscMatrix.from_coo([0], [0], [1.0], (2, 2))
    assert not np.allclose(other.toarray(), CscMatrix.from_coo([0], [0], [2.0], (2, 2)).toarray())


def _lp_arrays(b) -> list[np.ndarray]:
    lp = b.build(maximize=False, name="batch")
    return [lp.c, lp.row_lower, lp.row_upper, lp.col_lower, lp.col_upper, lp.A.data,
            lp.A.indices, lp.A.indptr]


def test_a_row_batch_builds_the_lp_of_one_call_per_row():
    """RowBatch (the schedule LPs' rows): the same rows, bounds and entries as one
    add_rows and add per row, zeros skipped, around rows added the usual way."""
    from dpverify.lp.builder import LpBuilder

    rng = np.random.default_rng(5)
    spec = [(float(rng.uniform(-1, 1)), rng.choice(6, size=3, replace=False).tolist(),
             [float(v) for v in rng.integers(-2, 3, size=3)]) for _ in range(20)]

    def build(batched: bool) -> list[np.ndarray]:
        b = LpBuilder()
        b.add_cols(6, cost=np.arange(6.0))
        first = b.add_rows(1, 0.0, 1.0)
        b.add(first, np.arange(6), 1.0)
        batch = b.batch() if batched else None
        for lo, cols, vals in spec:
            if batch is not None:
                batch.add(batch.row(lo, np.inf), cols, vals)
            else:
                b.add(b.add_rows(1, lo, np.inf), np.array(cols), np.array(vals))
        if batch is not None:
            batch.close()
        last = b.add_rows(1, -np.inf, 2.0)
        b.add(last, np.arange(3), 2.0)
        return _lp_arrays(b)

    one_by_one, batched = build(False), build(True)
    assert all(np.array_equal(a, c) and a.dtype == c.dtype
               for a, c in zip(one_by_one, batched, strict=True))
    assert 0.0 not in batched[5]  # the zeros drawn were skipped


def test_a_row_batch_refuses_rows_added_while_it_is_open():
    """Negative control: rows added to the builder during a batch would shift the batch's
    numbering: refused, never a different LP."""
    from dpverify.lp.builder import LpBuilder

    b = LpBuilder()
    b.add_cols(2)
    batch = b.batch()
    batch.add(batch.row(0.0, 1.0), [0, 1], [1.0, 1.0])
    b.add_rows(1, 0.0, 1.0)
    with pytest.raises(ValueError, match="while a batch was open"):
        batch.close()
    with pytest.raises(ValueError, match="2 columns and 1 values"):
        b.batch().add(0, [0, 1], [1.0])
