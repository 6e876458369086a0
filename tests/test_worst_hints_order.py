"""The order of the worst case's hints without symmetry (verifiers/multiparty/hints.py,
`block_hints`; docs/theory.md 3.4): the brief pass over the sub-cubes that may decide, the
dense method on one BLAS thread (truly one: scipy's OpenBLAS under the limit too), the
rule's LP on the prior's ties (from 256 inputs), the other sub-cubes, the dense method on
every thread, the ties again, HiGHS's dense LP; each only while the bracket is open.
Spies record what ran; every bracket is a real one, recomputed from the dense channel."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest
from worst_bounds import dense_bounds

from dpverify.theory import worst_candidates, worst_ipm
from dpverify.theory.worst_lp import WorstLp
from dpverify.verifiers.multiparty import hints
from dpverify.verifiers.multiparty.hints import BriefPass, block_hints, brief_pass, cube_work
from dpverify.verifiers.options import VerifyOptions

OPTIONS = VerifyOptions()
ENOUGH = hints.decisive_width(OPTIONS)


def _lp(epsilons, seed, m):
    rng = np.random.default_rng(seed)
    gain = np.eye(m)[rng.integers(0, m, 1 << len(epsilons))]
    return WorstLp.over_inputs(list(np.exp(epsilons)), gain), list(np.exp(epsilons))


@pytest.fixture()
def ran(monkeypatch):
    """The hints' steps in the order they finished (a brief pass cut short raises)."""
    log: list[str] = []

    def spy(module, name, label):
        inner = getattr(module, name)

        def wrapped(*args, **kwargs):
            found = inner(*args, **kwargs)
            log.append(label)
            return found

        monkeypatch.setattr(module, name, wrapped)

    spy(worst_candidates, "split_worst", "cubes")
    spy(worst_ipm, "dense_worst", "dense")
    spy(worst_ipm, "dense_again", "again")
    spy(worst_ipm, "polish_on_ties", "ties")
    spy(hints, "better_ends", "highs")
    return log


# an extreme party among moderate ones (8 parties, a 4-valued table): its sub-cubes have
# 128 inputs and 4 outputs, over the brief pass's work
ONE_EXTREME = [0.4, 1.1, 25.0, 0.8, 1.6, 0.3, 2.2, 1.4]
# five extreme parties of eight, two outputs: sub-cubes of 8 inputs
FIVE_EXTREME = [22.0, 0.6, 25.0, 28.0, 1.2, 24.0, 0.9, 26.0]


def test_the_dense_method_goes_first_where_the_sub_cubes_are_large(ran):
    lp, lambdas = _lp(ONE_EXTREME, 1, 4)
    brief = brief_pass(lambdas, ENOUGH)
    assert brief.most_work is not None and cube_work(lp, 8, [2]) > brief.most_work
    found = block_hints(lp, lambdas, OPTIONS, brief)
    lower, upper = dense_bounds(lp, found.prior, found.rule)
    assert upper - lower <= ENOUGH and lower == pytest.approx(found.lower, abs=1e-12)
    assert ran[0] == "dense" and "again" not in ran and "highs" not in ran
    # negative control: where the sub-cubes are small, they go first, and the dense method
    # is spared when they decide
    ran.clear()
    lp, lambdas = _lp(FIVE_EXTREME, 2, 2)
    found = block_hints(lp, lambdas, OPTIONS, brief_pass(lambdas, ENOUGH))
    lower, upper = dense_bounds(lp, found.prior, found.rule)
    assert upper - lower <= ENOUGH
    assert ran[0] == "cubes" and "dense" not in ran


def test_without_the_brief_pass_the_dense_method_goes_first(ran):
    lp, lambdas = _lp(FIVE_EXTREME, 2, 2)
    found = block_hints(lp, lambdas, OPTIONS, None)
    assert found.width <= ENOUGH
    assert ran[0] == "dense"


def test_a_spent_brief_pass_leaves_the_sub_cubes_for_after_the_dense_method(ran, monkeypatch):
    lp, lambdas = _lp(FIVE_EXTREME, 2, 2)
    spent = BriefPass(time.perf_counter() - 1.0, np.inf, None)  # its time is up already
    stalled = worst_ipm.DenseWorst(np.full(lp.rows.size, 1 / lp.rows.size),
                                   np.full((lp.channel.columns, 2), 0.5), 0.0, 1.0, 0)
    monkeypatch.setattr(worst_ipm, "dense_worst", lambda *a, **k: (ran.append("dense"), stalled)[1])
    found = block_hints(lp, lambdas, OPTIONS, spent)
    # the dense method "stalled" at [0, 1] (the uniform prior's ties decide nothing): the
    # sub-cubes after it decide
    assert ran[:3] == ["dense", "ties", "cubes"] and found.width <= ENOUGH
    assert "again" not in ran and "highs" not in ran


def test_the_prior_s_ties_go_right_after_a_dense_run_whose_rule_is_weak(ran, monkeypatch):
    # a good prior with a constant rule: the dense run "stalled" on its rule; the rule's LP
    # on the prior's ties closes the bracket before anything slower runs
    lp, lambdas = _lp([0.4, 1.1, 0.9, 0.8, 1.6, 0.3, 1.2, 1.4], 4, 3)
    good = worst_ipm.dense_worst(lp, enough=float("inf"))
    ran.clear()
    constant = np.zeros_like(good.rule)
    constant[:, 0] = 1.0
    weak = worst_ipm.DenseWorst(good.prior, constant, *dense_bounds(lp, good.prior, constant),
                                0)
    assert weak.width > 1e-3
    monkeypatch.setattr(worst_ipm, "dense_worst", lambda *a, **k: (ran.append("dense"), weak)[1])
    found = block_hints(lp, lambdas, OPTIONS, None)
    assert ran == ["dense", "ties"]
    lower, upper = dense_bounds(lp, found.prior, found.rule)
    assert upper - lower <= ENOUGH and lower == pytest.approx(found.lower, abs=1e-12)
    # negative control: below TIES_FROM_INPUTS inputs HiGHS's dense LP is cheap and goes
    # instead (after the run on every thread)
    ran.clear()
    small, small_lambdas = _lp([0.4, 1.1, 0.9, 0.8, 1.6, 0.3, 1.2], 4, 3)
    assert small.channel.columns < hints.TIES_FROM_INPUTS
    good = worst_ipm.dense_worst(small, enough=float("inf"))
    ran.clear()
    weak_small = worst_ipm.DenseWorst(good.prior, np.eye(3)[np.zeros(128, dtype=int)],
                                      0.0, good.upper, 0)
    monkeypatch.setattr(worst_ipm, "dense_worst",
                        lambda *a, **k: (ran.append("dense"), weak_small)[1])
    monkeypatch.setattr(worst_ipm, "dense_again", lambda *a, **k: None)
    block_hints(small, small_lambdas, OPTIONS, None)
    assert "ties" not in ran and ran[-1] == "highs"


def test_a_level_that_may_lose_more_than_decides_waits_for_the_dense_method():
    lambdas = list(np.exp(FIVE_EXTREME))
    lp = _lp(FIVE_EXTREME, 2, 2)[0]
    fixed = worst_candidates.split_parties(lambdas, 1e-6, 10)
    brief = brief_pass(lambdas, ENOUGH)
    assert brief.most_work is None  # five of eight parties extreme: any size
    assert brief.admits(lp, lambdas, fixed)
    # negative control: the same level with a party near 14 (entry 8e-7) fixed as well
    near = [*FIVE_EXTREME[:1], 14.0, *FIVE_EXTREME[2:]]
    far = list(np.exp(near))
    assert not brief.admits(lp, far, worst_candidates.split_parties(far, 1e-6, 10))


def test_the_dense_method_runs_again_on_every_thread_only_when_asked(monkeypatch):
    calls: list[int] = []
    inner = worst_ipm._dense_block

    def counted(*args, **kwargs):
        calls.append(1)
        return inner(*args, **kwargs)

    monkeypatch.setattr(worst_ipm, "_dense_block", counted)
    lp, _ = _lp([0.5, 1.0, 0.7, 1.3, 0.2], 3, 3)
    worst_ipm.dense_worst(lp, enough=float("inf"))
    assert len(calls) == 1
    again = worst_ipm.dense_again(lp)
    assert again is not None and len(calls) == 2
    lower, upper = dense_bounds(lp, again.prior, again.rule)
    assert lower <= upper + 1e-15 and upper - lower < 1e-9
    # negative controls: a bracket wider than `enough` runs again at once; and a block the
    # first run took on every thread already (THREADED_ROWS) is not run again
    calls.clear()
    worst_ipm.dense_worst(lp, enough=-1.0)
    assert len(calls) == 2
    calls.clear()
    big = WorstLp.over_inputs([2.0] * 11, np.eye(2)[np.arange(1 << 11) % 2])
    assert big.rows.size >= worst_ipm.THREADED_ROWS
    assert worst_ipm.dense_again(big) is None and not calls


THREADS = """
import sys
import numpy as np
from threadpoolctl import threadpool_info
from dpverify.theory import worst_ipm
from dpverify.theory.worst_lp import WorstLp
if sys.argv[1] == "control":
    worst_ipm._load_blas = lambda: None
seen = []
inner = worst_ipm._Problem.normal_matrix
def spied(self, *args):
    seen.append(sorted(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
    return inner(self, *args)
worst_ipm._Problem.normal_matrix = spied
assert "scipy.linalg" not in sys.modules
lp = WorstLp.over_inputs([2.0, 3.0, 1.5, 2.5], np.eye(2)[[0, 1, 1, 0] * 4])
worst_ipm.dense_worst(lp, enough=float("inf"))
print(max(max(s) for s in seen), min(len(s) for s in seen))
"""


def test_the_first_run_is_on_one_blas_thread_in_a_fresh_process():
    """threadpool_limits limits the BLAS libraries loaded when it is entered; scipy ships
    an OpenBLAS of its own, loaded on first use: dense_worst loads it first."""
    def run(mode: str) -> tuple[int, int]:
        done = subprocess.run([sys.executable, "-c", THREADS, mode], capture_output=True,
                              text=True, check=True, timeout=120)
        most, libraries = done.stdout.split()
        return int(most), int(libraries)

    most, libraries = run("limit")
    assert most == 1 and libraries >= 1
    # negative control (where there is more than one core): scipy loaded inside the limit
    # runs on every thread
    import os

    if (os.cpu_count() or 1) > 1:
        assert run("control")[0] > 1


# ------------------------------------------- the chain-form hint below the dense method's size

# a member of bench_speed's family (seed 8, k = 7, member 5): an observer, levels 0.02-10,
# a 4-valued table; HiGHS's chain-form LP (feasibility 1e-7) bracketed it at 1.4e-7, the
# exact certificate's repair then spent 4 s and left it so, and the LP route decided
OBSERVER_7 = ('[problem]\nname = "x"\nparties = 7\nepsilon = [0.1085, 0.1, 10.0093, 5.0071, '
              '0.0192, 5.0073, 1]\naccuracy = "worst"\n\n[observer]\nfunction = {{ table = '
              '{table} }}\ngain = {gain}\n')
OBSERVER_7_TABLE = [int(c) for c in (
    "0023022010300002112220111203010032121022312210200212101012232221"
    "2331202022020033100102213133233303233301113321220213323203112111")]


def test_a_wide_chain_form_hint_takes_the_dense_methods_ends():
    from dpverify.theory.certificates import WorstHint, trivial_orbits

    lp, lambdas = _lp([0.3, 1.2, 0.6, 2.0, 0.9], 4, 3)
    gain = lp.gain
    spoiled = WorstHint(rule=np.full((32, 3), 1 / 3), prior=None, x_orbits=lp.rows)
    found = hints.closer_hint(lambdas, gain, trivial_orbits(5), 0, None, OPTIONS, spoiled)
    lower, upper = dense_bounds(lp, found.prior, found.rule)
    assert upper - lower <= ENOUGH
    # negative control: a hint that decides is handed on as it is
    assert hints.closer_hint(lambdas, gain, trivial_orbits(5), 0, None, OPTIONS, found) is found


@pytest.mark.parametrize("gain", ['"indicator"', '{ expr = "1e-9 if f == y else 0" }'])
def test_the_observer_the_chain_form_hint_left_wide_is_proved(tmp_path, gain):
    from worst_bounds import verify_json

    found = verify_json(tmp_path, OBSERVER_7.format(table=OBSERVER_7_TABLE, gain=gain))
    assert found["verdict"] == "optimal", found
    result = found["results"][0]
    assert result["method"] == "proof" and "attempts" not in result, result


def test_rr_hint_solves_a_small_lp_dense_and_a_larger_one_in_chain_form(monkeypatch):
    """rr_hint gives HiGHS RR's worst-case LP dense while rows x columns x outputs is at
    most policy DENSE_HINT_NONZEROS (7-8 parties: 0.1-0.3 s against 0.4-3.5 s in chain
    form), in chain form beyond (the control: the limit lowered). Both are the same LP:
    their optima agree, and each end of the dense form's hints is a real bound."""
    from dpverify.defaults import LpForm
    from dpverify.spec.symmetric import trivial_orbits

    forms = []
    inner = hints.solve_float
    monkeypatch.setattr(hints, "solve_float",
                        lambda lp, solve, **kw: forms.append(kw["form"]) or inner(lp, solve, **kw))
    lp, lambdas = _lp([0.3, 1.0, 2.0, 0.7, 1.5], 5, 3)
    gain = lp.gain
    dense = hints.rr_hint(lambdas, gain, trivial_orbits(5), 0, None, OPTIONS)
    assert forms == [LpForm.DENSE]
    monkeypatch.setattr(hints, "DENSE_HINT_NONZEROS", 0)
    chain = hints.rr_hint(lambdas, gain, trivial_orbits(5), 0, None, OPTIONS)
    assert forms == [LpForm.DENSE, LpForm.CHAIN]
    lower, upper = dense_bounds(lp, dense.prior, dense.rule)
    chain_lower, chain_upper = dense_bounds(lp, chain.prior, chain.rule)
    assert upper - lower < 1e-7 and chain_upper - chain_lower < 1e-7
    assert max(lower, chain_lower) <= min(upper, chain_upper) + 1e-12


@pytest.mark.parametrize(("agent", "dense"), [("[[party]]\nindex = 2", True),
                                              ("[observer]", False)])
def test_a_party_s_blocks_count_the_other_parties_inputs_for_the_dense_method(
        monkeypatch, agent, dense):
    """The dense method takes a block of at most MAX_DENSE_INPUTS inputs: a party's own
    bit is a block on the other parties' 2^(k-1) inputs (worst_lp.block_on_inputs), so a
    party at k = 13 is solved where the observer is refused. At k = 5 with the limit
    lowered to 16: the party's blocks of 16 go to the dense method; the observer's 32
    inputs (the control) do not."""
    from dpverify.spec import loads
    from dpverify.spec.model import Accuracy
    from dpverify.verifiers.multiparty.memo import Hints
    from dpverify.verifiers.multiparty.reductions import AgentProblem

    monkeypatch.setattr(hints, "MAX_DENSE_INPUTS", 16)
    monkeypatch.setattr(hints, "DENSE_FROM_INPUTS", 16)
    calls = []
    monkeypatch.setattr(hints, "dense_hints", lambda *a, **kw: calls.append(a) or {})
    monkeypatch.setattr(hints, "solve_hints", lambda *a, **kw: calls.append("lp") or {})
    table = "[" + ", ".join(str((x * 7) % 3) for x in range(32)) + "]"
    spec = loads(f'[problem]\nparties = 5\nepsilon = [0.3, 1.1, 0.7, 2.0, 1.4]\n'
                 f'accuracy = "worst"\n{agent}\nfunction = {{ table = {table} }}\n')
    problem = AgentProblem(spec, spec.agents[0], Accuracy.WORST, VerifyOptions())
    hints.worst_plan(problem, Hints()).solved()
    assert (calls != ["lp"]) is dense and len(calls) == 1


def test_a_party_s_second_own_bit_carries_the_first_bit_s_bracket_where_columns_dominate():
    """carried_ends: a party's `sum` under -abs has its own bits' gain columns shifted by
    one, so the first bit's rule (columns moved) and prior bracket the second bit's LP no
    wider, around its optimum; the controls: a table function's columns do not dominate
    each other (None), and a bracket wider than `enough` is not carried (None)."""
    from worst_bounds import dense_bounds

    from dpverify.theory.worst_ipm import DenseWorst
    from dpverify.theory.worst_lp import block_on_inputs, solve_float

    k, party = 5, 3
    lambdas = list(np.exp([0.3, 1.1, 0.7, 2.0, 1.4]))
    sums = np.array([bin(x).count("1") for x in range(1 << k)])
    gain = 1 - np.abs(sums[:, None] - np.arange(k + 1)[None, :]) / k
    solve = OPTIONS.solver().tight(1e-10)

    def bracket(g):
        blocks = [block_on_inputs(lambdas, g, party, b) for b in (0, 1)]
        first = solve_float(blocks[0].lp, solve)
        prior = np.clip(first.masses, 0, None) / np.clip(first.masses, 0, None).sum()
        lower, upper = dense_bounds(blocks[0].lp, prior, first.rule)
        found = DenseWorst(prior, np.clip(first.rule, 0, None), lower, upper, 0)
        return found, blocks, solve_float(blocks[1].lp, solve).objective

    found, blocks, optimum = bracket(gain)
    moved = hints.carried_ends(found, blocks[0].lp, blocks[1].lp, 1e-6)
    assert moved is not None
    lower, upper = dense_bounds(blocks[1].lp, moved.prior, moved.rule)
    assert (lower, upper) == pytest.approx((moved.lower, moved.upper), abs=1e-12)
    assert lower - 1e-9 <= optimum <= upper + 1e-9 and upper - lower <= found.width + 1e-12
    assert hints.carried_ends(found, blocks[0].lp, blocks[1].lp, -1.0) is None
    table = np.eye(3)[np.random.default_rng(2).integers(0, 3, 1 << k)]
    found, blocks, _ = bracket(table)
    assert hints.carried_ends(found, blocks[0].lp, blocks[1].lp, 1.0) is None


@pytest.mark.parametrize(("function", "solves"), [('"sum"', 1), ("table", 2)])
def test_dense_hints_solve_a_sum_party_s_second_own_bit_only_when_not_carried(
        monkeypatch, function, solves):
    """dense_hints carries a `sum` party's first own bit to its second (one block solved);
    the control, a table function, solves both. Each hint still brackets its own bit."""
    from worst_bounds import dense_bounds

    from dpverify.spec import loads
    from dpverify.spec.tables import tabulate
    from dpverify.theory.units import units_of
    from dpverify.theory.worst_lp import block_on_inputs

    calls = []
    inner = hints.block_hints
    monkeypatch.setattr(hints, "block_hints",
                        lambda *a, **kw: calls.append(1) or inner(*a, **kw))
    if function == "table":
        function = "{ table = [" + ", ".join(str((x * 5) % 3) for x in range(32)) + "] }"
    spec = loads('[problem]\nparties = 5\nepsilon = [0.3, 1.1, 0.7, 2.0, 1.4]\n'
                 f'accuracy = "worst"\n[[party]]\nindex = 3\nfunction = {function}\n'
                 'gain = "-abs"\n')
    unit = units_of(tabulate(spec, spec.agents[0]).gain_exact).unit
    found = hints.dense_hints(spec, unit, 3, [0, 1], OPTIONS)
    assert len(calls) == solves
    for b in (0, 1):
        block = block_on_inputs(spec.lambdas, unit, 3, b)
        lower, upper = dense_bounds(block.lp, found[b].prior, block.restrict(found[b].rule))
        assert upper - lower <= hints.decisive_width(OPTIONS)


@pytest.mark.parametrize("bit", [0, 1])
def test_rr_hint_of_a_party_lifts_its_block_s_rule_and_keeps_the_own_bit_s_rows(bit):
    """rr_hint for party 2's own bit: a rule on every tau, the same on both of the party's
    released bits, and a prior on the inputs with that own bit (x_orbits in their order),
    which bracket the own bit's LP on all those inputs around its optimum."""
    from dpverify.defaults import LpForm
    from dpverify.spec.symmetric import trivial_orbits
    from dpverify.theory.certificates import own_bits
    from dpverify.theory.worst_lp import solve_float

    lp, lambdas = _lp([0.3, 1.0, 2.0, 0.7, 1.5], 7, 3)
    gain = lp.gain
    hint = hints.rr_hint(lambdas, gain, trivial_orbits(5), 2, bit, OPTIONS)
    rows = np.flatnonzero(own_bits(5, 2) == bit)
    assert hint.rule.shape[0] == 32 and np.array_equal(hint.x_orbits, rows)
    released = (np.arange(32) >> 3) & 1  # party 2's released bit (x1 most significant)
    np.testing.assert_array_equal(hint.rule[released == 0], hint.rule[released == 1])
    full = WorstLp.over_inputs(lambdas, gain, own_bits(5, 2) == bit)
    optimum = solve_float(full, OPTIONS.solver().tight(1e-10), form=LpForm.DENSE).objective
    lower, upper = dense_bounds(full, hint.prior, hint.rule)
    assert lower - 1e-9 <= optimum <= upper + 1e-9 and upper - lower < 1e-7
