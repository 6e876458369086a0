"""`audit` of protocols that claim (epsilon, delta) (verifiers/audit/delta.py): achieved
deltas exactly ("p/q" in JSON), `not-private` exactly when a party overspends (exit 1),
brackets that straddle a claim undecided, the accuracy against the four-ray bound and
RR(epsilon, delta) (optimal, interaction-helps, suboptimal, open; the verdict `verify`
gives a witness), float kernels within --tol, and delta = 0 protocols unchanged."""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.spec import loads
from dpverify.spec.model import Accuracy
from dpverify.status import ExitStatus
from dpverify.theory.approx.hockey import DeltaBracket
from dpverify.theory.exact import lambda_brackets
from dpverify.theory.units import units_of
from dpverify.verifiers.audit.delta import DeltaBounds, DeltaPrivacy, decide_delta
from dpverify.verifiers.protocol_value import ProtocolValue
from dpverify.verifiers.result import Verdict
from tests.protocol_files import protocol_file as protocol_text_of

ROOT = Path(__file__).resolve().parents[1]
D = F(1, 10)
XOR = '[problem]\nname = "x"\nparties = 2\nlambda = "3"\n[observer]\nfunction = "xor"\n'


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def kernels(say_delta: F = F(0)) -> list[np.ndarray]:
    """Issue 20's XOR protocol at lambda = 3: party 1 runs RR(3, 1/10), party 2 reveals
    after a reveal and runs RR(3, say_delta) after a said bit."""
    rr = [[D, F(27, 40), F(9, 40), F(0)], [F(0), F(9, 40), F(27, 40), D]]
    reveal = [[F(1), F(0), F(0), F(0)], [F(0), F(0), F(0), F(1)]]
    k = 1 - say_delta
    said = [[say_delta, k * F(3, 4), k * F(1, 4), F(0)],
            [F(0), k * F(1, 4), k * F(3, 4), say_delta]]
    return [np.array([rr], dtype=object), np.array([reveal, said, said, reveal], dtype=object)]


def protocol_file(write_toml, ks, claimed=(D, D), level: str = 'lambda = "3"',
                  name: str = "proto", accuracy: Accuracy = Accuracy.AVERAGE) -> Path:
    spec = loads(XOR.replace('lambda = "3"', level), source="<x>")
    text = protocol_text_of(spec, spec.agents[0], accuracy, list(claimed), [1, 2], ks,
                        name=name, note="a test protocol")
    return write_toml(text, name)


def audit_json(path: Path) -> tuple[int, dict]:
    got = run("audit", str(path), "--json")
    return got.exit_code, json.loads(got.output)[0]


def test_the_issues_protocol_is_private_optimal_and_beats_rr(write_toml):
    """Issue 20's protocol reaches the bound 53/80 > RR(3, 1/10)'s 521/800: interaction
    helps (exit 1, the verdict `verify` gives the problem), and nothing does better."""
    path = protocol_file(write_toml, kernels())
    code, data = audit_json(path)
    assert code == ExitStatus.FAILED
    assert data["achieved_deltas"] == ["1/10", "1/10"]  # exact: lambda and kernels rational
    assert data["claimed_deltas"] == ["1/10", "1/10"] and data["private"] is True
    (r,) = data["results"]
    assert r["verdict"] == "interaction-helps" and r["protocol_value_exact"] == "53/80"
    assert "reaches the bound" in r["reason"]
    assert r["relaxed_optimum"] == pytest.approx(53 / 80, abs=1e-15)  # proved at 53/80
    assert r["rr_value"] == pytest.approx(521 / 800, abs=1e-15)  # RR(3, 1/10) x 2
    assert r["advantage"] == pytest.approx(53 / 80 - 521 / 800, abs=1e-15)
    # the table: the achieved deltas, RR(epsilon, delta) and the advantage; not the pure
    # level achieved (infinite here, beside `private: yes`)
    shown = run("audit", str(path)).output
    for text in ("achieved delta", "RR(epsilon, delta)", "advantage", "1.12e-02",
                 "interaction-helps", "1 interaction-helps"):
        assert text in shown, text
    assert "achieved lambda" not in shown and "inf" not in shown


def test_a_protocol_whose_delta_exceeds_its_claim_is_not_private(write_toml):
    """Party 2 also spends 1/20 after a said bit: 1/10 + (9/10)(1/20) = 29/200 > 1/10."""
    path = protocol_file(write_toml, kernels(F(1, 20)))
    code, data = audit_json(path)
    assert code == ExitStatus.FAILED
    assert data["achieved_deltas"] == ["1/10", "29/200"]
    assert data["private_by_party"] == [True, False]
    (r,) = data["results"]
    assert r["verdict"] == "not-private" and "party 2" in r["reason"]
    # the bound at the achieved levels holds the protocol (no contradiction)
    assert r["relaxed_optimum_achieved"] >= r["protocol_value"]
    shown = run("audit", str(path)).output
    assert "claimed delta" in shown and "29/200" in shown and "NO" in shown
    # the control: claiming what it spends, it is private
    code, data = audit_json(protocol_file(write_toml, kernels(F(1, 20)), (D, F(29, 200)),
                                          name="honest"))
    assert data["private"] is True and data["results"][0]["verdict"] != "not-private"


def test_a_pure_claim_beside_a_delta_one_needs_no_spend(write_toml):
    """Party 2 claims delta = 0 while revealing: its achieved delta is its reveal mass."""
    code, data = audit_json(protocol_file(write_toml, kernels(), (D, F(0))))
    assert code == ExitStatus.FAILED and data["private_by_party"] == [True, False]
    assert data["achieved_deltas"] == ["1/10", "1/10"]


def test_a_bracket_that_straddles_the_claim_is_undecided(write_toml):
    """An epsilon claim: the achieved delta is an exact bracket [HS(hi), HS(lo)]; a claim
    strictly inside it is neither met nor missed (error, exit 3)."""
    lo, hi = (v[0] for v in lambda_brackets(None, (F(1),)))
    one = [[F(3, 4), F(1, 4)], [F(1, 4), F(3, 4)]]  # HS = 3/4 - lambda/4 at e^1: 0.0704...
    claim = F(3, 4) - (lo + hi) / 8
    assert F(3, 4) - hi / 4 < claim < F(3, 4) - lo / 4
    pure = [[F(1, 2), F(1, 2)], [F(1, 2), F(1, 2)]]
    ks = [np.array([one], dtype=object), np.array([pure, pure], dtype=object)]
    path = protocol_file(write_toml, ks, (claim, D), level="epsilon = 1", name="straddle")
    code, data = audit_json(path)
    assert code == ExitStatus.UNDECIDED
    assert data["private_by_party"] == [None, True]
    assert isinstance(data["achieved_deltas"][0], list)  # a bracket
    assert data["results"][0]["verdict"] == "error"
    assert "straddles" in data["results"][0]["reason"]
    # the controls: a claim just above the bracket is met, just below it is missed
    met = protocol_file(write_toml, ks, (F(3, 4) - lo / 4, D), level="epsilon = 1",
                        name="met")
    assert audit_json(met)[1]["private_by_party"] == [True, True]
    missed = protocol_file(write_toml, ks, (F(3, 4) - hi / 4 - F(1, 10**30), D),
                           level="epsilon = 1", name="missed")
    assert audit_json(missed)[1]["private_by_party"] == [False, True]


def test_the_product_of_rr_delta_is_open_and_a_silent_protocol_suboptimal(write_toml):
    """Non-interactive RR(3, 1/10) for XOR reaches 521/800 < the bound 53/80: no better
    protocol is named by the audit (open, exit 3); a protocol that says nothing reaches
    1/2 < RR(epsilon, delta): suboptimal (exit 1)."""
    rr = [[D, F(27, 40), F(9, 40), F(0)], [F(0), F(9, 40), F(27, 40), D]]
    ks = [np.array([rr], dtype=object), np.array([rr] * 4, dtype=object)]
    code, data = audit_json(protocol_file(write_toml, ks, name="rr"))
    assert code == ExitStatus.UNDECIDED
    r = data["results"][0]
    assert r["verdict"] == "open" and r["protocol_value_exact"] == "521/800"
    silent = [[F(1, 2)] * 2, [F(1, 2)] * 2]
    ks = [np.array([silent], dtype=object), np.array([silent] * 2, dtype=object)]
    spec = loads(XOR, source="<x>")
    text = protocol_text_of(spec, spec.agents[0], Accuracy.AVERAGE, [D, D], [1, 2], ks,
                        name="silent", note="says nothing")
    code, data = audit_json(write_toml(text, "silent"))
    assert code == ExitStatus.FAILED and data["results"][0]["verdict"] == "suboptimal"


def test_float_kernels_may_exceed_the_claim_by_tol(write_toml):
    """RR(3, 0.1) written with TOML floats: 0.1 is not 1/10, so the achieved delta exceeds
    the claim by about 1e-17, which --tol allows (with a note); --tol 0 refuses it."""
    text = (XOR.replace("[problem]\n", '[problem]\nkind = "protocol"\n')
            .replace('lambda = "3"', 'lambda = "3"\ndelta = "1/10"')
            + "[[round]]\nparty = 1\nmessages = 4\n"
            "kernel = [[0.1, 0.675, 0.225, 0.0], [0.0, 0.225, 0.675, 0.1]]\n"
            "[[round]]\nparty = 2\nmessages = 4\n"
            "kernel = [[0.1, 0.675, 0.225, 0.0], [0.0, 0.225, 0.675, 0.1]]\n")
    path = write_toml(text, "floats")
    data = json.loads(run("audit", str(path), "--json").output)[0]
    achieved = [F(v) for v in data["achieved_deltas"]]
    assert all(D < v <= D + F(1, 10**16) for v in achieved)  # the binary 0.1, normalised
    assert data["private"] is True
    assert sum("within --tol" in n for n in data["privacy_notes"]) == 2
    strict = json.loads(run("audit", str(path), "--json", "--tol", "0").output)[0]
    assert strict["private_by_party"] == [False, False]


def test_a_pure_protocol_audit_is_unchanged(write_toml):
    """delta = 0 (no key): no delta fields, the pure levels decide as before."""
    code, data = audit_json(ROOT / "problems" / "protocols" / "adaptive-xor-2.toml")
    assert "claimed_deltas" not in data and "achieved_deltas" not in data


def test_the_verdicts_from_numbers():
    units = units_of([[F(0), F(1)], [F(1), F(0)]])
    private = DeltaPrivacy((D,), (DeltaBracket(D, D),), (True,), (), (), ())
    missed = DeltaPrivacy((D,), (DeltaBracket(F(1, 5), F(1, 5)),), (False,),
                          ("party 1: too much",), (), ())

    def value(v: F) -> ProtocolValue:
        return ProtocolValue(float(v), float(v), np.zeros((1, 1, 1)), "exact", exact=v,
                             lower_exact=v, upper_exact=v)

    def verdict(v: F, bound: F, achieved: F, rr: F, priv=private) -> Verdict:
        return decide_delta(value(v), DeltaBounds(bound, achieved, rr), priv, 1e-9, units)[0]

    assert verdict(F(3, 4), F(3, 4), F(3, 4), F(3, 4)) is Verdict.OPTIMAL
    assert verdict(F(3, 4), F(3, 4), F(3, 4), F(1, 2)) is Verdict.INTERACTION_HELPS
    assert verdict(F(3, 5), F(3, 4), F(3, 4), F(1, 2)) is Verdict.INTERACTION_HELPS
    assert verdict(F(2, 5), F(3, 4), F(3, 4), F(1, 2)) is Verdict.SUBOPTIMAL
    assert verdict(F(1, 2), F(3, 4), F(3, 4), F(1, 2)) is Verdict.OPEN  # RR's value
    # an irrational level: the protocol must beat RR's value at the upper bracket too
    bracketed = DeltaBounds(F(3, 4), F(3, 4), F(1, 2), rr_high=F(7, 10))
    assert decide_delta(value(F(3, 5)), bracketed, private, 1e-9, units)[0] is Verdict.OPEN
    assert decide_delta(value(F(3, 4)), bracketed, private, 1e-9,
                        units)[0] is Verdict.INTERACTION_HELPS
    assert verdict(F(4, 5), F(3, 4), F(3, 4), F(1, 2)) is Verdict.CONTRADICTION
    assert verdict(F(3, 4), F(3, 4), F(4, 5), F(1, 2), missed) is Verdict.NOT_PRIVATE
    assert verdict(F(9, 10), F(3, 4), F(4, 5), F(1, 2), missed) is Verdict.CONTRADICTION
    assert decide_delta(value(F(3, 4)), DeltaBounds(None, None, F(1, 2), "no bound"),
                        private, 1e-9, units)[0] is Verdict.ERROR
