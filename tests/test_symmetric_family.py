"""The symmetric worst case as a family (issue 25, point 1): a party's orbit LP on the other
classes' orbits, the active rows' last round on the whole block, and the interval brackets
compared in arb; each against an independent computation, with a negative control.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.lp import solve
from dpverify.theory import worst_ipm
from dpverify.theory.orbits.space import OrbitSpace, without_class
from dpverify.theory.worst_candidates import float_bracket
from dpverify.theory.worst_lp import WorstLp, prior_bound, rule_value, solve_exact


def _sum_gains(space: OrbitSpace) -> list[list[Fraction]]:
    """`3 if f == y else (-1 if y > f else 0)` for f = sum on every orbit, in [0, 1]
    (outputs 0..k): not symmetric under flipping every bit, so the own bits differ."""
    def gain(f: int, y: int) -> Fraction:
        return Fraction(4 if f == y else (0 if y > f else 1), 4)

    return [[gain(sum(space.weights(w)), y) for y in range(space.parties + 1)]
            for w in range(space.count)]


def test_a_party_s_lp_on_the_other_classes_has_the_same_optimum():
    # own party alone in class 1 (lambda 3/2), then classes of 2 and 3 parties
    space = OrbitSpace((1, 2, 3), (Fraction(3, 2), Fraction(2), Fraction(5, 4)))
    gains = _sum_gains(space)
    for bit in (0, 1):
        rest, rows, theirs = without_class(space, 0, bit)
        assert rest.sizes == (2, 3) and len(rows) == rest.count == 12
        assert [space.weights(int(r))[0] for r in rows] == [bit] * 12
        assert [space.weights(int(r))[1:] for r in rows] == [rest.weights(i)
                                                             for i in range(rest.count)]
        full = WorstLp.over_class_orbits(space, rows, gain_exact=gains)
        reduced = WorstLp.over_class_orbits(rest, np.arange(rest.count),
                                            gain_exact=[gains[int(r)] for r in rows])
        small, whole = solve_exact(reduced), solve_exact(full)
        assert small.value == whole.value
        # the reduced rule and prior, lifted, prove the same bounds on the full LP
        lifted = [small.rule[int(j)] for j in theirs]
        assert rule_value(full, lifted) == small.value
        assert prior_bound(full, small.masses) == small.value
        # negative control: a rule lifted by the wrong map of orbits proves less
        shifted = [small.rule[int(j)] for j in np.roll(theirs, 1)]
        assert rule_value(full, shifted) < small.value


def _majority_lp():
    levels = [Fraction(np.exp(e)).limit_denominator(10**9) for e in (0.05, 1.5, 2.0, 1.0)]
    space = OrbitSpace((3, 3, 3, 2), tuple(levels))
    majority = np.array([int(2 * sum(space.weights(w)) > space.parties)
                         for w in range(space.count)])
    table = np.array([[1.0, 0.0], [1 / 3, 1.0]])[majority]
    return WorstLp.over_class_orbits(space, list(range(space.count)), table)


def _block_rows(monkeypatch) -> list[int]:
    """The rows of every block the dense method solves from now on (a list that grows)."""
    seen: list[int] = []
    inner = worst_ipm._dense_block

    def counted(lp, target, solve_, **kw):
        seen.append(int(lp.rows.size))
        return inner(lp, target, solve_, **kw)

    monkeypatch.setattr(worst_ipm, "_dense_block", counted)
    return seen


def _rounds(monkeypatch, active_all: float, enough: float | None = None, seed=None):
    """The active rows of every round of the row generation, and its result."""
    seen = _block_rows(monkeypatch)
    monkeypatch.setattr(worst_ipm, "ACTIVE_ALL", active_all)
    # the suite's size: 192 orbits, rows generated from 24 (the default: 700, 96), and
    # on rows whatever an iteration's cost (_rows_dominate)
    monkeypatch.setattr(worst_ipm, "ACTIVE_FROM", 100)
    monkeypatch.setattr(worst_ipm, "LONG_COST", 0)
    monkeypatch.setattr(worst_ipm, "ACTIVE_START", 24)
    found = worst_ipm.dense_worst(_majority_lp(), solve=lambda p: solve(
        p, "highs", feasibility_tol=1e-10), enough=enough, seed=seed)
    return seen, found


def test_the_active_rows_take_the_whole_block_once_they_are_most_of_it(monkeypatch):
    seen, found = _rounds(monkeypatch, worst_ipm.ACTIVE_ALL)
    assert seen == [24, 48, 96, 192]  # then all 192 orbits
    lp = _majority_lp()
    lower, upper = float_bracket(lp, found.prior, found.rule)
    assert upper - lower < 1e-10 and abs(upper - found.upper) < 1e-12
    # negative control: never jumping grows the rows one round at a time
    slow, other = _rounds(monkeypatch, 1.0)
    assert len(slow) > 4 and max(slow) < 192 and abs(other.upper - found.upper) < 1e-10


def test_a_block_with_many_outputs_is_solved_at_once_where_rounds_cost_nearly_as_much(
        monkeypatch):
    """_rows_dominate: an iteration on a few rows costs at least the products with P's
    factors on every column and output, so a block whose rows^2 are not far above
    outputs x factors' sizes (LONG_COST, ACTIVE_GAIN) is solved on all its rows at once:
    (`sum` at 40 parties, 1,104 orbits and 41 outputs: 80 -> 35 s). Checked on the 192
    orbits of four classes with ACTIVE_FROM lowered: with 2 outputs row generation runs;
    the same orbits' `sum` under `-abs` (12 outputs) are one block, whose bracket holds
    the optimum found by rows, unless the whole block is past MAX_DENSE_WORK. Control:
    with LONG_COST 0 it is solved by rows too."""
    monkeypatch.setattr(worst_ipm, "ACTIVE_FROM", 100)
    monkeypatch.setattr(worst_ipm, "ACTIVE_START", 24)
    monkeypatch.setattr(worst_ipm, "LONG_COST", 100)  # 192^2 = 36,864 orbits^2
    two = _majority_lp()  # 2 outputs, factors of 4 + 4 + 4 + 3 orbits
    space = two.channel.space
    total = np.array([sum(space.weights(w)) for w in range(space.count)])  # 0..11
    many = WorstLp.over_class_orbits(space, list(range(192)),
                                     1 - np.abs(total[:, None] - np.arange(12)) / 11)
    gain = worst_ipm.ACTIVE_GAIN
    assert gain * 100 * 2 * 15 <= 36_864 < gain * 100 * 12 * 15
    assert worst_ipm._on_active_rows(two) and not worst_ipm._on_active_rows(many)
    seen = _block_rows(monkeypatch)
    highs = lambda p: solve(p, "highs", feasibility_tol=1e-10)  # noqa: E731
    at_once = worst_ipm.dense_worst(many, solve=highs)
    assert set(seen) == {192}
    lower, upper = float_bracket(many, at_once.prior, at_once.rule)
    assert upper - lower < 1e-9
    # a block past MAX_DENSE_WORK goes on active rows whatever its outputs
    monkeypatch.setattr(worst_ipm, "MAX_DENSE_WORK", 192 ** 3 - 1)
    assert worst_ipm._on_active_rows(many)
    monkeypatch.setattr(worst_ipm, "MAX_DENSE_WORK", 192 ** 3)
    assert not worst_ipm._on_active_rows(many)
    seen.clear()
    monkeypatch.setattr(worst_ipm, "LONG_COST", 0)
    assert worst_ipm._on_active_rows(many)
    by_rows = worst_ipm.dense_worst(many, solve=highs)
    assert seen[0] == 24 and len(seen) > 1
    assert abs(by_rows.upper - at_once.upper) < 1e-9 and abs(by_rows.lower - lower) < 1e-9


def test_a_wide_last_round_runs_once_more_and_no_earlier_round_does(monkeypatch):
    """Row generation: where the bracket stays wider than RETRY_WIDTH after the last round
    (run on one BLAS thread), that round's rows are solved once more (on every thread), not
    the whole generation; the better end of each is kept. Control: within RETRY_WIDTH the
    rounds are not repeated."""
    monkeypatch.setattr(worst_ipm, "RETRY_WIDTH", float("inf"))
    seen, found = _rounds(monkeypatch, worst_ipm.ACTIVE_ALL)
    once = list(seen)  # (the second call's counter wraps the first's)
    assert len(set(once)) == len(once)  # every round on new rows
    monkeypatch.setattr(worst_ipm, "RETRY_WIDTH", -1.0)  # every bracket is too wide
    twice, again = _rounds(monkeypatch, worst_ipm.ACTIVE_ALL)
    assert twice == [*once, once[-1]]
    assert again.upper <= found.upper + 1e-15 and again.lower >= found.lower - 1e-15
    assert again.iterations > found.iterations


def test_interval_upper_ends_are_compared_exactly():
    from flint import arb

    from dpverify.theory.interval import upper_of
    from dpverify.theory.orbits.interval import _best_lower, _best_upper

    third, two_thirds = arb(1) / 3, arb(2) / 3
    scores = [[[third, two_thirds], [two_thirds, third]]]  # one part, outputs x orbits
    assert _best_upper(scores) == 2 * upper_of(two_thirds)
    value, rules = _best_lower(scores)
    assert rules == [((Fraction(0), Fraction(1)), (Fraction(1), Fraction(0)))]
    assert value <= Fraction(4, 3) < value + Fraction(1, 10**15)
    # balls that overlap tie and split the rule evenly
    tied, _ = _best_lower([[[arb(1, 0.1)], [arb(1, 0.2)]]])
    assert _best_lower([[[arb(1, 0.1)], [arb(1, 0.2)]]])[1] == [((Fraction(1, 2),
                                                                   Fraction(1, 2)),)]
    assert tied < 1


PARTY_SUM = """[problem]
name = "party-sum"
parties = 9
lambda = ["7/4", "7/4", "6/5", "6/5", "6/5", "2", "2", "2", "2"]
accuracy = "worst"
[[party]]
index = 1
function = "sum"
gain = {gain}
"""


@pytest.mark.parametrize("scale", ["1", "1e-9"])
def test_a_party_s_sum_is_decided_whatever_the_scale_of_the_gains(tmp_path, scale):
    path = tmp_path / "p.toml"
    path.write_text(PARTY_SUM.format(gain=f'{{ expr = "-{scale} * abs(f - y)" }}'))
    out = CliRunner().invoke(main, ["verify", str(path), "--json", "--method", "orbit"])
    result = json.loads(out.output)[0]["results"][0]
    assert result["verdict"] == "optimal", result
    # decided by the interval certificate from the orbit LP's hints (80 orbits: beyond the
    # exact simplex), not by a fallback to the exact route
    assert "by the interval orbit certificate" in result["reason"], result
    assert abs(result["relaxed_optimum"] - result["rr_value"]) <= 1e-9 * 9 * float(scale)


def _checked_json(tmp_path, monkeypatch) -> tuple[dict, dict]:
    """The interval certificate a party's `sum` is decided by, as the checker reads it,
    and the result."""
    import dpverify.checker

    seen: list[dict] = []
    inner = dpverify.checker.check_certificate

    def recorded(spec, data, *args, **kwargs):
        seen.append(data)
        return inner(spec, data, *args, **kwargs)

    monkeypatch.setattr(dpverify.checker, "check_certificate", recorded)
    path = tmp_path / "p.toml"
    path.write_text(PARTY_SUM.format(gain='{ expr = "-abs(f - y)" }'))
    out = CliRunner().invoke(main, ["verify", str(path), "--json", "--method", "orbit"])
    return seen[-1], json.loads(out.output)[0]["results"][0]


def test_the_hints_keep_small_denominators_but_in_one_entry_a_row(tmp_path, monkeypatch):
    """The rationalised hints complete each row by its largest entry (LARGEST), not by
    dividing every entry by the row's exact total: the other entries keep denominators of
    at most RATIONAL_DENOMINATOR (dividing by a total of 1,260 such rationals made every
    mass of a 30-party `sum` 20,000 digits long, and the certificate's check 4.5 s).
    Control: completed by SCALE, every entry of a mixed row is long."""
    from dpverify.theory import exact_rows
    from dpverify.verifiers.multiparty import orbit_worst

    def lengths(data: dict) -> tuple[int, int]:
        """The longest entry's length in the prior and in the rules, leaving out each
        row's longest."""
        masses = sorted(len(v) for v in data["upper"]["masses"])
        rows = [row for block in data["lower"]["decision"] for row in block]
        rest = max((sorted(len(v) for v in row)[-2] for row in rows), default=0)
        return masses[-2], rest

    data, result = _checked_json(tmp_path, monkeypatch)
    assert result["verdict"] == "optimal" and "interval orbit certificate" in result["reason"]
    short = len(str(orbit_worst.RATIONAL_DENOMINATOR)) * 2 + 1  # p/q, both below 10^12
    assert max(lengths(data)) <= short
    monkeypatch.setattr(orbit_worst, "LARGEST", exact_rows.SCALE)
    control, again = _checked_json(tmp_path, monkeypatch)
    assert again["verdict"] == "optimal"
    assert max(lengths(control)) > 3 * short


def test_a_rule_s_traces_are_dropped_before_it_is_made_exact():
    from dpverify.verifiers.multiparty.orbit_worst import RULE_FLOOR, _sparse_rule

    rule = np.array([[0.7, 0.3 - 1e-15, 1e-15], [1e-13, 1.0, -1e-17], [0.0, 0.0, 0.0]])
    sparse = _sparse_rule(rule)
    assert sparse.tolist() == [[0.7, 0.3 - 1e-15, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    # what it costs on any input: at most outputs x RULE_FLOOR of accuracy (gains in [0, 1])
    assert np.abs(sparse - np.clip(rule, 0, None)).sum(axis=1).max() <= 3 * RULE_FLOOR
    # negative control: an entry at the floor's scale of its row is kept
    assert _sparse_rule(np.array([[1.0, 2 * RULE_FLOOR]]))[0, 1] > 0


def test_a_wide_bracket_runs_again_and_keeps_the_better_end_of_each(monkeypatch):
    a = worst_ipm.DenseWorst(np.array([1.0]), np.array([[1.0]]), 0.2, 0.9, 3)
    b = worst_ipm.DenseWorst(np.array([2.0]), np.array([[2.0]]), 0.1, 0.5, 4)
    best = worst_ipm._best_of(a, b)
    assert (best.lower, best.upper, best.iterations) == (0.2, 0.5, 7)
    assert best.rule is a.rule and best.prior is b.prior
    calls: list[int] = []
    inner = worst_ipm._dense_block

    def counted(lp, target, solve_, **kw):
        calls.append(1)
        return inner(lp, target, solve_, **kw)

    monkeypatch.setattr(worst_ipm, "_dense_block", counted)
    lp = WorstLp.over_class_orbits(OrbitSpace((2, 3), (Fraction(3, 2), Fraction(2))),
                                   list(range(12)), np.eye(2)[[0, 1] * 6])
    monkeypatch.setattr(worst_ipm, "RETRY_WIDTH", -1.0)  # every bracket is too wide
    twice = worst_ipm.dense_worst(lp)
    assert len(calls) == 2
    # negative control: a bracket within RETRY_WIDTH is not run again
    calls.clear()
    monkeypatch.setattr(worst_ipm, "RETRY_WIDTH", float("inf"))
    once = worst_ipm.dense_worst(lp)
    assert len(calls) == 1 and twice.upper <= once.upper + 1e-15
    assert twice.lower >= once.lower - 1e-15


def test_a_bracket_within_the_caller_s_need_ends_the_rounds_and_is_not_run_again(monkeypatch):
    """`enough` (an orbit certificate's share of --tol): the row generation stops at the
    first bracket within it, and a last round within it is not repeated on every thread,
    while RETRY_WIDTH would repeat it. Control: with a need below every bracket, the rounds
    go on to the end and the last one runs again."""
    monkeypatch.setattr(worst_ipm, "RETRY_WIDTH", -1.0)  # every bracket would be retried
    full, found = _rounds(monkeypatch, worst_ipm.ACTIVE_ALL, enough=-1.0)
    assert full[-1] == full[-2]  # the last round once more
    loose, rough = _rounds(monkeypatch, worst_ipm.ACTIVE_ALL, enough=0.5)
    assert len(set(loose)) == len(loose) < len(full) - 1  # fewer rounds, none repeated
    assert rough.upper - rough.lower <= 0.5
    lower, upper = float_bracket(_majority_lp(), rough.prior, rough.rule)
    assert lower <= found.upper + 1e-12 and upper >= found.lower - 1e-12  # still bounds


def test_a_round_ends_once_its_rule_clearly_leaves_a_row_outside_below(monkeypatch):
    """ROUND_WIDTH: a round whose bracket is within it, and whose rule already leaves a row
    outside the round more than the bracket's width below the round's own worst row, ends
    there (no end game on an LP that is not the last); the rows join and the last round
    still reaches the target. Control: with ROUND_WIDTH below every bracket every round
    runs to its end, in more iterations, to the same optimum."""
    ends: list[tuple[int, int, float]] = []
    inner = worst_ipm._dense_block

    def counted(lp, target, solve_, **kw):
        found = inner(lp, target, solve_, **kw)
        ends.append((int(lp.rows.size), found.iterations, found.width))
        return found

    monkeypatch.setattr(worst_ipm, "_dense_block", counted)
    monkeypatch.setattr(worst_ipm, "ACTIVE_FROM", 100)
    monkeypatch.setattr(worst_ipm, "LONG_COST", 0)
    monkeypatch.setattr(worst_ipm, "ACTIVE_START", 24)
    monkeypatch.setattr(worst_ipm, "RETRY_WIDTH", float("inf"))  # no round repeated
    lp = _majority_lp()

    def run(width: float):
        ends.clear()
        monkeypatch.setattr(worst_ipm, "ROUND_WIDTH", width)
        found = worst_ipm.dense_worst(lp, solve=lambda p: solve(
            p, "highs", feasibility_tol=1e-10))
        return list(ends), found

    early, found = run(1e-3)
    full, control = run(-1.0)
    assert [rows for rows, _, _ in early] == [rows for rows, _, _ in full]
    # the rounds before the last ended early, wide, in fewer iterations; the last did not
    assert all(w > worst_ipm.TARGET_WIDTH for _, _, w in early[:-1])
    assert sum(i for _, i, _ in early[:-1]) < sum(i for _, i, _ in full[:-1])
    assert all(w <= 1e-9 for _, _, w in full)
    assert early[-1][2] <= 1e-9
    lower, upper = float_bracket(lp, found.prior, found.rule)
    assert upper - lower < 1e-9
    assert abs(found.upper - control.upper) < 1e-9 and abs(found.lower - control.lower) < 1e-9


def test_until_ends_the_method_after_the_iteration_that_asks(monkeypatch):
    """_dense_block's `until`: True ends the method after that iteration, unpolished (its
    best pair is still a pair of bounds); control: a callback that never asks changes
    nothing."""
    lp = _majority_lp()
    polished: list[int] = []
    inner = worst_ipm._polished
    monkeypatch.setattr(worst_ipm, "_polished", lambda *a: polished.append(1) or inner(*a))
    asked: list[float] = []

    def after(k: int):
        def until(lo, hi, rule):
            asked.append(hi - lo)
            assert rule.shape == (lp.channel.columns, lp.m)
            return len(asked) >= k
        return until

    plain = worst_ipm._dense_block(lp, 1e-30, None)  # an unreachable target: polished
    assert polished
    polished.clear()
    cut = worst_ipm._dense_block(lp, 1e-30, None, until=after(3))
    assert cut.iterations == 3 and not polished
    lower, upper = float_bracket(lp, cut.prior, cut.rule)
    assert lower <= plain.upper + 1e-12 and upper >= plain.lower - 1e-12
    assert upper - lower > plain.width
    asked.clear()
    same = worst_ipm._dense_block(lp, 1e-30, None, until=after(10**6))
    assert same.iterations == plain.iterations
    assert (same.lower, same.upper) == (plain.lower, plain.upper)


def test_seed_rows_join_the_first_round(monkeypatch):
    """A seed (the other own bit's prior support, orbit_worst._float_hints) joins the
    first round's rows; the result brackets the same optimum. Control: without it the first
    round has ACTIVE_START rows."""
    plain, found = _rounds(monkeypatch, worst_ipm.ACTIVE_ALL)
    seed = np.flatnonzero(found.prior > 0)
    seeded, again = _rounds(monkeypatch, worst_ipm.ACTIVE_ALL, seed=seed)
    assert plain[0] == 24 and seeded[0] > 24 and len(seeded) < len(plain)
    assert abs(again.upper - found.upper) < 1e-10 and abs(again.lower - found.lower) < 1e-10


def test_a_party_s_second_own_bit_starts_from_the_first_s_support(tmp_path, monkeypatch):
    """The two own bits of a party in several classes solve LPs on the same orbits of the
    other classes: the second starts from the rows of the first's prior support (a
    party's `sum` at 40 parties: 67 s -> 47 s). Control: the first starts from none."""
    from dpverify.verifiers.multiparty import orbit_worst

    seeds = []
    inner = orbit_worst.dense_or_columns

    def recorded(lp, solve_, enough=None, seed=None, check=None):
        seeds.append(None if seed is None else len(seed))
        return inner(lp, solve_, enough, seed, check)

    monkeypatch.setattr(orbit_worst, "dense_or_columns", recorded)
    path = tmp_path / "p.toml"
    # own bits whose gains are not the same columns shifted (else the second is carried)
    path.write_text(PARTY_SUM.format(gain='{ expr = "-abs(f - 2 * y)" }'))
    out = CliRunner().invoke(main, ["verify", str(path), "--json", "--method", "orbit"])
    assert json.loads(out.output)[0]["results"][0]["verdict"] == "optimal"
    assert seeds[0] is None and len(seeds) == 2 and seeds[1] > 0


def _own_bit_lps(expr):
    """The two own bits' LPs of party 1 (alone in its class) of a `sum` with gain
    `expr(f, y)` in [0, 1], on the orbits of classes of 3 and 4 parties."""
    space = OrbitSpace((1, 3, 4), (Fraction(3, 2), Fraction(2), Fraction(5, 4)))
    gains = [[expr(sum(space.weights(w)), y) for y in range(space.parties + 1)]
             for w in range(space.count)]
    lps = []
    for bit in (0, 1):
        rest, rows, _ = without_class(space, 0, bit)
        lps.append(WorstLp.over_class_orbits(rest, np.arange(rest.count),
                                             gain_exact=[gains[int(r)] for r in rows]))
    return lps


def test_an_own_bit_s_hints_carry_to_the_other_where_its_columns_dominate():
    """worst_hints.carried: under `-abs(f - y)` the two own bits' gains are the same
    columns shifted by one, so the first bit's hints bracket the second's optimum as
    narrowly, checked in exact arithmetic against its own exact optimum. Controls: the
    rule carried without moving its columns proves far less, and gains whose columns do
    not dominate each other (`-abs(f - 2 y)`) are not carried."""
    from dpverify.theory.worst_hints import DENSE, WorstHints, carried, dominating

    first, second = _own_bit_lps(lambda f, y: Fraction(8 - abs(f - y), 8))
    found = worst_ipm.dense_worst(first)
    hints = WorstHints(found.rule, found.prior, True, DENSE)
    moved = carried(hints, first.gain, second.gain)
    assert moved is not None
    optimum = solve_exact(second).value
    exact_rule = [[Fraction(v).limit_denominator(10**12) for v in row]
                  for row in np.clip(moved.rule, 0, None) / np.clip(moved.rule, 0, None)
                  .sum(axis=1, keepdims=True)]
    masses = [Fraction(v).limit_denominator(10**12) for v in np.clip(moved.masses, 0, None)]
    masses = [m / sum(masses) for m in masses]
    low, high = rule_value(second, exact_rule), prior_bound(second, masses)
    assert low <= optimum <= high and high - low < Fraction(1, 10**9)
    assert float(high - low) <= found.width + 1e-12
    # control: the same rule on the same columns, not moved
    lower, _ = float_bracket(second, found.prior, found.rule)
    assert lower < float(optimum) - 1e-2
    # control: columns that do not dominate each other
    first, second = _own_bit_lps(lambda f, y: Fraction(16 - abs(f - 2 * y), 16))
    assert dominating(first.gain, second.gain) is None
    assert carried(hints, first.gain, second.gain) is None


def test_a_party_s_second_own_bit_is_carried_where_its_gains_are_the_first_s_shifted(
        tmp_path, monkeypatch):
    """Under `-abs` a party's `sum` solves one own bit's orbit LP, not two, and its verdict
    and bracket are those of the run that solves both. Control: with `carried` off both
    are solved."""
    from dpverify.verifiers.multiparty import orbit_worst

    calls = []
    inner = orbit_worst.dense_or_columns

    def counted(lp, solve_, enough=None, seed=None, check=None):
        calls.append(lp.rows.size)
        return inner(lp, solve_, enough, seed, check)

    monkeypatch.setattr(orbit_worst, "dense_or_columns", counted)
    path = tmp_path / "p.toml"
    path.write_text(PARTY_SUM.format(gain='"-abs"'))
    args = ["verify", str(path), "--json", "--method", "orbit"]
    carried_run = json.loads(CliRunner().invoke(main, args).output)[0]["results"][0]
    assert len(calls) == 1
    calls.clear()
    monkeypatch.setattr(orbit_worst, "carried", lambda *a: None)
    solved_run = json.loads(CliRunner().invoke(main, args).output)[0]["results"][0]
    assert len(calls) == 2
    assert carried_run["verdict"] == solved_run["verdict"] == "optimal"
    assert abs(carried_run["relaxed_optimum"] - solved_run["relaxed_optimum"]) < 1e-9


MAJORITY_EPS = """[problem]
name = "majority-eps"
parties = 12
epsilon = [0.5, 0.5, 0.5, 0.5, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0]
accuracy = "worst"
[observer]
function = "majority"
gain = "-abs"
"""


def test_hints_too_wide_to_decide_are_not_valued_exactly(tmp_path, monkeypatch):
    """HOPELESS: where the orbit LP's float hints bracket the optimum more than twice as
    widely as --tol and the LP is beyond the exact simplex, `verify` makes no exact
    certificate from them (valued in rationals they bracket it as widely: a 30-party
    majority took past 100 s for an `error`); the verdict is `error`, saying why. Control:
    with HOPELESS infinite the exact certificate is made, and decides nothing either."""
    from dpverify.theory.worst_hints import WorstHints
    from dpverify.verifiers.multiparty import orbit_worst

    def poor(lp, solve_, enough=None, seed=None, check=None):  # no solution: the default hints
        return WorstHints(np.zeros((lp.channel.columns, lp.m)), np.zeros(lp.rows.size),
                          False, "none")

    valued: list[int] = []
    inner = orbit_worst.worst_certificate

    def counted(*args, **kwargs):
        valued.append(1)
        return inner(*args, **kwargs)

    monkeypatch.setattr(orbit_worst, "dense_or_columns", poor)
    monkeypatch.setattr(orbit_worst, "worst_certificate", counted)
    monkeypatch.setattr(orbit_worst, "ORBIT_EXACT_ROWS", 0)  # beyond the exact simplex
    path = tmp_path / "p.toml"
    path.write_text(MAJORITY_EPS)

    def run():
        valued.clear()
        out = CliRunner().invoke(main, ["verify", str(path), "--json", "--method", "orbit"])
        return json.loads(out.output)[0]["results"][0], len(valued)

    result, made = run()  # the uniform candidate only (it is valued exactly, and cheap)
    assert result["verdict"] == "error" and "wider than --tol" in result["reason"]
    monkeypatch.setattr(orbit_worst, "HOPELESS", float("inf"))
    control, made_too = run()
    assert control["verdict"] == "error" and made_too > made  # the hints' too, in vain
    assert control["reason_code"] == "bracket-too-wide"


PARITY_AT_LAMBDAS = """[problem]
name = "parity"
parties = 5
lambda = ["4/3", "4/3", "5/2", "5/2", "5/2"]
accuracy = "worst"

[observer]
function = "parity"
gain = { expr = "3 if f == y else (-1 if y > f else 0)" }
"""


def _parity_lp(sizes: tuple[int, ...]) -> WorstLp:
    space = OrbitSpace(sizes, (Fraction(4, 3), Fraction(5, 2)))
    gains = [[Fraction(4 if sum(space.weights(w)) % 2 == y else (0 if y > sum(
        space.weights(w)) % 2 else 1), 4) for y in (0, 1)] for w in range(space.count)]
    return WorstLp.over_class_orbits(space, list(range(space.count)), gain_exact=gains)


def test_the_exact_simplex_stops_at_its_pivot_budget():
    from dpverify.theory.exact_lp import PivotLimit
    from dpverify.theory.worst_lp import pivot_budget

    lp = _parity_lp((2, 2))
    full = solve_exact(lp)  # from the crash basis (no basis finder): 14 pivots
    assert rule_value(lp, full.rule) == prior_bound(lp, full.masses) == full.value
    with pytest.raises(PivotLimit):
        solve_exact(lp, pivot_work=0)  # 4 pivots
    assert solve_exact(lp, pivot_work=10**9).value == full.value  # the control
    assert pivot_budget(0, 18) == 4 and pivot_budget(50_000_000, 114) == 33


def test_verify_keeps_a_checked_bracket_for_a_long_exact_simplex_and_certify_proves(
        tmp_path, monkeypatch):
    # issue 25: parity at lambdas 4/3 and 5/2 in classes of 2 and 18 (57 orbits) took 891
    # exact pivots, 19 s, where the float hints bracketed the optimum within 1e-14. Here
    # the exact simplex starts from the crash basis (no float basis, as there) with a
    # budget of 4 pivots, which 5 parties need more than.
    import dpverify.verifiers.multiparty.orbit_worst as orbit_worst
    from dpverify.verifiers.solving import Solver

    monkeypatch.setattr(Solver, "basis_finder", lambda self: lambda rows, rhs, cost: None)
    path = tmp_path / "parity.toml"
    path.write_text(PARITY_AT_LAMBDAS)

    def verified() -> dict:
        out = CliRunner().invoke(main, ["verify", str(path), "--json", "--method", "orbit"])
        return json.loads(out.output)[0]["results"][0]

    monkeypatch.setattr(orbit_worst, "QUICK_PIVOT_WORK", 0)
    result = verified()
    assert result["verdict"] == "optimal" and result["reason_code"] == "bracketed", result
    assert "bracketed within" in result["reason"]
    out = CliRunner().invoke(main, ["certify", str(path), "-o", str(tmp_path / "certs")])
    assert out.exit_code == 0 and "1 proved optimal" in out.output, out.output
    # the control: with the budget the exact simplex needs, verify proves the optimum
    monkeypatch.setattr(orbit_worst, "QUICK_PIVOT_WORK", 10**12)
    result = verified()
    assert result["verdict"] == "optimal" and result["reason_code"] == "proved", result


def _orbit_worst(text: str):
    from dpverify.spec.loader import loads
    from dpverify.verifiers.multiparty.orbit import class_lambdas, orbit_problem

    spec = loads(text)
    problem, _ = orbit_problem(spec, spec.agents[0])
    lower, upper, _ = class_lambdas(spec, problem.classes)
    return problem, lower, upper


def test_the_game_s_candidate_is_valued_in_balls_only_where_it_could_decide():
    import dpverify.verifiers.multiparty.orbit_worst as orbit_worst
    from dpverify.verifiers.options import VerifyOptions

    solver = VerifyOptions().solver()
    # parity at small epsilons: the game's candidate is within --tol (it decides)
    close, lower, upper = _orbit_worst(
        '[problem]\nparties = 24\nepsilon = [' + ", ".join(["0.05"] * 12 + ["0.1"] * 12)
        + ']\naccuracy = "worst"\n[observer]\nfunction = "parity"\n')
    kept = orbit_worst._game_candidate("observer", close, lower, upper, solver,
                                       skip_wider=1e-9)
    assert kept is not None and kept.width <= Fraction(1, 10**9) * close.units.span
    # the sum of 12 parties: the game says little, its float bracket is wide
    wide, lower, upper = _orbit_worst(
        '[problem]\nparties = 12\nlambda = [' + ", ".join(['"3/2"'] * 5 + ['"3"'] * 7)
        + ']\naccuracy = "worst"\n[observer]\nfunction = "sum"\ngain = "indicator"\n')
    built = orbit_worst._game_candidate("observer", wide, lower, upper, solver)
    assert built is not None and built.width > Fraction(1, 100) * wide.units.span
    assert orbit_worst._game_candidate("observer", wide, lower, upper, solver,
                                       skip_wider=1e-9) is None
    # the control: a bound it is within keeps it
    assert orbit_worst._game_candidate("observer", wide, lower, upper, solver,
                                       skip_wider=1.0) is not None
