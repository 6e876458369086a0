"""Verdicts that hold at every scale (docs/theory.md, "How a verdict is decided").

Each reproduction of a wrong or missing verdict found by an audit is a regression test here,
with variants at other scales and sizes:

* a multi-party `gap` needs an exact witness; a float disagreement is settled by the exact
  certificate (and its independent check), or the verdict is `error` ("undecided");
* an interior-point rise is settled the same way;
* no decision depends on the scale of the gains or losses (tolerances are relative to
  their range), and an upper bound below the candidate is never `optimal` by floats;
* extreme privacy levels decide (exactly, when a float LP cannot keep them);
* count problems decide up to n = 60 here (n = 100 in benchmarks/bench_count.py).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from lp_method import by_lp

from dpverify.reasons import ReasonCode
from dpverify.spec import loads
from dpverify.verifiers.count.verifier import _Bracket, decide
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.multiparty import settle as settle_module
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import Verdict

OPTIONS = VerifyOptions()


def results(text: str, options: VerifyOptions = OPTIONS):
    problem = verify_spec(loads(text), options)
    assert problem.results, problem.reason
    return problem.results


def xor_closed_form(k: int, lam: float) -> float:
    """KOV Corollary 3.1: sum_i C(k, 2i) lam^(k-2i) / (1+lam)^k."""
    return sum(math.comb(k, 2 * i) * lam ** (k - 2 * i) for i in range(k // 2 + 1)) / (1 + lam) ** k


# --------------------------------------------------------------------------- 1. false gap

PARTY_TABLE = ("[-1,-1,-1,-1,1,-1,-1,1,-1,-1,-1,1,1,-1,1,0,1,-1,0,-1,1,-1,1,-1,0,0,1,-1,0,1,"
               "-1,1]")


def party_square(scale: str = "", epsilon: str = "20.0") -> str:
    gain = '"-square"' if not scale else f'{{ expr = "-(f - y)**2 * {scale}" }}'
    return f"""
[problem]
parties = 5
epsilon = {epsilon}
accuracy = "worst"
[[party]]
index = 1
function = {{ table = {PARTY_TABLE} }}
gain = {gain}
outputs = [-1, -0.5, 0, 0.5, 1]
"""


def test_reproduction_1_no_false_gap_at_epsilon_20():
    (r,) = results(party_square())
    assert r.verdict is Verdict.OPTIMAL, r.reason
    assert r.rr_value == pytest.approx(-2.6794996547911916e-08, rel=1e-6)
    # the relaxed optimum reported is the bracket's upper end: above the optimum, and
    # within --tol of the gains' range (4) of it
    assert r.relaxed_optimum >= -2.6794996547911916e-08 - 1e-15
    assert r.relaxed_optimum == pytest.approx(-2.6794996547911916e-08, abs=1e-9 * 4)
    (c,) = results(party_square(), VerifyOptions(certify=True))
    assert c.verdict is Verdict.OPTIMAL and c.to_json()["proof"]["status"] == "bracket"


@pytest.mark.parametrize("epsilon", ["12.0", "28.0"])
def test_variants_of_reproduction_1_decide(epsilon):
    (r,) = results(party_square(epsilon=epsilon))
    assert r.verdict is Verdict.OPTIMAL, r.reason


# --------------------------------------------------------------------------- 2. interior

INTERIOR = """
[problem]
parties = 5
lambda = ["10000001/10000000", "1000000", "1000000", "3/2", "1000000"]
accuracy = "average"
[observer]
function = { expr = "(x1 + 2*x5) % 3" }
gain = { matrix = [[0, 0, 2], [-1, 2, 1], [1, 1, 1]] }
"""


def test_reproduction_2_an_interior_rise_is_settled_exactly():
    (r,) = results(INTERIOR, VerifyOptions(grid=4))
    assert r.verdict is Verdict.OPTIMAL, r.reason
    assert r.relaxed_optimum == pytest.approx(1.5, rel=1e-9)
    assert r.to_json()["interior_optimum"] in (None, pytest.approx(1.5, abs=1e-6))


# --------------------------------------------------------------------------- 3. scale

TABLE4 = "[0, 1, 1, 2, 1, 2, 2, 0, 1, 0, 2, 2, 1, 0, 0, 2]"


def scaled_matrix(scale: str) -> str:
    entries = f"[[1{scale},0,-1{scale}],[0,1{scale},0],[-1{scale},0,1{scale}]]"
    return f"""
[problem]
parties = 4
epsilon = [0.3, 0.7, 1.1, 2.0]
[observer]
function = {{ table = {TABLE4} }}
gain = {{ matrix = {entries} }}
"""


@pytest.mark.parametrize("scale, factor", [("e-8", 1e-8), ("e-12", 1e-12), ("e-20", 1e-20),
                                           ("e-300", 1e-300), ("e5", 1e5)])
def test_reproduction_3_verdicts_and_values_scale_with_the_gains(scale, factor):
    reference = results(scaled_matrix(""))
    scaled = results(scaled_matrix(scale))
    for a, b in zip(reference, scaled, strict=True):
        assert a.verdict is b.verdict is Verdict.OPTIMAL, (b.reason,)
        assert b.relaxed_optimum == pytest.approx(a.relaxed_optimum * factor, rel=1e-6)
        assert b.rr_value == pytest.approx(a.rr_value * factor, rel=1e-6)
        # never an upper bound below the candidate (beyond rounding), whatever the scale
        assert b.relaxed_optimum >= b.rr_value - 1e-9 * factor


def count_parity(scale: str) -> str:
    return f"""
[problem]
kind = "count"
n = 6
alpha = 0.5
[consumer]
loss = {{ expr = "(abs(i - r) % 2) * {scale}" }}
"""


@pytest.mark.parametrize("scale", ["1", "10**-9", "1 / 10**250 / 10**50", "10**12"])
def test_reproduction_3_a_scaled_count_gap_is_found(scale):
    (r,) = results(count_parity(scale))
    assert r.verdict is Verdict.GAP, r.reason
    assert r.reason.startswith("proved exactly")
    assert r.mechanism_optimum == pytest.approx(0.75 * r.geometric_value, rel=1e-9)  # 25 %


def test_the_count_decision_is_relative_and_never_optimal_below_the_bound():
    """decide() on normalised brackets: a candidate below the proven lower bound on every
    mechanism is an error, not optimal; within tol of it, optimal; far above, a gap."""
    mech = _Bracket(lower=0.5, upper=0.5 + 1e-12, value=0.5)
    assert decide(mech, _Bracket(0.49, 0.49, 0.49), 1e-9)[0] is Verdict.ERROR
    assert decide(mech, _Bracket(0.5, 0.5 + 5e-10, 0.5), 1e-9)[0] is Verdict.OPTIMAL
    assert decide(mech, _Bracket(0.6, 0.6, 0.6), 1e-9)[0] is Verdict.GAP
    verdict, why, code = decide(mech, _Bracket(0.4, 0.6, 0.6), 1e-9)
    assert verdict is Verdict.ERROR and code is ReasonCode.BRACKET_TOO_WIDE and why


# --------------------------------------------------------------------------- 4. extremes


@pytest.mark.parametrize("epsilon", [27.6, 28.0, 40.0, 300.0])
def test_reproduction_4_extreme_epsilon_decides(epsilon):
    text = f'[problem]\nparties = 1\nepsilon = {epsilon}\n[observer]\nfunction = "bit:1"\n'
    for r in results(text):
        assert r.verdict is Verdict.OPTIMAL, r.reason
        lam = math.exp(epsilon)
        assert r.relaxed_optimum == pytest.approx(lam / (1 + lam), rel=1e-12)


def test_extreme_epsilon_with_several_parties_and_a_party_agent():
    text = ('[problem]\nparties = 3\nepsilon = [40, 1.0, 28]\n[observer]\nfunction = "xor"\n'
            '[[party]]\nindex = 2\nfunction = "majority"\n')
    for r in results(text):
        assert r.verdict is Verdict.OPTIMAL and r.method == "proof", r.reason
    observer = [r for r in results(text) if r.agent == "observer"]
    # XOR with two nearly noiseless parties: the accuracy of the one noisy bit
    assert observer[0].relaxed_optimum == pytest.approx(math.e / (1 + math.e), rel=1e-9)


@pytest.mark.parametrize("k", [5, 7])
@pytest.mark.parametrize("function, expected", [('{ expr = "1" }', None), ('"xor"', "xor")])
def test_reproduction_4_lambda_near_one_decides(k, function, expected):
    text = (f'[problem]\nparties = {k}\nlambda = "10000001/10000000"\naccuracy = "worst"\n'
            f"[observer]\nfunction = {function}\n")
    (r,) = results(text)
    assert r.verdict is Verdict.OPTIMAL, r.reason
    want = 1.0 if expected is None else xor_closed_form(k, 1.0000001)
    assert r.relaxed_optimum == pytest.approx(want, rel=1e-9)


def count(n: int, level: str, loss: str) -> str:
    return f'[problem]\nkind = "count"\nn = {n}\n{level}\n[consumer]\nloss = "{loss}"\n'


@pytest.mark.parametrize("n, level, loss", [
    (17, 'alpha = "1/50"', "indicator"),
    (40, "epsilon = 1.0", "abs"),
    (40, "epsilon = 1.0", "indicator"),
    (60, "epsilon = 1.0", "indicator"),
    (30, 'alpha = "1/1000"', "square"),
])
def test_reproductions_4_and_6_count_problems_decide(n, level, loss):
    (r,) = results(count(n, level, loss))
    assert r.verdict is Verdict.OPTIMAL, r.reason
    assert r.geometric_value == pytest.approx(r.mechanism_optimum, rel=1e-6)


# --------------------------------------------------------------------------- reasons


def test_no_reason_is_a_raw_solver_status():
    """A failed solve is explained in words, starting with `undecided:`."""
    from dpverify.lp import LpSolution, LpStatus

    def fail(lp, backend="highs", **kw):
        return LpSolution(LpStatus.UNKNOWN, math.nan, np.zeros(0), np.zeros(0), 0.0, "highs",
                          "Not Set")

    (r,) = results(count(8, "alpha = 0.5", "abs"), VerifyOptions(solve_with=fail))
    assert r.verdict is Verdict.ERROR and r.reason.startswith("undecided: the optimal-mechanism")
    assert not r.reason.startswith(("unknown", "Not Set", "optimal-mechanism LP:"))


# --------------------------------------------------------------------------- settling


XOR3 = '[problem]\nparties = 3\nlambda = "2"\n[observer]\nfunction = "xor"\n'


class FakeMaker:
    """A certificate maker (verifiers/multiparty/routes.py) that hands out one certificate:
    what the planner would give settle, injected instead."""

    method = "proof"

    def __init__(self, cert) -> None:
        self.cert = cert

    def fits(self, problem):
        return None

    def use_interval(self, problem):
        return False

    def exact(self, problem, hints, *, fine=True, quick=False):
        return self.cert


def _settle(spec, accuracy, why, witness=None, cert=None):
    """settle() of the observer, by the planner's makers or one that gives `cert`."""
    from dpverify.verifiers.multiparty.hints import Hints
    from dpverify.verifiers.multiparty.planner import hints_for
    from dpverify.verifiers.multiparty.reductions import AgentProblem

    problem = AgentProblem(spec, spec.agents[0], accuracy, OPTIONS)
    hints = hints_for(problem) if cert is None else Hints(makers=(FakeMaker(cert),))
    return settle_module.settle(problem, hints, why, witness)


def _fake_certificate(monkeypatch, value: Fraction, bound: Fraction, status: str):
    """The exact certificate with other bounds (test-only), and a checker that passes it."""
    from dataclasses import replace

    from dpverify import checker
    from dpverify.verifiers.multiparty.planner import certificate_for

    spec = loads(XOR3)
    monkeypatch.setattr(checker, "check_certificate",
                        lambda spec, c: checker.CheckResult(True, "fake"))
    return replace(certificate_for(spec, spec.agents[0], "average"), value=value,
                   bound=bound, status=status)


def test_settle_needs_an_exact_witness_above_the_exact_bound(monkeypatch):
    """Negative control of the gap rule: with a certificate whose bracket is wide, an exact
    witness *above* its bound gives `gap`; one below gives `error` (undecided)."""
    spec = loads(XOR3)
    agent = spec.agents[0]
    theta = np.eye(8)[:, [0, 1, 1, 0, 1, 0, 0, 1]].T  # corner s decides xor(s): RR's rule
    witness = (np.column_stack([1.0 - theta[:, 1], theta[:, 1]]), False)
    exact = settle_module.witness_value([Fraction(2)] * 3, [[Fraction(int(x == y))
                                                             for y in (0, 1)]
                                                            for x in (0, 1, 1, 0, 1, 0, 0, 1)],
                                        0, witness[0], False)
    assert exact == Fraction(xor_closed_form(3, 2.0)).limit_denominator(10**6)
    from dpverify.spec.model import Accuracy

    cert = _fake_certificate(monkeypatch, exact - Fraction(1, 10), exact - Fraction(1, 100),
                             "bracket")
    s = _settle(spec, Accuracy.AVERAGE, "floats differ", witness, cert)
    assert s.verdict is Verdict.GAP and s.code is ReasonCode.WITNESS_ABOVE_BOUND
    cert = _fake_certificate(monkeypatch, exact - Fraction(1, 10), exact + Fraction(1, 100),
                             "bracket")
    s = _settle(spec, Accuracy.AVERAGE, "floats differ", witness, cert)
    assert s.verdict is Verdict.ERROR and s.code is ReasonCode.BRACKET_TOO_WIDE
    cert = _fake_certificate(monkeypatch, exact, exact, "proved-optimal")
    s = _settle(spec, Accuracy.AVERAGE, "floats differ", witness, cert)
    assert s.verdict is Verdict.OPTIMAL
    assert agent is spec.agents[0]


def test_a_certificate_that_fails_the_independent_check_is_never_optimal(monkeypatch):
    from dpverify import checker

    monkeypatch.setattr(checker, "check_certificate",
                        lambda spec, c: checker.CheckResult(False, "tampered"))
    spec = loads(XOR3)
    from dpverify.spec.model import Accuracy

    s = _settle(spec, Accuracy.WORST, "floats differ")
    assert s.verdict is Verdict.ERROR and s.code is ReasonCode.CHECK_FAILED
    assert "tampered" in s.reason  # the checker's words, passed on


def test_float_disagreement_is_settled_automatically(monkeypatch):
    """A worse RR rule (simulated) makes the floats disagree: the exact certificate settles
    it without --certify, and says so."""
    from dpverify.verifiers.multiparty import corner_lp as multiparty

    real = multiparty.rr_candidate

    def worse(*args, **kwargs):
        out = real(*args, **kwargs)
        return out if not isinstance(out, tuple) else (out[0] - 1e-3, out[1])

    monkeypatch.setattr(multiparty, "rr_candidate", worse)
    for r in by_lp(loads(XOR3), OPTIONS).results:
        assert r.verdict is Verdict.OPTIMAL and r.method == "proof"
        assert r.code in (ReasonCode.PROVED, ReasonCode.BRACKETED)
        assert r.relaxed_optimum == pytest.approx(xor_closed_form(3, 2.0), rel=1e-12)
