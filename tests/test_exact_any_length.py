"""Exact numbers of any length, with Python's int-string limit in force (issue 17, A4).

Python refuses int <-> decimal string conversions beyond 4300 digits. Certificates of
ordinary problems hold longer numbers (a 230-party majority at epsilon = 0.1: a value of
4573 digits; 8 parties with distinct epsilons: 5353), and `verify` died with "internal
error: ValueError: Exceeds the limit (4300 digits)" where a certificate's rational was read
back from its string. No exact path may depend on that limit, nor lift it: every test here
runs with the default limit, and the limit may not be changed (`default_int_limit`).
"""

from __future__ import annotations

import copy
import json
import sys
from fractions import Fraction

import pytest
from click.testing import CliRunner

from dpverify.checker import check_certificate, read_certificate
from dpverify.checker.fields import show
from dpverify.cli import main
from dpverify.console.numbers import rational, short_rational
from dpverify.runner.certify_files import CertificateRecord
from dpverify.spec import loads
from dpverify.spec.model import Accuracy
from dpverify.spec.numbers import integer_text, parse_integer, parse_rational, rational_text
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.multiparty import settle as settle_module
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import Verdict

DEFAULT_LIMIT = 4300
LONG = 3 ** 20000  # 9543 digits


@pytest.fixture
def default_int_limit(monkeypatch):
    """Python's default int-string limit, which nothing may lift during the test (a lift is
    recorded, not applied, so code that depends on it fails as it would unlifted)."""
    setter, before = sys.set_int_max_str_digits, sys.get_int_max_str_digits()
    setter(DEFAULT_LIMIT)
    lifts: list[int] = []
    monkeypatch.setattr(sys, "set_int_max_str_digits", lifts.append)
    with pytest.raises(ValueError, match="Exceeds the limit"):
        str(LONG)  # the limit is in force
    yield
    setter(before)
    assert not lifts, f"the code changed Python's int-string limit: {lifts}"


def test_numbers_round_trip_at_any_length(default_int_limit):
    for value in (Fraction(LONG, 7), Fraction(-7, LONG), Fraction(-LONG * 5 + 1, LONG + 2),
                  Fraction(LONG), Fraction(0), Fraction(-3, 2)):
        text = rational_text(value)
        assert parse_rational(text) == value
        assert rational(value) == text  # the console writes the same text
    assert integer_text(10 ** 5000 + 7) == "1" + "0" * 4999 + "7"
    assert len(integer_text(LONG)) == 9543
    assert integer_text(-LONG)[0] == "-" and len(integer_text(-LONG)) == 9544
    assert parse_integer("-" + "9" * 5000) == -(10 ** 5000 - 1)


@pytest.mark.parametrize("text", ["", "1/0", "1/-2", "-", "1/", "/2", " 1", "1.5", "+1",
                                  "1/2/3", "\uff11", "1e5", "0x10", "1_000", "9" * 5000 + "/"])
def test_parse_rational_refuses_what_is_not_p_over_q(text):
    with pytest.raises(ValueError):
        parse_rational(text)


def test_console_and_messages_show_long_numbers(default_int_limit):
    value = Fraction(LONG + 1, LONG)
    assert short_rational(value) == "~1"
    assert show(value) == "~1" and show(Fraction(3, 4)) == "3/4"
    assert show(Fraction(-10 ** 5000 * 3, 2)) == "~-1.500000e+5000"  # beyond floats


def test_certify_json_of_a_long_value(default_int_limit):
    record = CertificateRecord(path=None, problem="p", agent="observer", accuracy="worst",
                               status="bracket", value=Fraction(1, LONG),
                               bound=Fraction(2, LONG))
    out = record.to_dict()
    assert parse_rational(out["value"]) == Fraction(1, LONG)
    assert parse_rational(out["bound"]) == Fraction(2, LONG)


BIT1 = """
[problem]
name = "bit1"
parties = 1
lambda = "3"
accuracy = "average"
[observer]
function = "bit:1"
"""

BIT1_CERT = {
    "format": "dpverify-certificate/1", "problem": "bit1", "agent": "observer",
    "accuracy": "average", "outputs": [0, 1], "gain": [["1", "0"], ["0", "1"]],
    "upper": {"lambdas": ["3"], "prior": ["1/2", "1/2"], "mu": ["3/8", "3/8"],
              "bound": "3/4"},
    "lower": {"lambdas": ["3"], "decision": [["1", "0"], ["0", "1"]], "value": "3/4"},
    "status": "proved-optimal",
}


def test_the_checker_reads_long_numbers(default_int_limit):
    """k = 1, lambda = 3 (test_checker.py's hand-written certificate) with 5000-digit
    numerators and denominators: accepted; a long wrong value is refused in one line."""
    spec = loads(BIT1)
    long = copy.deepcopy(BIT1_CERT)
    zeros = "0" * 5000
    long["upper"]["mu"] = [f"3{zeros}/8{zeros}"] * 2
    long["lower"]["value"] = f"3{zeros}/4{zeros}"
    assert check_certificate(spec, long).ok
    wrong = copy.deepcopy(BIT1_CERT)
    wrong["lower"]["value"] = rational_text(Fraction(3, 4) + Fraction(1, LONG))
    wrong["status"] = "bracket"
    result = check_certificate(spec, wrong)
    assert not result.ok and "lower.value = ~0.75 but" in result.message


def test_check_cert_reads_long_json_integers(default_int_limit, tmp_path):
    """A certificate file whose JSON holds a 5000-digit integer (an output): one line, the
    outputs differ, never an internal error; a long but valid certificate is checked."""
    problem = tmp_path / "bit1.toml"
    problem.write_text(BIT1, encoding="utf-8")
    odd = json.dumps(BIT1_CERT).replace('"outputs": [0, 1]', f'"outputs": [0, 1{"0" * 5000}]')
    assert read_certificate(odd)["outputs"][1] == 10 ** 5000
    (tmp_path / "odd.json").write_text(odd, encoding="utf-8")
    long = copy.deepcopy(BIT1_CERT)
    long["upper"]["prior"] = [f"1{'0' * 5000}/2{'0' * 5000}"] * 2
    (tmp_path / "long.json").write_text(json.dumps(long), encoding="utf-8")
    out = CliRunner().invoke(main, ["check-cert", str(problem), str(tmp_path / "odd.json"),
                                    str(tmp_path / "long.json")])
    assert out.exit_code == 1, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith("FAIL ") and "differ from the spec's" in lines[0]
    assert "~1.000000e+5000" in lines[0] and len(lines[0]) < 300
    assert lines[1].startswith("OK ") and lines[1].endswith("proved value 3/4")


MAJORITY = """
[problem]
name = "majority-{k}"
parties = {k}
epsilon = 0.1
accuracy = "average"
[observer]
function = "majority"
"""


def test_orbit_verdicts_at_any_length(default_int_limit):
    """`verify` through the orbit method on 230 parties at epsilon = 0.1, whose certificate
    bound has 4573 digits (was: internal error, 'value has 4573 digits'; ~5 s)."""
    result = verify_spec(loads(MAJORITY.format(k=230)), VerifyOptions())
    (agent,) = result.results
    assert agent.verdict is Verdict.OPTIMAL, agent.reason
    assert agent.method == "orbit"


def _padded(obj, factor: int):
    """Every "p/q" of a certificate's bounds written as "(p factor)/(q factor)": the same
    numbers, in strings longer than Python's limit."""
    if isinstance(obj, dict):
        return {key: _padded(value, factor) for key, value in obj.items()}
    if isinstance(obj, list):
        return [_padded(value, factor) for value in obj]
    value = parse_rational(obj)
    return f"{integer_text(value.numerator * factor)}/{integer_text(value.denominator * factor)}"


XOR3 = '[problem]\nname = "xor3"\nparties = 3\nlambda = "2"\n[observer]\nfunction = "xor"\n'


def test_settle_reads_long_certificates(default_int_limit):
    """verifiers/multiparty/settle.py takes a certificate's value and bound at any length
    (the 8-party internal error of the issue): the certificate of a level written with
    2000 digits has numbers of thousands of digits, and settles as a short one does (the
    typed numbers, never read back from text); its JSON, written with 5000-digit
    numerators and denominators, checks."""
    from dpverify.verifiers import certifiers as certify
    from dpverify.verifiers.multiparty.planner import hints_for
    from dpverify.verifiers.multiparty.reductions import AgentProblem

    spec = loads(XOR3)
    cert = certify.certify_agent(spec, spec.agents[0], "worst")
    long = dict(cert, upper=_padded(cert["upper"], 10 ** 5000),
                lower=_padded(cert["lower"], 10 ** 5000))
    assert len(long["lower"]["value"]) > 10000 and check_certificate(spec, long).ok
    lam = f"1{'0' * 1999}1/1{'0' * 2000}"  # 1 + 10^-2000
    spec = loads(XOR3.replace('lambda = "2"', f'lambda = "{lam}"'))
    problem = AgentProblem(spec, spec.agents[0], Accuracy.AVERAGE, VerifyOptions())
    settled = settle_module.settle(problem, hints_for(problem), "floats differ")
    assert settled.verdict is Verdict.OPTIMAL, settled.reason
    exact = certify.certificate(spec, spec.agents[0], Accuracy.AVERAGE)
    assert exact.bound.denominator.bit_length() > 4300 * 3.3  # beyond the int-string limit
    assert settled.relaxed == float(exact.bound) and settled.rr == float(exact.value)


# ------------------------------------------------------------------ the problems


def _party_sum_problem(seed: int) -> str:
    import random

    rng = random.Random(seed)
    table = [rng.randrange(3) for _ in range(256)]
    return f"""
[problem]
name = "eight-{seed}"
parties = 8
epsilon = [1.07, 1.25, 1.87, 1.09, 1.16, 1.3, 0.61, 1.17]
[observer]
function = {{ table = {table} }}
[[party]]
index = 1
function = "sum"
gain = "-abs"
"""


@pytest.mark.slow
def test_eight_parties_with_distinct_epsilons(default_int_limit):
    """The issue's 8-party problem (a random 3-valued observer table; party 1 computes sum
    under -abs): every verdict decided, none an internal error (~15 s)."""
    result = verify_spec(loads(_party_sum_problem(0)), VerifyOptions())
    assert all(r.verdict is Verdict.OPTIMAL for r in result.results), \
        [(r.agent, r.accuracy, r.reason) for r in result.results]


@pytest.mark.slow
def test_three_hundred_parties_majority_average(default_int_limit):
    """The issue's plainest large problem (~10 s)."""
    result = verify_spec(loads(MAJORITY.format(k=300)), VerifyOptions())
    assert [r.verdict for r in result.results] == [Verdict.OPTIMAL]
