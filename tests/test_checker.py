"""The independent certificate checker (dpverify/checker/, all-input certificates: bits.py).

Mutated certificates must each be rejected with the reason; hand-written certificates
(built without the construction code) are accepted or rejected as the maths says; and the
checker must not import the solver or construction code.
"""

from __future__ import annotations

import ast
import copy
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from dpverify.checker import CertificateFormatError, check_certificate
from dpverify.checker.factors import ClassOrbits, transform
from dpverify.verifiers.certifiers import certify_agent

CHECKER = Path(__file__).resolve().parents[1] / "dpverify" / "checker"

AND3 = """
[problem]
name = "and3"
parties = 3
lambda = ["3/2", "2", "5/2"]
[observer]
function = "and"
[[party]]
index = 2
function = "majority"
"""

MAJ3_EPS = """
[problem]
name = "maj3"
parties = 3
epsilon = [0.5, 1, "3/2"]
[observer]
function = "majority"
"""

BIT1 = """
[problem]
name = "bit1"
parties = 1
lambda = "3"
accuracy = "average"
[observer]
function = "bit:1"
"""


def _cert(spec, agent_index: int, accuracy: str) -> dict:
    return json.loads(json.dumps(certify_agent(spec, spec.agents[agent_index], accuracy)))


@pytest.fixture
def and3(load_toml):
    return load_toml(AND3, "and3")


@pytest.fixture
def maj3(load_toml):
    return load_toml(MAJ3_EPS, "maj3")


def _rejects(spec, cert, *fragments: str) -> str:
    result = check_certificate(spec, cert)
    assert not result.ok, "the mutated certificate was accepted"
    for fragment in fragments:
        assert fragment in result.message, result.message
    return result.message


# ------------------------------------------------------------------ valid certificates


@pytest.mark.parametrize("agent", [0, 1])
@pytest.mark.parametrize("accuracy", ["average", "worst"])
def test_valid_certificates_pass(and3, agent, accuracy):
    result = check_certificate(and3, _cert(and3, agent, accuracy))
    assert result.ok, result.message
    assert result.message.startswith("proved value ")
    assert result.value is not None and result.bracket == (result.value, result.value)


@pytest.mark.parametrize("accuracy", ["average", "worst"])
def test_epsilon_certificates_are_brackets(maj3, accuracy):
    result = check_certificate(maj3, _cert(maj3, 0, accuracy))
    assert result.ok, result.message
    assert result.message.startswith("bracket [")
    lo, hi = result.bracket
    assert 0 <= hi - lo < Fraction(1, 10**15)
    assert result.value is None


def test_hand_written_certificate(load_toml):
    """k = 1, lambda = 3, observer wants x1 (theory.md: lambda / (1 + lambda) = 3/4).

    v[s] = max_y sum_x T_s[x] (1/2) [x == y] = 3/8 for both corners; mu = S^-1 v = (3/8, 3/8)
    since S's rows sum to 1; the identity rule gives accuracy 3/4 at both inputs.
    """
    spec = load_toml(BIT1, "bit1")
    cert = {
        "format": "dpverify-certificate/1", "problem": "bit1", "agent": "observer",
        "accuracy": "average", "outputs": [0, 1], "gain": [["1", "0"], ["0", "1"]],
        "upper": {"lambdas": ["3"], "prior": ["1/2", "1/2"], "mu": ["3/8", "3/8"],
                  "bound": "3/4"},
        "lower": {"lambdas": ["3"], "decision": [["1", "0"], ["0", "1"]], "value": "3/4"},
        "status": "proved-optimal",
    }
    result = check_certificate(spec, cert)
    assert result.ok, result.message
    assert result.value == Fraction(3, 4)
    # the same numbers written with 5000-digit numerators (above Python's default limit)
    long = copy.deepcopy(cert)
    zeros = "0" * 5000
    long["upper"]["mu"] = [f"3{zeros}/8{zeros}"] * 2
    before = sys.get_int_max_str_digits()
    assert check_certificate(spec, long).ok
    assert sys.get_int_max_str_digits() == before  # restored
    # a bound below the optimum cannot be certified: mu = (0.35, 0.35) breaks (C)
    weak = copy.deepcopy(cert)
    weak["upper"].update(mu=["7/20", "7/20"], bound="7/10")
    weak["status"] = "bracket"
    _rejects(spec, weak, "corner inequality fails at corner s = 0")
    # the constant rule is a valid lower bound 1/2 < 3/4 = bound: a bracket, not a proof
    loose = copy.deepcopy(cert)
    loose["lower"].update(decision=[["1", "0"], ["1", "0"]], value="1/2")
    _rejects(spec, loose, "status proved-optimal but value 1/2 != bound 3/4")
    loose["status"] = "bracket"
    assert check_certificate(spec, loose).ok


# ------------------------------------------------------------------ mutations


def test_mu_entry_lowered(and3):
    cert = _cert(and3, 0, "worst")
    mu = cert["upper"]["mu"]
    mu[5] = str(Fraction(mu[5]) - Fraction(1, 1000))
    _rejects(and3, cert, "upper.bound", "sum(mu)")
    # with the bound lowered too, the sum matches and a corner inequality fails
    cert["upper"]["bound"] = str(Fraction(cert["upper"]["bound"]) - Fraction(1, 1000))
    _rejects(and3, cert, "corner inequality fails at corner s = 000", "sum_x T_s mu")


def test_mu_entry_lowered_party(and3):
    cert = _cert(and3, 1, "average")
    cert["upper"]["mu"][0] = str(Fraction(cert["upper"]["mu"][0]) - Fraction(1, 10**9))
    cert["upper"]["bound"] = str(Fraction(cert["upper"]["bound"]) - Fraction(1, 10**9))
    _rejects(and3, cert, "corner inequality fails", "label (")


def test_decision_row_not_summing_to_one(and3):
    cert = _cert(and3, 0, "average")
    cert["lower"]["decision"][3] = ["1", "1/2"]
    _rejects(and3, cert, "decision row[3] is not a distribution", "sums to 3/2")
    party = _cert(and3, 1, "worst")
    party["lower"]["decision"][1][6] = ["1/3", "1/3"]
    _rejects(and3, party, "decision row[1][6] is not a distribution")
    negative = _cert(and3, 0, "average")
    negative["lower"]["decision"][0] = ["2", "-1"]
    _rejects(and3, negative, "decision row[0] is not a distribution")


def test_repeated_decision_rows_are_checked_once_and_a_new_row_still_is(and3):
    """claim.read_rules checks a row of the same entries as one before it once (the
    zero-information game's rule repeats one row on every orbit): a certificate whose
    rows all repeat one distribution passes; a row that differs from them by one entry,
    even the last, is still checked and caught, as is a bad row repeated."""
    from dpverify.checker.claim import CheckFailed, read_rules

    rows = [["1/3", "2/3"] for _ in range(8)]
    assert read_rules({"decision": rows}, 1, 8, 2)[0] == [[Fraction(1, 3), Fraction(2, 3)]] * 8
    with pytest.raises(CheckFailed, match=r"decision row\[7\] is not a distribution"):
        read_rules({"decision": [*rows[:7], ["1/3", "1/3"]]}, 1, 8, 2)
    with pytest.raises(CheckFailed, match=r"decision row\[0\] is not a distribution"):
        read_rules({"decision": [["1/3", "1/3"]] * 8}, 1, 8, 2)
    # the same entries in another order are another row
    with pytest.raises(CheckFailed, match=r"decision row\[1\] is not a distribution"):
        read_rules({"decision": [["0", "1"], ["1", "1"], *rows[:6]]}, 1, 8, 2)


def test_lambda_outside_its_bracket(maj3):
    cert = _cert(maj3, 0, "worst")
    low = cert["lower"]["lambdas"][1]
    high = cert["upper"]["lambdas"][1]
    assert Fraction(low) < Fraction(high)
    below = copy.deepcopy(cert)
    below["upper"]["lambdas"][1] = low  # below e^1
    _rejects(maj3, below, "upper.lambdas[1]", "is not >= e^1", "outside the bracket")
    above = copy.deepcopy(cert)
    above["lower"]["lambdas"][1] = high  # above e^1
    _rejects(maj3, above, "lower.lambdas[1]", "is not <= e^1", "outside the bracket")
    under_one = copy.deepcopy(cert)
    under_one["lower"]["lambdas"][0] = "1/2"
    _rejects(maj3, under_one, "lower.lambdas[0] = 1/2 is below 1")


def test_rational_lambda_must_match(and3):
    cert = _cert(and3, 0, "average")
    cert["upper"]["lambdas"][2] = "3"
    _rejects(and3, cert, "lambdas[2]", "the spec's lambda is 5/2")


def test_gain_entry_changed(and3):
    cert = _cert(and3, 0, "worst")
    cert["gain"][7] = ["1", "1"]
    _rejects(and3, cert, "gain[7][0] = 1 but the spec gives 0", "input 111")


def test_outputs_changed(and3):
    cert = _cert(and3, 0, "worst")
    cert["outputs"] = [0, 2]
    _rejects(and3, cert, "outputs", "differ from the spec's")


def test_wrong_declared_value(and3):
    cert = _cert(and3, 0, "worst")
    cert["lower"]["value"] = str(Fraction(cert["lower"]["value"]) + Fraction(1, 10**12))
    _rejects(and3, cert, "lower.value =", "worst accuracy under randomized response is")


def test_wrong_declared_bound(and3):
    cert = _cert(and3, 1, "worst")
    cert["upper"]["bound"] = "1"
    _rejects(and3, cert, "upper.bound = 1 but sum(mu) =")


def test_non_uniform_prior_for_the_average(and3):
    cert = _cert(and3, 0, "average")
    prior = cert["upper"]["prior"]
    prior[0], prior[1] = "3/16", "1/16"  # still a distribution
    _rejects(and3, cert, "upper.prior must be uniform (1/8) for the average accuracy")


def test_prior_not_a_distribution(and3):
    cert = _cert(and3, 0, "worst")
    cert["upper"]["prior"][0] = str(Fraction(cert["upper"]["prior"][0]) + 1)
    _rejects(and3, cert, "upper.prior is not a distribution")


def test_status_must_be_consistent(and3, maj3):
    bracket = _cert(maj3, 0, "average")
    bracket["status"] = "proved-optimal"
    _rejects(maj3, bracket, "proved-optimal needs the exact lambdas")
    unproved = _cert(and3, 0, "average")
    unproved["status"] = "unproved"
    _rejects(and3, unproved, "status 'unproved' proves nothing")


def test_wrong_problem_or_agent(and3):
    cert = _cert(and3, 0, "average")
    other = copy.deepcopy(cert)
    other["problem"] = "xor-3"
    _rejects(and3, other, "for problem 'xor-3', the spec is 'and3'")
    other = copy.deepcopy(cert)
    other["agent"] = "party:3"
    _rejects(and3, other, "no agent 'party:3'")


@pytest.mark.parametrize("mutate, text", [
    (lambda c: c.pop("upper"), "missing `upper`"),
    (lambda c: c["upper"]["mu"].pop(), "`upper.mu` has 7 entries, not 8"),
    (lambda c: c["upper"]["mu"].__setitem__(0, "0.5"), "is not an exact rational"),
    (lambda c: c["upper"]["mu"].__setitem__(0, "1/0"), "upper.mu[0]"),
    (lambda c: c.__setitem__("format", "other/1"), "`format` must be"),
    (lambda c: c["lower"]["decision"].pop(), "`lower.decision` needs 8 rows"),
])
def test_malformed_certificates(and3, mutate, text):
    cert = _cert(and3, 0, "average")
    mutate(cert)
    with pytest.raises(CertificateFormatError, match=None) as info:
        check_certificate(and3, cert)
    assert text in str(info.value)


# ------------------------------------------------------------------ arithmetic


@pytest.mark.parametrize("pq", [[(3, 2)], [(2, 1), (5, 3)], [(1, 1), (7, 2), (3, 1)]])
def test_corner_sums_match_the_definition(pq):
    """The one transform with classes of one party (RR's corners) against the sum."""
    k = len(pq)
    n = 1 << k
    v = [(7 * x * x - 3 * x + 2) % 11 - 4 for x in range(n)]
    got = transform([ClassOrbits(1, Fraction(p, q)) for p, q in pq], v)
    for s in range(n):
        expected = 0
        for x in range(n):
            w = 1
            for i, (p, q) in enumerate(pq):
                bit = k - 1 - i
                w *= p if ((x >> bit) & 1) == ((s >> bit) & 1) else q
            expected += w * v[x]
        assert got[s] == expected


# ------------------------------------------------------------------ independence


@pytest.mark.parametrize("module", sorted(p.name for p in CHECKER.glob("*.py")))
def test_checker_imports_only_stdlib_spec_and_flint(module):
    """Each checker module imports the standard library, python-flint, the spec layer
    (not its symmetry detection and orbit tables, spec/symmetric.py) and the package's own
    modules, and no underscore name of another module."""
    tree = ast.parse((CHECKER / module).read_text(encoding="utf-8"))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.add(node.module or "")
            private = [a.name for a in node.names if a.name.startswith("_")]
            assert not private, f"dpverify/checker/{module} imports {private}"
    assert modules, "no imports found: the test is broken"
    for name in modules:
        top = name.split(".")[0]
        allowed = (top in sys.stdlib_module_names or top == "flint"
                   or name.startswith(("dpverify.spec.", "dpverify.checker."))
                   or name == "dpverify.checker")  # `from dpverify.checker import core`
        assert allowed and name != "dpverify.spec.symmetric", f"dpverify/checker/{module} " \
                                                              f"imports {name}"


def test_checker_loads_no_solver_or_construction_module():
    code = ("import sys, dpverify.checker\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('dpverify.lp', "
            "'dpverify.verifiers', 'dpverify.runner', 'dpverify.theory', "
            "'dpverify.spec.symmetric', 'highspy', "
            "'cvxpy', 'scipy')))\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ""
