"""Protocol audits (`dpverify audit`, kind = "protocol"): achieved levels against hand
computations, RR as a protocol against `verify`, the privacy negative controls, a tampered
bound that must be reported as a contradiction, and the shipped protocols."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from lp_method import by_lp

from dpverify.cli import main
from dpverify.reasons import ReasonCode
from dpverify.spec import load
from dpverify.spec.model import Accuracy
from dpverify.spec.protocol_model import ProtocolSpec, RoundSpec
from dpverify.theory.protocols.transcripts import achieved_lambda, achieved_lambdas, transcripts
from dpverify.verifiers.audit.protocol import audit_protocol
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import Verdict

ROOT = Path(__file__).resolve().parents[1]
PROTOCOLS = ROOT / "problems" / "protocols"
OPTIONS = VerifyOptions()


def protocol(rounds: str, *, levels: str = 'lambda = "3"', parties: int = 2,
             agents: str = '[observer]\nfunction = "xor"\n') -> str:
    return (f'[problem]\nkind = "protocol"\nparties = {parties}\n{levels}\n\n{rounds}\n'
            f"{agents}")


def rr_round(party: int, p: str, q: str) -> str:
    return (f'[[round]]\nparty = {party}\nmessages = 2\n'
            f'kernel = [["{p}", "{q}"], ["{q}", "{p}"]]\n')


def by_key(result):
    return {(r.agent, r.accuracy): r for r in result.results}


# -- achieved levels, by hand -----------------------------------------------------------
def test_levels_compose_over_two_rounds(load_toml):
    """Party 1 speaks twice at ratio 2 (kernel 2/3, 1/3): 2 x 2 = 4. Party 2 once at 3."""
    spec = load_toml(protocol(rr_round(1, "2/3", "1/3") + rr_round(2, "3/4", "1/4")
                              + rr_round(1, "2/3", "1/3"), levels='lambda = ["4", "3"]'))
    assert achieved_lambdas(transcripts(spec)) == (Fraction(4), Fraction(3))


def test_adaptive_levels_take_the_worst_transcript(load_toml):
    """After message 0 party 2 speaks at ratio 3, after 1 at ratio 3/2 and then speaks
    again after (1, 1) at ratio 5/3 (composition along that transcript only: 3/2 * 5/3 =
    5/2 < 3). Party 1: ratio 4 (4/5, 1/5)."""
    rounds = (rr_round(1, "4/5", "1/5")
              + '[[round]]\nparty = 2\nmessages = 2\n[round.kernel]\n'
                '"0" = [["3/4", "1/4"], ["1/4", "3/4"]]\n"1" = [["3/5", "2/5"], ["2/5", "3/5"]]\n'
              + '[[round]]\nparty = 2\nmessages = 2\n[round.kernel]\n'
                '"1,1" = [["5/8", "3/8"], ["3/8", "5/8"]]\n"*" = [["1", "0"], ["1", "0"]]\n')
    spec = load_toml(protocol(rounds, levels='lambda = "4"'))
    assert achieved_lambdas(transcripts(spec)) == (Fraction(4), Fraction(3))
    # and in floats, the same levels
    floats = achieved_lambdas(transcripts(spec, exact=False))
    assert floats == pytest.approx((4.0, 3.0), rel=1e-15)


def test_a_zero_against_a_positive_entry_is_unbounded(load_toml, tmp_path):
    spec = load_toml(protocol(rr_round(1, "1", "0") + rr_round(2, "3/4", "1/4")))
    assert achieved_lambdas(transcripts(spec)) == (math.inf, Fraction(3))
    path = tmp_path / "problem.toml"
    out = CliRunner().invoke(main, ["audit", str(path), "--json"])
    assert out.exit_code == 1, out.output
    obj = json.loads(out.stdout)[0]
    assert obj["achieved_lambdas"] == ["inf", "3"] and obj["achieved_epsilons"][0] == "inf"
    assert obj["private"] is False and obj["verdict"] == "not-private"
    # the bound at the achieved levels treats party 1 as unconstrained (the identity):
    # the XOR is then known as well as party 2's bit, 3/4
    assert all(r["relaxed_optimum_achieved"] == pytest.approx(0.75, abs=1e-9)
               for r in obj["results"])


def test_a_silent_party_achieves_lambda_one(load_toml):
    spec = load_toml(protocol(rr_round(1, "3/4", "1/4"), parties=2))
    assert achieved_lambdas(transcripts(spec)) == (Fraction(3), Fraction(1))


def test_levels_of_a_party_with_three_input_symbols():
    """Kernel rows per input symbol (m-ary inputs, not yet in files): the level is the
    largest ratio over every pair of symbols: here (1/2) / (1/8) = 4."""
    from dpverify.spec.model import AgentSpec, FunctionDef, GainDef

    kernel = ((Fraction(1, 2), Fraction(1, 2)), (Fraction(1, 4), Fraction(3, 4)),
              (Fraction(1, 8), Fraction(7, 8)))
    agent = AgentSpec(0, FunctionDef("named", "xor"), GainDef("named", "indicator"), None,
                      "observer")
    spec = ProtocolSpec(name="m", description="", source="<m>", parties=2,
                        lambdas=(4.0, 4.0), lambdas_exact=(Fraction(4), Fraction(4)),
                        epsilons_exact=None, accuracies=(Accuracy.AVERAGE,),
                        agents=(agent,), rounds=(RoundSpec(1, 2, (("*", kernel),)),),
                        alphabets=(3, 2))
    tr = transcripts(spec)
    assert tr.num.shape == (6, 2)
    assert achieved_lambda(tr, 1) == Fraction(4)  # 1/2 over 1/8; 7/8 over 1/2 is 7/4
    assert achieved_lambda(tr, 2) == Fraction(1)


# -- accuracy, by hand --------------------------------------------------------------------
def test_adaptive_accuracy_by_hand():
    """adaptive-xor-2: party 1 is right w.p. 3/4; party 2 w.p. 3/4 after message 0 and 3/5
    after message 1 (each half the time on average). XOR of two noisy bits is right w.p.
    1/2 + 2 (a - 1/2)(b - 1/2): average 1/2 (5/8) + 1/2 (11/20) = 47/80."""
    result = audit_protocol(load(PROTOCOLS / "adaptive-xor-2.toml"), OPTIONS)
    avg = by_key(result)[("observer", "average")]
    assert avg.protocol_value_exact == Fraction(47, 80)
    assert avg.verdict is Verdict.SUBOPTIMAL
    assert avg.relaxed_optimum == pytest.approx(5 / 8, abs=1e-12)
    assert avg.efficiency == pytest.approx(47 / 80 / (5 / 8), abs=1e-12)


def test_repeated_releases_by_hand():
    """Two RR releases at lambda 2 tell x1 with probability 2/3 (ties are coin flips), as
    one does: XOR accuracy 1/2 + 2 (1/6)(1/4) = 7/12, against 13/20 at lambda (4, 3)."""
    result = audit_protocol(load(PROTOCOLS / "repeated-xor-2.toml"), OPTIONS)
    for accuracy in ("average", "worst"):
        r = by_key(result)[("observer", accuracy)]
        assert r.protocol_value_exact == Fraction(7, 12)
        assert r.relaxed_optimum == pytest.approx(13 / 20, abs=1e-12)
        assert r.verdict is Verdict.SUBOPTIMAL
    assert result.header["achieved_lambdas"] == ["4", "3"]


# -- RR as a protocol reproduces verify ---------------------------------------------------
def test_rr_as_a_protocol_reproduces_verify():
    audited = audit_protocol(load(PROTOCOLS / "rr-and-3.toml"), OPTIONS)
    verified = by_lp(load(ROOT / "problems" / "and-3.toml"), OPTIONS)
    assert audited.verdict is Verdict.OPTIMAL
    exact = {("observer", "average"): Fraction(7, 8), ("observer", "worst"): Fraction(138, 245),
             ("party:1", "average"): Fraction(7, 8), ("party:1", "worst"): Fraction(17, 28)}
    for r in verified.results:
        a = by_key(audited)[(r.agent, r.accuracy)]
        # the exact values the certificates prove (README, `dpverify certify`)
        assert a.protocol_value_exact == exact[(r.agent, r.accuracy)]
        assert a.relaxed_optimum == r.relaxed_optimum and a.rr_value == r.rr_value
        assert a.protocol_value == pytest.approx(r.rr_value, abs=1e-12)
        assert a.efficiency == pytest.approx(1.0, abs=1e-12)
        assert a.verdict is Verdict.OPTIMAL and a.method == "exact"


# -- privacy: negative controls ---------------------------------------------------------
@pytest.mark.parametrize("levels, verdicts", [
    ('lambda = "3"', {"optimal"}),  # exactly the level it has
    ('lambda = "4"', {"suboptimal"}),  # claims less privacy than it has
    ('epsilon = 1.0986122886681098', {"optimal"}),  # ln 3 as a float: within --tol
    ('lambda = "29/10"', {"not-private"}),  # claims more privacy than it has
    ('epsilon = 1.0', {"not-private"}),
])
def test_claims_against_the_level_it_has(load_toml, levels, verdicts):
    spec = load_toml(protocol(rr_round(1, "3/4", "1/4") + rr_round(2, "3/4", "1/4"),
                              levels=levels))
    result = audit_protocol(spec, OPTIONS)
    assert {r.verdict.value for r in result.results} == verdicts
    assert result.header["private"] is ("not-private" not in verdicts)


def test_not_private_and_suboptimal_exit_1(tmp_path):
    runner = CliRunner()
    assert runner.invoke(main, ["audit", str(PROTOCOLS / "claims-too-much.toml")]).exit_code == 1
    sub = runner.invoke(main, ["audit", str(PROTOCOLS / "repeated-xor-2.toml"), "--quiet"])
    assert sub.exit_code == 1, sub.output  # suboptimal is a finding (spec.md)
    strict = runner.invoke(main, ["audit", str(PROTOCOLS / "repeated-xor-2.toml"),
                                  "--quiet", "--require-optimal"])  # deprecated, no effect
    assert strict.exit_code == 1 and "deprecated" in strict.stderr
    rr = runner.invoke(main, ["audit", str(PROTOCOLS / "rr-and-3.toml"), "--quiet",
                              "--require-optimal"])
    assert rr.exit_code == 0


# -- a tampered bound is a contradiction --------------------------------------------------
def test_a_protocol_above_a_tampered_bound_is_a_contradiction(monkeypatch):
    """Lower the relaxed bound by 0.01 (as a bug would): RR, which attains the true bound,
    now exceeds the bound at its own achieved levels. That must be reported loudly, as
    `contradiction`, with exit status 1."""
    import dataclasses

    import dpverify.verifiers.audit.bounds as audit
    from dpverify.spec.setting import Setting

    bits = audit.BOUNDS[Setting.BITS]

    def tampered(*args, **kwargs):
        bound, rr, why, proof = bits.relaxed(*args, **kwargs)
        return bound - 0.01, rr, why, proof

    # the audit's table of bounds, with a tampered entry for bits
    monkeypatch.setitem(audit.BOUNDS, Setting.BITS, dataclasses.replace(bits, relaxed=tampered))
    result = audit_protocol(load(PROTOCOLS / "rr-and-3.toml"), OPTIONS)
    assert {r.verdict for r in result.results} == {Verdict.CONTRADICTION}
    assert all(r.code is ReasonCode.CONTRADICTION and r.reason.startswith("CONTRADICTION")
               and "bug" in r.reason for r in result.results)
    out = CliRunner().invoke(main, ["audit", str(PROTOCOLS / "rr-and-3.toml")])
    assert out.exit_code == 1 and "contradiction" in out.output


def test_untampered_rr_is_no_contradiction():
    """The control of the test above: the same protocol and bound, untouched."""
    result = audit_protocol(load(PROTOCOLS / "rr-and-3.toml"), OPTIONS)
    assert Verdict.CONTRADICTION not in {r.verdict for r in result.results}


# -- worst case: the exact simplex and the float LP agree ---------------------------------
def test_exact_and_float_worst_cases_agree():
    from dpverify.spec.tables import tabulate
    from dpverify.verifiers.protocol_value import protocol_value

    spec = load(PROTOCOLS / "erasure-majority-3.toml")
    exact, floats = transcripts(spec), transcripts(spec, exact=False)
    for agent in spec.agents:
        table = tabulate(spec.claimed(), agent)
        gain = [[Fraction(v) for v in row] for row in table.gain_exact]
        a = protocol_value(exact, table.gain, gain, agent.party, True, OPTIONS)
        b = protocol_value(floats, table.gain, None, agent.party, True, OPTIONS)
        assert a.method == "exact" and b.method == "float"
        assert b.lower <= float(a.exact) + 1e-12 and float(a.exact) <= b.upper + 1e-12
        assert b.value == pytest.approx(float(a.exact), abs=1e-9)


# -- the shipped protocols ------------------------------------------------------------------
def test_the_shipped_protocols_meet_their_expectations():
    files = sorted(PROTOCOLS.glob("*.toml"))
    assert len(files) >= 5
    for path in files:
        spec = load(path)
        result = audit_protocol(spec, OPTIONS)
        got = by_key(result)
        assert spec.expect, path
        for e in spec.expect:
            r = got[(e.agent, e.accuracy)]
            assert r.verdict.value == e.verdict, (path, e)
            assert r.protocol_value == pytest.approx(e.value, abs=1e-12), (path, e)


def test_json_fields():
    out = CliRunner().invoke(main, ["audit", str(PROTOCOLS / "adaptive-xor-2.toml"), "--json",
                                    "--show-rules"])
    assert out.exit_code == 1, out.output  # suboptimal
    (obj,) = json.loads(out.stdout)
    for key in ("problem", "source", "kind", "parties", "claimed_lambdas", "achieved_lambdas",
                "achieved_epsilons", "private", "verdict", "results"):
        assert key in obj
    assert obj["kind"] == "protocol" and obj["claimed_lambdas"] == ["3", "3"]
    for r in obj["results"]:
        for key in ("agent", "accuracy", "protocol_value", "relaxed_optimum",
                    "relaxed_optimum_achieved", "rr_value", "efficiency", "verdict"):
            assert key in r
        assert np.asarray(r["rule"]["decision"]).shape[-2:] == (4, 2)
        assert r["rule"]["transcripts"] == ["0,0", "0,1", "1,0", "1,1"]
