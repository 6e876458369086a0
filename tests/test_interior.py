"""Interior rank-one points (--grid, --samples): the corner lemma, and that the check can fail."""

from __future__ import annotations

import numpy as np
import pytest
from lp_method import by_lp

from dpverify.lp import solve
from dpverify.spec import loads
from dpverify.spec.tables import tabulate
from dpverify.theory.rr import random_rank_one, segment_grid
from dpverify.verifiers.multiparty.corner_lp import corner_family, interior_families
from dpverify.verifiers.multiparty.lps import PointFamily, relaxed_lp
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import Verdict

SPEC = """
[problem]
name = "maj-3"
parties = 3
epsilon = [0.4, 1.0, 1.5]
[observer]
function = "majority"
[[party]]
index = 2
function = { table = [0, 1, 2, 0, 1, 2, 2, 1] }
gain = "-abs"
"""


@pytest.mark.parametrize("grid,samples", [(3, 0), (5, 0), (0, 40), (4, 25)])
def test_interior_points_do_not_raise_the_optimum(grid, samples):
    spec = loads(SPEC, source="<maj-3>")
    result = by_lp(spec, VerifyOptions(grid=grid, samples=samples, seed=7))
    assert result.verdict is Verdict.OPTIMAL
    for r in result.results:
        assert abs(r.interior.optimum - r.relaxed_optimum) <= 1e-9


def test_grid_points_lie_on_the_segment_and_include_the_corners():
    lam = 2.5
    g = segment_grid(lam, 5)
    assert np.allclose(g.sum(axis=0), 1.0)
    assert np.all(g[0] <= lam * g[1] + 1e-15) and np.all(g[1] <= lam * g[0] + 1e-15)
    corners = corner_family([lam]).factors[0]
    assert np.allclose(g[:, [0, -1]], corners)


def test_random_points_are_rank_one_and_dp():
    rng = np.random.default_rng(1)
    lams = [1.5, 3.0]
    pts = random_rank_one(lams, 30, rng)
    assert np.allclose(pts.sum(axis=0), 1.0)
    for col in pts.T:
        t = col.reshape(2, 2)
        assert np.linalg.matrix_rank(t, tol=1e-12) == 1
        # DP in each coordinate: ratios within [1/lambda, lambda]
        assert np.all(t[0] <= lams[0] * t[1] + 1e-12)
        assert np.all(t[:, 0] <= lams[1] * t[:, 1] + 1e-12)


def test_negative_control_points_outside_the_cone_raise_the_optimum():
    """The comparison catches a point set that is not lambda-DP: the same check that
    `--grid` runs must see the optimum rise when the points come from a larger lambda."""
    spec = loads(SPEC, source="<maj-3>")
    gain = tabulate(spec, spec.agents[0]).gain
    corners = relaxed_lp(gain, [corner_family(spec.lambdas)], False)
    too_private = [lam * 3 for lam in spec.lambdas]
    outside = PointFamily(factors=tuple(segment_grid(lam, 3) for lam in too_private))
    wider = relaxed_lp(gain, [corner_family(spec.lambdas), outside], False)
    a, b = solve(corners.lp), solve(wider.lp)
    assert a.optimal and b.optimal
    assert b.objective > a.objective + 1e-3


def test_interior_families_always_include_the_corners():
    fams = interior_families([2.0, 2.0], VerifyOptions(samples=3))
    assert fams[0].factors is not None and fams[1].columns.shape == (4, 3)


def test_grouped_chain_factors_multiply_out_to_the_same_kronecker_product():
    from functools import reduce

    from dpverify.lp.builder import grouped
    from dpverify.theory.rr import rr_channel

    factors = [rr_channel(lam) for lam in (1.0, 1.5, 2.0, 3.0, 7.0, 1.2, 2.5)]
    blocks = grouped(factors)
    assert [b.shape[0] for b in blocks] == [8, 8, 2]
    assert np.allclose(reduce(np.kron, blocks), reduce(np.kron, factors))
    # at lambda = 1e4 a block of three would hold entries near 1e-12: blocks stay smaller
    big = [rr_channel(1e4)] * 4
    assert all(np.abs(b[b != 0]).min() >= 1e-8 for b in grouped(big))
    assert np.allclose(reduce(np.kron, grouped(big)), reduce(np.kron, big))
    # grid factors (2 x m) are left one per pass
    grid = [segment_grid(2.0, 4)] * 3
    assert len(grouped(grid)) == 3
