"""Interaction under (epsilon, delta)-DP (verifiers/approximate/; docs/theory.md 7.11):
issue 20's XOR protocol by hand, valued from its file; protocols that overspend refused;
grid protocols made exact (their hockey-stick sums from their final states agree with the
file's own), repaired by the coin when rounding overspends (and refused without it);
the schedule LP and the played flow below the bound, and reaching it; the bracket closed
on issue 27's example; the verdicts from exact numbers; k = 4 against its bar (slow)."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from dpverify.spec import loads
from dpverify.spec.model import Accuracy
from dpverify.spec.tables import tabulate
from dpverify.theory.approx.grid import (
    UNSPOKEN,
    GridProtocol,
    GridRound,
    encode,
    exact_split,
    kernel_rows,
    ray_vector,
)
from dpverify.theory.approx.grid import hockey_sums as grid_hockey_sums
from dpverify.theory.approx.hockey import protocol_deltas
from dpverify.theory.approx.rr import CORNER_0, CORNER_1, REVEAL_0, REVEAL_1
from dpverify.theory.exact import lambda_brackets
from dpverify.theory.units import units_of
from dpverify.verifiers.approximate.envelope import proved_envelope
from dpverify.verifiers.approximate.flow import Flow, play
from dpverify.verifiers.approximate.schedule import (
    ScheduleObjective,
    finals_value,
    solve_schedule,
)
from dpverify.verifiers.approximate.verifier import (
    ApproxNumbers,
    approximate_result,
    decide,
)
from dpverify.verifiers.approximate.witness import (
    check_witness,
    read_protocol_text,
    repair_weight,
    witness_text,
)
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import Verdict
from tests.protocol_files import protocol_file

OPTIONS = VerifyOptions()
D = F(1, 10)


def problem(body: str, parties: int, level: str = "epsilon = 1") -> str:
    return (f'[problem]\nname = "p"\nparties = {parties}\n{level}\n'
            f'accuracy = ["average", "worst"]\n{body}')


XOR2 = problem('[observer]\nfunction = "xor"\n', 2, 'lambda = "3"')


def issue_protocol(say_delta: F = F(0)) -> list[np.ndarray]:
    """Issue 20's XOR protocol at lambda = 3: party 1 runs RR(3, 1/10); party 2 reveals
    its bit after a reveal and runs RR(3, say_delta) after a said bit."""
    rr = [[D, F(27, 40), F(9, 40), F(0)], [F(0), F(9, 40), F(27, 40), D]]
    reveal = [[F(1), F(0), F(0), F(0)], [F(0), F(0), F(0), F(1)]]
    k = 1 - say_delta
    said = [[say_delta, k * F(3, 4), k * F(1, 4), F(0)], [F(0), k * F(1, 4), k * F(3, 4),
                                                           say_delta]]
    return [np.array([rr], dtype=object),
            np.array([reveal, said, said, reveal], dtype=object)]


def hand_written(spec, accuracy, deltas, kernels) -> str:
    """A protocol file written by hand (party i speaks in round i), claiming `deltas`."""
    return protocol_file(spec, spec.agents[0], accuracy, deltas, [1, 2], kernels)


def xor2():
    spec = loads(XOR2, source="<xor>")
    agent = spec.agents[0]
    return spec, agent, units_of(tabulate(spec, agent).gain_exact)


@pytest.mark.parametrize("accuracy", [Accuracy.AVERAGE, Accuracy.WORST])
def test_the_issues_xor_protocol_valued_from_its_file(accuracy):
    spec, agent, units = xor2()
    text = hand_written(spec, accuracy, [D, D], issue_protocol())
    checked = check_witness(text, spec, agent, accuracy, [D, D], units, OPTIONS)
    p = F(3, 4)
    assert checked.value == D + (1 - D) * (p * p + (1 - p) ** 2) == F(53, 80)
    assert [(b.lower, b.upper) for b in checked.deltas] == [(D, D), (D, D)]
    assert checked.method == "exact"


def test_a_protocol_that_overspends_delta_is_refused():
    spec, agent, units = xor2()
    text = hand_written(spec, Accuracy.AVERAGE, [D, D], issue_protocol(F(1, 20)))
    wspec, claimed = read_protocol_text(text)
    assert claimed == (D, D)
    achieved = protocol_deltas(wspec)
    assert achieved[0].upper == D
    assert achieved[1].lower == achieved[1].upper == D + F(9, 10) * F(1, 20)
    assert achieved[1].meets(D) is False
    checked = check_witness(text, spec, agent, Accuracy.AVERAGE, [D, D], units, OPTIONS)
    assert checked.value is None and "party 2" in checked.reason


def test_a_file_claiming_other_deltas_is_refused():
    spec, agent, units = xor2()
    text = hand_written(spec, Accuracy.AVERAGE, [D, F(1, 5)], issue_protocol())
    checked = check_witness(text, spec, agent, Accuracy.AVERAGE, [D, D], units, OPTIONS)
    assert checked.value is None and "deltas" in checked.reason


# -- grid protocols ----------------------------------------------------------------------
def test_exact_splits_keep_every_factor_on_a_ray():
    lam = F(3)
    # RR(3, 1/10) is this split: reveal 1/10, say with 9/10; floats a hair off are put back
    split = exact_split(UNSPOKEN, [(CORNER_0, 0.9), (CORNER_1, 0.9 - 1e-15),
                                   (REVEAL_0, 0.1), (REVEAL_1, 0.1 + 1e-15)], lam)
    assert split is not None
    assert dict(split) == {CORNER_0: F(9, 10), CORNER_1: F(9, 10), REVEAL_0: D,
                           REVEAL_1: D}
    # further off (1e-12): still an exact split, near the floats
    split = exact_split(UNSPOKEN, [(CORNER_0, 0.9), (CORNER_1, 0.9), (REVEAL_0, 0.1),
                                   (REVEAL_1, 0.1 + 1e-12)], lam)
    assert split is not None
    total = [sum(kappa * ray_vector(t, lam)[x] for t, kappa in split) for x in (0, 1)]
    assert total == [1, 1]  # sum kappa t = (1, 1) exactly
    assert all(abs(float(kappa) - (0.9 if t < 2 else 0.1)) < 1e-11 for t, kappa in split)
    rows = kernel_rows(UNSPOKEN, split, lam)
    assert all(sum(r) == 1 for r in rows)
    # a split that cannot be exact (every kappa of one ray, the other coordinate missed)
    assert exact_split(CORNER_0, [(REVEAL_0, 1.0)], lam) is None


def xor_grid(reveal_after: F) -> GridProtocol:
    """Issue 20's protocol as a grid protocol at lambda = 3: party 1 RR(3, 1/10); party 2
    reveals with probability `reveal_after` after party 1's reveals, else says its corner."""
    start = encode([UNSPOKEN, UNSPOKEN])
    rr = tuple((t, kappa) for t, kappa in ((CORNER_0, F(9, 10)), (CORNER_1, F(9, 10)),
                                          (REVEAL_0, D), (REVEAL_1, D)))
    round1 = GridRound(0, {start: rr})
    splits = {}
    for ray in (CORNER_0, CORNER_1, REVEAL_0, REVEAL_1):
        s = encode([ray, UNSPOKEN])
        if ray in (REVEAL_0, REVEAL_1):
            splits[s] = ((CORNER_0, 1 - reveal_after), (CORNER_1, 1 - reveal_after),
                         (REVEAL_0, reveal_after), (REVEAL_1, reveal_after))
        else:
            splits[s] = ((CORNER_0, F(1)), (CORNER_1, F(1)))
    return GridProtocol(2, (F(3), F(3)), (round1, GridRound(1, splits)))


def test_grid_hockey_sums_are_the_files():
    """The grid's sums from its final states' masses equal those of its protocol file,
    computed by the audit's own steps from the text."""
    spec, agent, _ = xor2()
    for after in (F(1), F(1, 2)):
        grid = xor_grid(after)
        text = witness_text(spec, agent, Accuracy.AVERAGE, [D, D], grid, F(0), name="g",
                            note="test")
        wspec, _ = read_protocol_text(text)
        from_file = [b.upper for b in protocol_deltas(wspec)]
        assert grid_hockey_sums(grid, [F(3), F(3)]) == from_file
        assert from_file == [D, D * after]


def test_the_coin_repairs_a_protocol_over_its_delta():
    """A grid protocol a hair above its delta is refused as it is (the negative control)
    and accepted after the coin of witness.py, which costs it almost nothing."""
    spec, agent, units = xor2()
    grid = xor_grid(F(1))
    over = [D - F(1, 10**12), D - F(1, 10**12)]  # claims a little less than it spends
    t = repair_weight(grid, over)
    assert 0 < t < F(1, 10**10)
    plain = witness_text(spec, agent, Accuracy.AVERAGE, over, grid, F(0), name="g", note="")
    assert check_witness(plain, spec, agent, Accuracy.AVERAGE, over, units, OPTIONS).value \
        is None
    mixed = witness_text(spec, agent, Accuracy.AVERAGE, over, grid, t, name="g", note="")
    checked = check_witness(mixed, spec, agent, Accuracy.AVERAGE, over, units, OPTIONS)
    assert checked.value is not None
    assert F(53, 80) - checked.value <= t  # the coin's branch loses at most its weight
    assert all(b.upper <= d for b, d in zip(checked.deltas, over, strict=True))


def _objective(text: str, accuracy: Accuracy):
    spec = loads(text, source="<test>")
    agent = spec.agents[0]
    units = units_of(tabulate(spec, agent).gain_exact)
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    deltas = tuple(F(d) for d in spec.deltas) if spec.approximate else (D,) * spec.parties
    worst = accuracy is Accuracy.WORST
    proved, floats = proved_envelope(spec.lambdas, upper, deltas, units.unit, units.exact,
                                     agent.party, worst, OPTIONS)
    objective = ScheduleObjective(tuple(spec.lambdas), tuple(float(d) for d in deltas),
                                  units.unit, agent.party, worst)
    return proved, floats, objective


@pytest.mark.parametrize("body,parties", [('[observer]\nfunction = "and"\n', 2),
                                          ('[observer]\nfunction = "majority"\n', 3),
                                          ('[[party]]\nindex = 2\nfunction = "or"\n', 3)])
@pytest.mark.parametrize("accuracy", [Accuracy.AVERAGE, Accuracy.WORST])
def test_schedules_stay_below_the_bound_and_the_flow_reaches_it(body, parties, accuracy):
    proved, floats, objective = _objective(problem(body, parties), accuracy)
    assert proved is not None and floats.data is not None
    bound = float(proved.bound)
    one_round = solve_schedule(objective, list(range(parties)), OPTIONS.solver())
    assert one_round is not None and one_round.value <= bound + 1e-9
    longer = solve_schedule(objective, list(range(parties)) * 2, OPTIONS.solver())
    assert longer is not None and one_round.value - 1e-9 <= longer.value <= bound + 1e-9
    flow = Flow(floats.theta, floats.sigma, floats.chords, floats.data.counts)
    played = play(flow, list(range(parties)))
    assert played.left <= 1e-12  # played out
    value = finals_value(objective, played.finals, OPTIONS)
    assert value == pytest.approx(bound, abs=1e-9)


def test_one_round_cannot_close_the_and_example():
    """2-party AND's observer, worst case, at (3, 1/10): one round per party stays below
    the bound (67/96) by more than 1e-3 in either order; two rounds each reach it. So the
    closure needs parties that speak more than once."""
    proved, _, objective = _objective(problem('[observer]\nfunction = "and"\n', 2,
                                              'lambda = "3"'), Accuracy.WORST)
    assert proved is not None and proved.bound == F(67, 96)
    for order in ([0, 1], [1, 0]):
        sol = solve_schedule(objective, order, OPTIONS.solver())
        assert sol is not None and sol.value < 67 / 96 - 1e-3
    again = solve_schedule(objective, [0, 1, 0, 1], OPTIONS.solver())
    assert again is not None and again.value == pytest.approx(67 / 96, abs=1e-10)


# -- the verifier ---------------------------------------------------------------------------
@pytest.mark.parametrize("accuracy", [Accuracy.AVERAGE, Accuracy.WORST])
def test_the_xor_example_at_epsilon_one(accuracy):
    """Issue 20: two parties, XOR, epsilon = 1, delta = 1/10. The interactive value is
    d + (1 - d)(p^2 + (1 - p)^2), p = e/(1 + e) (0.646098...), the non-interactive one
    c^2 + w^2 (0.633079...); the bound is the first, and the witness reaches it."""
    spec = loads(problem('[observer]\nfunction = "xor"\n', 2), source="<xor>")
    result = approximate_result(spec, spec.agents[0], accuracy, [D, D], OPTIONS)
    p = math.e / (1 + math.e)
    interactive = 0.1 + 0.9 * (p * p + (1 - p) ** 2)
    c, w = 0.1 + 0.9 * p, 0.9 * (1 - p)
    assert result.verdict is Verdict.INTERACTION_HELPS and result.closed
    assert result.rr_value == pytest.approx(c * c + w * w, abs=1e-12)
    assert result.best_value == pytest.approx(interactive, abs=1e-9)
    assert result.relaxed_optimum == pytest.approx(interactive, abs=1e-9)
    assert result.relaxed_optimum_exact >= result.best_value_exact > result.rr_value_exact
    assert result.to_json()["closed"] is True and result.bracket_width < 1e-9
    assert result.witness_text is not None
    wspec, claimed = read_protocol_text(result.witness_text)
    assert claimed == (D, D) and wspec.epsilons_exact == (F(1), F(1))
    assert all(b.meets(D) is True for b in protocol_deltas(wspec))
    units = units_of(tabulate(spec, spec.agents[0]).gain_exact)
    again = check_witness(result.witness_text, spec, spec.agents[0], accuracy, [D, D], units,
                          OPTIONS)
    assert again.value == result.best_value_exact


def test_issue_27s_example_is_closed():
    """3-party AND at (1, 1/20): every agent and accuracy `interaction-helps`, the bracket
    closed (bound - best <= tol, exact numbers); the observer's worst case is 0.63589478585
    (the four-ray bound was 0.63960, the best protocol found before 0.62885)."""
    text = problem('[observer]\nfunction = "and"\n[[party]]\nindex = 1\nfunction = "and"\n',
                   3)
    spec = loads(text, source="<and3>")
    for agent in spec.agents:
        for accuracy in spec.accuracies:
            result = approximate_result(spec, agent, accuracy, [F(1, 20)] * 3, OPTIONS)
            assert result.verdict is Verdict.INTERACTION_HELPS and result.closed
            assert result.relaxed_optimum_exact - result.best_value_exact <= F(1, 10**9)
            if agent.party == 0 and accuracy is Accuracy.WORST:
                assert result.best_value == pytest.approx(0.6358947858, abs=1e-9)


def test_at_delta_zero_rr_is_optimal():
    spec = loads(problem('[observer]\nfunction = "majority"\n[[party]]\nindex = 2\n'
                         'function = "and"\n', 3), source="<test>")
    for agent in spec.agents:
        for accuracy in spec.accuracies:
            result = approximate_result(spec, agent, accuracy, [F(0)] * 3, OPTIONS)
            assert result.verdict is Verdict.OPTIMAL, result.reason
            assert result.witness_text is None and result.search_starts == 0


def test_the_verdicts_from_exact_numbers():
    units = units_of([[F(0), F(1)], [F(1), F(0)]])

    def verdict(bound, low, high, best):
        return decide(ApproxNumbers(bound, low, high, best), 1e-9, units)

    assert verdict(F(3, 4), F(3, 4), F(3, 4), F(3, 4))[0] is Verdict.OPTIMAL
    helps, reason = verdict(F(4, 5), F(3, 4), F(3, 4), F(79, 100))
    assert helps is Verdict.INTERACTION_HELPS and "lies in" in reason
    closed, reason = verdict(F(4, 5), F(3, 4), F(3, 4), F(4, 5) - F(1, 10**10))
    assert closed is Verdict.INTERACTION_HELPS and "the interactive optimum is" in reason
    assert ApproxNumbers(F(4, 5), best=F(4, 5) - F(1, 10**10)).closed(1e-9)
    assert not ApproxNumbers(F(4, 5), best=F(4, 5) - F(1, 10**8)).closed(1e-9)
    assert verdict(F(4, 5), F(3, 4), F(3, 4), F(3, 4))[0] is Verdict.OPEN
    assert verdict(F(3, 4), F(4, 5), F(4, 5), F(4, 5))[0] is Verdict.ERROR  # RR > bound
    assert verdict(F(3, 4), F(1, 2), F(1, 2), F(4, 5))[0] is Verdict.ERROR  # witness >
    assert verdict(None, F(1, 2), F(1, 2), F(1, 2))[0] is Verdict.ERROR
    # a witness within --tol of RR's upper end is no finding
    assert verdict(F(4, 5), F(3, 4), F(3, 4) + F(1, 10**10), F(3, 4) + F(1, 10**10))[0] \
        is Verdict.OPEN


@pytest.mark.slow
@pytest.mark.parametrize("function", ["majority", "xor"])
def test_four_parties(function):
    """k = 4, both accuracies: a verdict, the witness between RR and the bound (the time
    bars are benchmarks/bench_approx.py's)."""
    spec = loads(problem(f'[observer]\nfunction = "{function}"\n', 4), source="<k4>")
    for accuracy in spec.accuracies:
        result = approximate_result(spec, spec.agents[0], accuracy, [D] * 4, OPTIONS)
        assert result.verdict in (Verdict.INTERACTION_HELPS, Verdict.OPEN)
        assert result.relaxed_optimum >= result.best_value >= result.rr_value


def test_parties_at_epsilon_zero_and_at_delta_zero():
    """At epsilon = 0 a party's corners coincide with (1, 1)/2 (every split of its
    unspoken factor into them is along one line: the exact split solves one equation);
    beside a party with delta = 0 (corners only). Both close."""
    text = ('[problem]\nname = "z"\nparties = 3\nepsilon = [0, 0.3, 0]\n'
            'delta = ["1/5", "1/2", "1/20"]\naccuracy = ["average"]\n'
            '[observer]\nfunction = "majority"\n')
    spec = loads(text, source="<z>")
    result = approximate_result(spec, spec.agents[0], Accuracy.AVERAGE, spec.deltas, OPTIONS)
    assert result.verdict is Verdict.INTERACTION_HELPS and result.closed, result.reason
    assert exact_split(UNSPOKEN, [(CORNER_0, 2.0)], F(1)) == [(CORNER_0, F(2))]
    assert exact_split(UNSPOKEN, [(CORNER_0, 1.0), (CORNER_1, 1.0)], F(1)) is not None
    mixed = loads(text.replace('delta = ["1/5", "1/2", "1/20"]', 'delta = ["1/5", "0", "1/10"]')
                  .replace("[0, 0.3, 0]", "[1, 0.5, 1.5]"), source="<m>")
    result = approximate_result(mixed, mixed.agents[0], Accuracy.AVERAGE, mixed.deltas,
                                OPTIONS)
    assert result.verdict in (Verdict.INTERACTION_HELPS, Verdict.OPTIMAL)
    assert result.verdict is Verdict.OPTIMAL or result.closed, result.reason
