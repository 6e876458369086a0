"""The rule's LP on the prior's ties (theory/worst_polish.py `rule_lp`), the polish's last
step in theory/worst_ipm.py `_polished` where the caller's need is not met: real bounds,
recomputed here from the dense channel, against the orbit LP's optimum; its size guard;
that it runs only beyond the need; and the family member it decides (issue 25)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from worst_bounds import dense_bounds, verify_json

from dpverify.lp import solve
from dpverify.lp.model import COLUMN_SCALE_FLOOR
from dpverify.theory import worst_ipm, worst_polish
from dpverify.theory.orbits.space import OrbitSpace
from dpverify.theory.worst_ipm import dense_worst
from dpverify.theory.worst_lp import WorstLp, solve_float
from dpverify.theory.worst_polish import rule_lp


def _solve(lp):
    return solve(lp, "highs", feasibility_tol=1e-10)


def _majority(sizes=(4, 5, 3), epsilons=(0.25, 1.0, 0.5)):
    """The observer's worst-case LP of majority (indicator gain) on the classes' orbits."""
    levels = [Fraction(np.exp(e)).limit_denominator(10**9) for e in epsilons]
    space = OrbitSpace(tuple(sizes), tuple(levels))
    k = sum(sizes)
    f = np.array([int(2 * sum(space.weights(w)) > k) for w in range(space.count)])
    return WorstLp.over_class_orbits(space, list(range(space.count)), np.eye(2)[f])


def _optimum(lp) -> float:
    found = solve_float(lp, _solve)
    assert found.ok
    return float(found.objective)


def test_the_rule_lp_gives_tight_bounds_from_the_minimax_prior():
    lp = _majority()
    opt = _optimum(lp)
    found = dense_worst(lp, solve=None)
    C, G = lp.channel.floats(), lp.gain
    rule, prior = rule_lp(C, G, found.prior, _solve)
    assert rule is not None and prior is not None
    lower, _ = dense_bounds(lp, found.prior, rule)
    _, upper = dense_bounds(lp, prior, rule)
    assert lower <= opt + 1e-12 and opt <= upper + 1e-12  # bounds, both
    assert opt - lower < 1e-10 and upper - opt < 1e-10  # and tight


def test_a_prior_that_is_not_minimax_gives_no_rule_and_its_bayes_rule_is_caught():
    """Negative control: the ties come from the prior. The uniform prior ties no column,
    so there is no LP; its Bayes rule (the rule it would fix) is far from the optimum, and
    the check above catches that loss."""
    lp = _majority()
    opt = _optimum(lp)
    C, G = lp.channel.floats(), lp.gain
    uniform = np.full(C.shape[0], 1.0 / C.shape[0])
    assert rule_lp(C, G, uniform, _solve) == (None, None)
    z = C.T @ (uniform[:, None] * G)
    bayes = np.eye(G.shape[1])[z.argmax(axis=1)]
    lower, _ = dense_bounds(lp, uniform, bayes)
    assert opt - lower > 1e-6


def test_tiny_column_scales_are_floored_so_the_lp_is_not_refused(monkeypatch):
    """A column whose tied outputs are almost never right has a tiny scale; 1 / scale in
    its sum row would pass HiGHS's limit (1e15) and the LP would be refused."""
    lp = _majority()
    found = dense_worst(lp, solve=None)
    C, G = lp.channel.floats(), lp.gain
    tiny = C.copy()
    tiny[:, 0] *= 1e-25  # the first column: every entry below 1e-20
    seen = []

    def solved(program):
        seen.append(float(np.abs(program.A.data).max()))
        return _solve(program)

    rule_lp(tiny, G, found.prior, solved, ties=(1.0,))  # every column tied
    assert seen and seen[0] <= 1.0 / COLUMN_SCALE_FLOOR


def test_an_lp_beyond_its_size_is_not_built(monkeypatch):
    lp = _majority()
    found = dense_worst(lp, solve=None)
    monkeypatch.setattr(worst_polish, "LP_WORK", 1)
    calls = []
    assert rule_lp(lp.channel.floats(), lp.gain, found.prior,
                   lambda p: calls.append(p) or _solve(p)) == (None, None)
    assert calls == []


def test_a_finer_tie_is_tried_only_where_the_coarser_lp_is_too_large(monkeypatch):
    """The ties in turn: a coarse tie (1.0: every output free) whose LP is over LP_WORK
    gives way to the finer one, which still gives tight bounds; where the coarse LP fits,
    it is solved alone (a finer tie frees a subset of its entries: no better)."""
    lp = _majority()
    opt = _optimum(lp)
    found = dense_worst(lp, solve=None)
    C, G = lp.channel.floats(), lp.gain
    rows = C.shape[0]
    sizes = []

    def counted(program):
        sizes.append(program.num_cols)
        return _solve(program)

    every = C.shape[1] * G.shape[1] * rows  # the coarse tie's LP (every entry free)
    monkeypatch.setattr(worst_polish, "LP_WORK", every - 1)
    rule, prior = rule_lp(C, G, found.prior, counted, ties=(1.0, 1e-9))
    assert rule is not None and prior is not None
    assert len(sizes) == 1 and sizes[0] - 1 < C.shape[1] * G.shape[1]  # the finer LP only
    lower, _ = dense_bounds(lp, found.prior, rule)
    _, upper = dense_bounds(lp, prior, rule)
    assert opt - lower < 1e-10 and upper - opt < 1e-10
    # negative control: the coarse tie alone is too large, and nothing is solved
    sizes.clear()
    assert rule_lp(C, G, found.prior, counted, ties=(1.0,)) == (None, None)
    assert sizes == []
    # where the coarse LP fits, only it is solved
    monkeypatch.setattr(worst_polish, "LP_WORK", every)
    assert rule_lp(C, G, found.prior, counted, ties=(1.0, 1e-9))[0] is not None
    assert sizes == [C.shape[1] * G.shape[1] + 1]


def test_the_polish_ends_with_the_rule_lp_only_beyond_the_caller_s_need(monkeypatch):
    lp = _majority()
    opt = _optimum(lp)
    found = dense_worst(lp, solve=None)
    # the other polishes fail (as on the family's majorities): only the LP is left
    monkeypatch.setattr(worst_ipm, "polish_rule", lambda *a, **k: None)
    monkeypatch.setattr(worst_ipm, "polish_prior", lambda *a, **k: None)
    calls = []
    inner = worst_ipm.rule_lp

    def counted(*args, **kwargs):
        calls.append(1)
        return inner(*args, **kwargs)

    monkeypatch.setattr(worst_ipm, "rule_lp", counted)
    wide = (found.lower - 1e-6, found.upper + 1e-6)  # a bracket the need does not allow
    kept = worst_ipm._polished(lp, *wide, found.prior, found.rule, _solve, 1e-11, need=1e-5)
    assert calls == [] and kept[:2] == wide  # within the need: left as it is
    lower, upper, prior, rule = worst_ipm._polished(lp, *wide, found.prior, found.rule,
                                                    _solve, 1e-11, need=1e-10)
    assert calls == [1]
    assert np.allclose((lower, upper), dense_bounds(lp, prior, rule), rtol=0, atol=1e-14)
    assert lower <= opt + 1e-12 <= upper + 2e-12 and upper - lower < 1e-10


def test_a_majority_in_three_classes_at_forty_parties_is_decided(tmp_path):
    """A member of the benchmark's symmetric family (seed 5) that ended `error`: its last
    round's interior point stalled 2.6e-9 wide (the tolerance wants 1e-9) and its other
    polishes failed."""
    eps = [0.75] * 21 + [2.0] * 11 + [0.5] * 8
    data = verify_json(tmp_path, f"""[problem]
name = "member"
parties = 40
epsilon = {eps}
accuracy = "worst"

[observer]
function = "majority"
gain = "-abs"
""")
    (result,) = data["results"]
    assert result["verdict"] == "optimal"
    assert result["gap"] < 1e-9
