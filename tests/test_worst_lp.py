"""RR's worst-case decision LP, written once (dpverify/theory/worst_lp.py): the same exact
optimum through its four descriptions (inputs, input orbits, class orbits, transcripts), the
float solves against the exact one, the dual prior's bound against the rule's value, and
negative controls (a perturbed rule, a perturbed prior)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpverify.lp import solve
from dpverify.lp.basis import float_basis_finder
from dpverify.spec import loads
from dpverify.spec.tables import tabulate
from dpverify.theory.certificates import symmetry_orbits
from dpverify.theory.decision import own_bit_mask
from dpverify.theory.exact_lp import simplex_from_basis
from dpverify.theory.symbols.noninteractive import exact_transcripts, rr_exact_channels
from dpverify.theory.units import units_of
from dpverify.theory.worst_lp import (
    WorstLp,
    prior_bound,
    rule_value,
    solve_exact,
    solve_float,
    solve_float_columns,
    standard_form,
)
from dpverify.verifiers.multiparty.orbit import orbit_problem

LAMBDA = Fraction(2)
K = 4
PROBLEM = (f'[problem]\nparties = {K}\nlambda = "{LAMBDA}"\n[observer]\nfunction = "sum"\n'
           'gain = "-abs"\n[[party]]\nindex = 1\nfunction = "majority"\n')


def _solve(lp):
    return solve(lp, "highs", feasibility_tol=1e-10)


def four_descriptions(agent_index: int):
    """The same block (the observer; party 1's own bit 1) in the four descriptions."""
    spec = loads(PROBLEM)
    agent = spec.agents[agent_index]
    lambdas = [LAMBDA] * K
    units = units_of(tabulate(spec, agent).gain_exact)
    mask = None if agent.party == 0 else own_bit_mask(K, agent.party, 1)
    orbits = symmetry_orbits(lambdas, units.exact, agent.party)
    problem, _ = orbit_problem(spec, agent)
    bits = problem.own_bits()
    relevant = [w for w in range(len(problem.gain)) if bits is None or bits[w] == 1]
    tr = exact_transcripts((2,) * K, rr_exact_channels((2,) * K, lambdas))
    block = np.ones(1 << K, dtype=bool) if mask is None else mask
    return {
        "inputs": WorstLp.over_inputs(lambdas, units.unit, mask, gain_exact=units.exact),
        "input orbits": WorstLp.over_input_orbits(lambdas, orbits, units.unit, mask,
                                                  gain_exact=units.exact),
        "class orbits": WorstLp.over_class_orbits(
            problem.space([LAMBDA] * len(problem.classes)), relevant,
            np.array([[float(v) for v in row] for row in problem.units.exact]),
            gain_exact=problem.units.exact),
        "transcripts": WorstLp.over_transcripts(tr, block, units.unit,
                                                gain_exact=units.exact),
    }


@pytest.mark.parametrize("agent_index", [0, 1], ids=["observer", "party-own-bit-1"])
def test_the_four_descriptions_have_one_exact_optimum(agent_index):
    lps = four_descriptions(agent_index)
    assert lps["input orbits"].rows.size < lps["inputs"].rows.size  # a real reduction
    found = {name: solve_exact(lp) for name, lp in lps.items()}
    values = {name: f.value for name, f in found.items()}
    assert len(set(values.values())) == 1, values
    value = values["inputs"]
    assert 0 < value < 1
    for name, lp in lps.items():
        f = found[name]
        assert sum(f.masses) == 1 and min(f.masses) >= 0, name
        assert all(sum(row) == 1 and min(row) >= 0 for row in f.rule), name
        # the rule's value and the prior's bound, each computed apart, meet (LP duality)
        assert rule_value(lp, f.rule) == value == prior_bound(lp, f.masses), name
    # the optimal basis is a start that needs no pivot, and the crash basis is feasible
    lp = lps["class orbits"]
    form = standard_form(lp)
    assert simplex_from_basis(form.rows, form.rhs, form.cost, found["class orbits"].basis
                              ).pivots == 0
    assert simplex_from_basis(form.rows, form.rhs, form.cost, form.crash).value == value
    finder = float_basis_finder()
    assert solve_exact(lp, basis_finder=finder).value == value


def test_a_perturbed_rule_or_prior_proves_less():
    """Negative controls: moving mass in one row of the optimal rule loses accuracy at some
    input; a prior off the optimum bounds from above by more."""
    lp = four_descriptions(0)["transcripts"]
    found = solve_exact(lp)
    rule = [list(row) for row in found.rule]
    row = next(i for i, r in enumerate(rule) if max(r) == 1 and lp.m > 1)
    top = rule[row].index(Fraction(1))
    rule[row][top], rule[row][(top + 1) % lp.m] = Fraction(1, 2), Fraction(1, 2)
    assert rule_value(lp, rule) < found.value
    uniform = [Fraction(1)] * lp.rows.size
    assert prior_bound(lp, uniform) > found.value
    point = [Fraction(int(a == 0)) for a in range(lp.rows.size)]
    assert prior_bound(lp, point) > found.value


@pytest.mark.parametrize("agent_index", [0, 1], ids=["observer", "party-own-bit-1"])
def test_float_solves_agree_with_the_exact_optimum(agent_index):
    lps = four_descriptions(agent_index)
    value = float(solve_exact(lps["inputs"]).value)
    solves = [("inputs", {"form": "chain"}), ("inputs", {"form": "dense"}),
              ("inputs", {"form": "dense", "by_output": True}),
              ("input orbits", {"scale_rows": True, "drop_tiny": True}),
              ("transcripts", {"sums_first": True}), ("class orbits", {})]
    for name, kwargs in solves:
        found = solve_float(lps[name], _solve, **kwargs)
        assert found.ok and found.objective == pytest.approx(value, abs=1e-9), (name, kwargs)
        masses = np.clip(found.masses, 0.0, None)
        assert masses.sum() == pytest.approx(1.0, abs=1e-8), (name, kwargs)
        assert found.rule.shape == (lps[name].channel.columns, lps[name].m)
    found = solve_float_columns(lps["class orbits"], _solve, name="columns")
    assert found.ok and found.objective == pytest.approx(value, abs=1e-9)


def test_rows_scaled_here_are_not_scaled_again_by_the_simplex():
    # solve_float's scale_rows marks the program prescaled (HiGHS's simplex scaling off:
    # 906 sub-cube LPs 4.8 s -> 1.9 s); the same optimum either way, and without
    # scale_rows the program is left to HiGHS's own scaling (the control)
    lp = four_descriptions(0)["inputs"]
    value = float(solve_exact(lp).value)
    seen = []

    def spied(program):
        seen.append(program.prescaled)
        return solve(program, "highs", feasibility_tol=1e-10)

    for scale_rows in (True, False):
        found = solve_float(lp, spied, scale_rows=scale_rows, drop_tiny=True)
        assert found.ok and found.objective == pytest.approx(value, abs=1e-9)
    assert seen == [True, False]


def test_a_failed_float_solve_says_so():
    lp = four_descriptions(0)["inputs"]

    def failing(program):
        from dpverify.lp import LpSolution, LpStatus

        return LpSolution(LpStatus.TIME_LIMIT, math.nan, np.zeros(0), np.zeros(0), 0.0,
                          "fake", "simulated")

    found = solve_float(lp, failing)
    assert not found.ok and found.solution.status.value == "time-limit"
    assert np.isnan(found.masses).all()


def test_transcripts_outside_the_block_stay_out_of_the_lp():
    """A block reaches only some transcripts (its own bit is released exactly at lambda =
    infinity): the others are not in the LP and decide the first output."""
    lambdas = [Fraction(10**6), Fraction(2)]
    tr = exact_transcripts((2, 2), rr_exact_channels((2, 2), lambdas))
    tr = type(tr)(tr.alphabets, tr.sizes, np.where(tr.num < 10, 0, tr.num), tr.den, True)
    table = [[Fraction(int(x % 2 == y)) for y in (0, 1)] for x in range(4)]
    lp = WorstLp.over_transcripts(tr, own_bit_mask(2, 1, 0), gain_exact=table)
    live = lp.channel.live(exact=True)
    assert 0 < live.size < tr.num.shape[1] and lp.exact_rows() == live.size + 2
    found = solve_exact(lp)
    dead = sorted(set(range(tr.num.shape[1])) - set(live.tolist()))
    assert all(found.rule[t] == [1, 0] for t in dead)
    assert rule_value(lp, found.rule) == found.value == prior_bound(lp, found.masses)


@pytest.mark.parametrize("party", [1, 3, 4])
@pytest.mark.parametrize("bit", [0, 1])
def test_a_party_s_own_bit_is_the_same_lp_on_the_other_parties_inputs(party, bit):
    """block_on_inputs: a party's own-bit LP on the other parties' inputs has the optimum of
    the LP on the inputs with that own bit and every tau; its rule, lifted, has the same
    accuracy on every row, and its prior the same bound. The negative control drops the
    wrong party's bit: the lifted rule's accuracies no longer match."""
    from dpverify.theory.worst_lp import block_on_inputs

    lambdas = [1.5, 3.0, 1.2, 2.5]
    rng = np.random.default_rng(party * 2 + bit)
    gain = rng.uniform(size=(1 << K, 3))
    block = block_on_inputs(lambdas, gain, party, bit)
    full = WorstLp.over_inputs(lambdas, gain, own_bit_mask(K, party, bit))
    assert np.array_equal(block.rows, full.rows)
    assert block.lp.channel.columns == full.channel.columns // 2
    small, whole = solve_float(block.lp, _solve), solve_float(full, _solve)
    assert small.ok and whole.ok
    assert small.objective == pytest.approx(whole.objective, abs=1e-9)
    rule = np.clip(small.rule, 0, None)
    lifted = block.lift(rule)
    assert lifted.shape[0] == 1 << K and np.array_equal(block.restrict(lifted), rule)
    per_row = (block.lp.channel.floats() @ rule * block.lp.gain).sum(axis=1)
    np.testing.assert_allclose((full.channel.floats() @ lifted * full.gain).sum(axis=1),
                               per_row, atol=1e-12)
    prior = np.clip(small.masses, 0, None) / np.clip(small.masses, 0, None).sum()
    bound = (block.lp.channel.floats().T @ (prior[:, None] * block.lp.gain)).max(1).sum()
    assert bound == pytest.approx(
        (full.channel.floats().T @ (prior[:, None] * full.gain)).max(1).sum(), abs=1e-12)
    assert bound == pytest.approx(whole.objective, abs=1e-7)
    wrong = block_on_inputs(lambdas, gain, party % K + 1, bit)  # another party's bit
    misplaced = rule[wrong.columns]
    assert not np.allclose((full.channel.floats() @ misplaced * full.gain).sum(axis=1),
                           per_row, atol=1e-6)


def test_a_lone_party_s_own_bit_keeps_its_lp():
    """With one party there are no other parties' inputs: block_on_inputs keeps the LP on
    the inputs with that own bit and every tau (and block_lambdas every level)."""
    from dpverify.theory.worst_lp import block_lambdas, block_on_inputs

    gain = np.array([[1.0, 0.0], [0.0, 1.0]])
    block = block_on_inputs([2.0], gain, 1, 1)
    assert block.columns is None and block.rows.tolist() == [1]
    assert block.lp.channel.columns == 2 and block_lambdas([2.0], 1) == (2.0,)
    assert block_lambdas([2.0, 3.0, 4.0], 2) == (2.0, 4.0)
    assert block_lambdas([2.0, 3.0, 4.0], 0) == (2.0, 3.0, 4.0)
