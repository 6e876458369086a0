"""Exact certificates (docs/theory.md, "Certificates"): construction, exact arithmetic,
the commands.

Every certificate built here is checked by the independent checker (dpverify.checker);
values are compared with closed forms (theory.md) and with the float LP verifier.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from flint import arb, ctx, fmpq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpverify.checker import check_certificate
from dpverify.cli import main
from dpverify.spec import load, loads
from dpverify.spec.model import Accuracy
from dpverify.spec.tables import tabulate
from dpverify.theory.certificates import (
    WorstHint,
    exact_worst_lp,
    symmetry_orbits,
    trivial_orbits,
    upper_from_prior,
    worst_certificate,
)
from dpverify.theory.certificates import worst as certs
from dpverify.theory.exact import (
    Scaled,
    exp_bracket,
    lambda_brackets,
    rr_apply,
    rr_inverse_apply,
)
from dpverify.theory.exact_lp import ExactLpError, simplex_from_basis
from dpverify.theory.rr import rr_matrix
from dpverify.verifiers.certifiers import certificate_filename, certify_agent
from dpverify.verifiers.multiparty.planner import certificate_for, proof_for, verify_by_lp
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.proof import proof_of

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"


def _roundtrip(cert: dict) -> dict:
    return json.loads(json.dumps(cert))


def _certify_and_check(spec, agent, accuracy) -> tuple[dict, object]:
    cert = _roundtrip(certify_agent(spec, agent, accuracy))
    result = check_certificate(spec, cert)
    assert result.ok, f"{spec.name} {agent.name} {accuracy}: {result.message}"
    return cert, result


# ------------------------------------------------------------------ shipped problems


def _shipped():
    out = []
    for path in sorted(PROBLEMS.glob("*.toml")):
        spec = load(path)
        if spec.kind == "multiparty":  # the float LP cross-check is slow beyond k = 8
            marks = [pytest.mark.slow] if spec.parties > 8 else []
            out.append(pytest.param(path, id=path.stem, marks=marks))
    return out


@pytest.mark.parametrize("path", _shipped())
def test_shipped_problems_certify_and_check(path):
    spec = load(path)
    for agent in spec.agents:
        for accuracy in spec.accuracies:
            cert, _ = _certify_and_check(spec, agent, accuracy)
            bound = Fraction(cert["upper"]["bound"])
            value = Fraction(cert["lower"]["value"])
            if spec.lambdas_exact is not None:
                assert cert["status"] == "proved-optimal"
                assert value == bound
            else:
                assert cert["status"] == "bracket"
                assert 0 <= bound - value <= Fraction(1, 10**15) * (1 + abs(value))
            # a second, independent computation: the float relaxed LP of the verifier
            lp = verify_by_lp(spec, agent, accuracy, VerifyOptions())
            assert lp.relaxed_optimum == pytest.approx(float(bound), abs=1e-9)


def test_shipped_problems_exist():
    assert _shipped(), "no multi-party problems in problems/"


# ------------------------------------------------------------------ closed forms


def _spec(text: str, name: str = "p"):
    return loads(text, source=f"{name}.toml", default_name=name)


def _xor_closed_form(k: int, lam: Fraction) -> Fraction:
    """KOV Corollary 3.1: sum_i C(k, 2i) lam^(k - 2i) / (1 + lam)^k."""
    return sum(math.comb(k, 2 * i) * lam ** (k - 2 * i) for i in range(k // 2 + 1)) \
        / (1 + lam) ** k


@pytest.mark.parametrize("k", [1, 2, 3, 5])
@pytest.mark.parametrize("lam", ["2", "3/2", "1"])
def test_xor_matches_corollary_3_1(k, lam):
    spec = _spec(f'[problem]\nparties = {k}\nlambda = "{lam}"\n[observer]\nfunction = "xor"\n')
    expected = _xor_closed_form(k, Fraction(lam))
    for accuracy in ("average", "worst"):
        cert, result = _certify_and_check(spec, spec.agents[0], accuracy)
        assert cert["status"] == "proved-optimal"
        assert result.value == expected


def test_one_party_closed_forms():
    spec = _spec('[problem]\nparties = 1\nlambda = "5/2"\n[observer]\nfunction = "bit:1"\n'
                 '[[party]]\nindex = 1\nfunction = "bit:1"\n')
    for accuracy in ("average", "worst"):
        _, observer = _certify_and_check(spec, spec.agents[0], accuracy)
        _, party = _certify_and_check(spec, spec.agents[1], accuracy)
        assert observer.value == Fraction(5, 2) / (1 + Fraction(5, 2))
        assert party.value == 1


def test_negative_control_closed_form_differs():
    """The closed-form comparison can fail: XOR at lambda = 2 is not AND's value."""
    spec = _spec('[problem]\nparties = 3\nlambda = "2"\n[observer]\nfunction = "and"\n')
    _, result = _certify_and_check(spec, spec.agents[0], "average")
    assert result.value != _xor_closed_form(3, Fraction(2))


# ------------------------------------------------------------------ lambda = 1


def test_all_lambdas_one():
    """lambda = 1 everywhere: RR reveals nothing, the observer of XOR is at 1/2."""
    spec = _spec('[problem]\nparties = 3\nlambda = "1"\n[observer]\nfunction = "xor"\n'
                 '[[party]]\nindex = 2\nfunction = "xor"\n')
    for agent in spec.agents:
        for accuracy in ("average", "worst"):
            cert, result = _certify_and_check(spec, agent, accuracy)
            assert cert["status"] == "proved-optimal"
            assert result.value == Fraction(1, 2)


@pytest.mark.parametrize("accuracy", ["average", "worst"])
def test_some_lambdas_one(accuracy):
    spec = _spec('[problem]\nparties = 3\nlambda = ["1", "3", "1"]\n[observer]\n'
                 'function = "majority"\n[[party]]\nindex = 1\n'
                 'function = { expr = "x1 + x2 + x3" }\n'
                 'gain = "-abs"\n')
    for agent in spec.agents:
        cert, _ = _certify_and_check(spec, agent, accuracy)
        assert cert["status"] == "proved-optimal"


def test_epsilon_zero_is_exact():
    """epsilon = 0 gives lambda = 1 exactly: the bracket collapses and the value is proved."""
    spec = _spec('[problem]\nparties = 2\nepsilon = 0\n[observer]\nfunction = "and"\n')
    assert lambda_brackets(None, spec.epsilons_exact) == ((Fraction(1),) * 2,) * 2
    cert, result = _certify_and_check(spec, spec.agents[0], "average")
    assert cert["status"] == "proved-optimal"
    assert result.value == Fraction(3, 4)  # always answer 0


def test_inverse_on_a_singular_axis():
    lams = [Fraction(1), Fraction(3, 2)]
    v = Scaled.from_fractions([Fraction(1, 3), Fraction(2), Fraction(-1, 5), Fraction(7)])
    Sv = rr_apply(lams, v)  # constant along the lambda = 1 axis
    back = rr_apply(lams, rr_inverse_apply(lams, Sv))
    assert back.fractions() == Sv.fractions()
    assert rr_inverse_apply(lams, Sv).total() == Sv.total()


# ------------------------------------------------------------------ exact arithmetic


def test_rr_apply_matches_float_matrix():
    lams = [Fraction(3, 2), Fraction(2), Fraction(7, 3)]
    values = [Fraction(i * i - 3, 7 + i) for i in range(8)]
    got = np.array([float(x) for x in rr_apply(lams, Scaled.from_fractions(values)).fractions()])
    expected = rr_matrix([float(x) for x in lams]) @ np.array([float(x) for x in values])
    assert np.allclose(got, expected, rtol=1e-14, atol=1e-15)
    inverse = rr_inverse_apply(lams, rr_apply(lams, Scaled.from_fractions(values)))
    assert inverse.fractions() == values


@pytest.mark.parametrize("eps", [Fraction(1), Fraction(1, 10), Fraction(0.1), Fraction(3, 2),
                                 Fraction(1, 10**20), Fraction(700), Fraction(1234, 7)])
def test_exp_bracket_is_rigorous_and_tight(eps):
    lo, hi = exp_bracket(eps)
    assert lo <= hi and hi - lo <= Fraction(1, 10**15) * lo
    old = ctx.prec
    try:
        ctx.prec = 400
        e = arb(fmpq(eps.numerator, eps.denominator)).exp()
        assert arb(fmpq(lo.numerator, lo.denominator)) <= e
        assert e <= arb(fmpq(hi.numerator, hi.denominator))
    finally:
        ctx.prec = old


def test_exp_bracket_edges():
    assert exp_bracket(Fraction(0)) == (1, 1)
    with pytest.raises(ValueError):
        exp_bracket(Fraction(-1))


def test_exact_simplex_small_lp():
    """max x + y/2 s.t. x <= 2, y <= 3, x + y <= 4 (slacks s1..s3): optimum 3 at (2, 2)."""
    rows = [[1, 0, 1, 0, 0], [0, 1, 0, 1, 0], [1, 1, 0, 0, 1]]
    sol = simplex_from_basis(rows, [2, 3, 4], [1, Fraction(1, 2), 0, 0, 0], [2, 3, 4])
    assert sol.value == 3 and sol.z[:2] == [2, 2]
    assert sol.y == [Fraction(1, 2), 0, Fraction(1, 2)]  # the duals
    # started from the optimal basis: no pivot, same answer
    again = simplex_from_basis(rows, [2, 3, 4], [1, Fraction(1, 2), 0, 0, 0], list(sol.basis))
    assert again.pivots == 0 and again.value == 3


def test_exact_simplex_rejects_a_bad_start():
    rows = [[1, 0, 1, 0, 0], [0, 1, 0, 1, 0], [1, 1, 0, 0, 1]]
    with pytest.raises(ExactLpError, match="not primal feasible"):
        simplex_from_basis(rows, [2, 3, 4], [1, 1, 0, 0, 0], [0, 1, 4])  # x=2, y=3: s3 < 0
    with pytest.raises(ExactLpError, match="singular"):
        simplex_from_basis(rows, [2, 3, 4], [1, 1, 0, 0, 0], [0, 2, 4])


# ------------------------------------------------------------------ symmetry


def _table(spec):
    return tabulate(spec, spec.agents[0])


def test_symmetry_orbits():
    xor = _spec('[problem]\nparties = 4\nlambda = "2"\n[observer]\nfunction = "xor"\n')
    assert symmetry_orbits(xor.lambdas_exact, _table(xor).gain_exact, 0).count == 5
    mixed = _spec('[problem]\nparties = 4\nlambda = ["2", "2", "3", "3"]\n'
                  '[observer]\nfunction = "xor"\n')
    orbits = symmetry_orbits(mixed.lambdas_exact, _table(mixed).gain_exact, 0)
    assert orbits.count == 9 and sorted(orbits.blocks) == [(1, 2), (3, 4)]
    party = _spec('[problem]\nparties = 4\nlambda = "2"\n[[party]]\nindex = 1\n'
                  'function = "xor"\n')
    orbits = symmetry_orbits(party.lambdas_exact, _table(party).gain_exact, 1)
    assert orbits.count == 8 and orbits.blocks == ((2, 3, 4),)
    # negative control: x1 and not x2 is not symmetric in (1, 2)
    lopsided = _spec('[problem]\nparties = 2\nlambda = "2"\n[observer]\n'
                     'function = { expr = "x1 and not x2" }\n')
    assert symmetry_orbits(lopsided.lambdas_exact, _table(lopsided).gain_exact, 0).count == 4


def test_exact_lp_agrees_with_the_fast_path():
    spec = _spec('[problem]\nparties = 3\nlambda = ["3/2", "2", "5/2"]\n[observer]\n'
                 'function = "and"\n')
    table = _table(spec)
    gain = Scaled.from_fractions(table.gain_exact)
    _, prior, value, _ = exact_worst_lp(spec.lambdas_exact, gain, 0, None, trivial_orbits(3))
    _, bound = upper_from_prior(spec.lambdas_exact, gain, 0, prior)
    assert value == bound == Fraction(138, 245)
    cert = certify_agent(spec, spec.agents[0], "worst")
    assert Fraction(cert["lower"]["value"]) == value


def _bad_hints(n: int, m: int, with_prior: bool) -> dict:
    rng = np.random.default_rng(3)
    rule = rng.uniform(size=(n, m))
    rule /= rule.sum(axis=1, keepdims=True)
    prior = rng.uniform(size=n) if with_prior else None
    return {None: WorstHint(rule=rule, prior=None if prior is None else prior / prior.sum(),
                            x_orbits=np.arange(n))}


def test_bad_hints_fall_back_to_the_exact_lp(monkeypatch):
    calls = []
    original = certs.exact_worst_lp
    monkeypatch.setattr(certs, "exact_worst_lp", lambda *a: calls.append(1) or original(*a))
    spec = _spec('[problem]\nparties = 3\nlambda = ["3/2", "2", "5/2"]\n[observer]\n'
                 'function = "and"\n')
    table = _table(spec)
    cert = worst_certificate("observer", table.outputs, table.gain_exact, 0,
                             spec.lambdas_exact, spec.lambdas_exact, True, trivial_orbits(3),
                             _bad_hints(8, 2, True))
    assert calls, "the fast path accepted random hints: the fallback was not exercised"
    assert cert.status == "proved-optimal" and cert.value == Fraction(138, 245)
    assert check_certificate(spec, _roundtrip(cert.to_json(spec.name))).ok


@pytest.mark.parametrize("party", [0, 2])
def test_verify_s_budget_lets_a_checked_bracket_within_tol_stand(monkeypatch, party):
    """verify's quick mode (quick_width): where the hints' exact bracket is within it, the
    exact simplex of a small sub-problem gets a pivot budget, and past it the bracket
    stands, noted, and checks. Controls: the same with no quick width (certify) and with
    a quick width the bracket is not within both prove the optimum exactly."""
    agent = '[observer]' if party == 0 else f'[[party]]\nindex = {party}'
    spec = _spec('[problem]\nparties = 4\nlambda = ["3/2", "2", "5/2", "3"]\n'
                 f'{agent}\nfunction = "majority"\n')
    table = _table(spec)
    n = 1 << spec.parties
    hints = _bad_hints(n, 2, True)
    if party:
        hints = {0: hints[None], 1: hints[None]}

    def certificate(quick_width):
        name = "observer" if party == 0 else f"party:{party}"
        return worst_certificate(name, table.outputs, table.gain_exact, party,
                                 spec.lambdas_exact, spec.lambdas_exact, True,
                                 trivial_orbits(spec.parties), hints, None, quick_width)

    proved = certificate(None)
    assert proved.status == "proved-optimal"
    assert certificate(Fraction(0)).status == "proved-optimal"  # not within: no budget
    monkeypatch.setattr(certs, "quick_pivot_work", lambda lambdas: 0)  # 4 pivots
    quick = certificate(Fraction(1))
    assert quick.status == "bracket", "the budget was never reached: the test is void"
    assert any("stands" in note for note in quick.notes)
    result = check_certificate(spec, _roundtrip(quick.to_json(spec.name)))
    assert result.ok, result.message
    assert result.bracket[0] <= proved.value <= result.bracket[1]


def _checked_observer(parties: int, lambdas: str, function: str, hints: dict,
                      quick_width: Fraction | None):
    """The observer's worst-case certificate from `hints` at the fine brackets of the
    levels (`lambdas`, a problem-file line), checked by the independent checker:
    (certificate, the check's result, the lower lambdas)."""
    spec = _spec(f'[problem]\nparties = {parties}\n{lambdas}\n[observer]\n'
                 f'function = "{function}"\n')
    table = _table(spec)
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    cert = worst_certificate("observer", table.outputs, table.gain_exact, 0, lower, upper,
                             lower == upper, trivial_orbits(parties), hints, None,
                             quick_width)
    result = check_certificate(spec, _roundtrip(cert.to_json(spec.name)))
    assert result.ok, result.message
    return cert, result, lower


def test_verify_skips_a_large_rule_repair_where_the_rationalised_bracket_stands(monkeypatch):
    """verify's quick mode with lambdas from epsilon: where the rule's repair would pass
    QUICK_REPAIR_WORK (rule_repair_work > the limit) and the rationalised hints already
    bracket the optimum within the quick width, that checked bracket stands without the
    repair (noted) and contains certify's bracket's optimum. Controls: no quick width
    (certify), a quick width the bracket is not within, work at the limit (not past it),
    and exact lambdas (their repair is cheap: it always runs) all repair."""
    from dpverify.theory.certificates.repair import rule_repair_work

    hints = _bad_hints(8, 2, True)
    repairs = []
    original = certs.exact_worst_rule
    monkeypatch.setattr(certs, "exact_worst_rule",
                        lambda *a: repairs.append(1) or original(*a))

    def certificate(lambdas, quick_width):
        repairs.clear()
        return _checked_observer(3, lambdas, "and", hints, quick_width)

    from_epsilon = "epsilon = [0.4, 0.7, 1.1]"
    _, _, lower = certificate(from_epsilon, None)
    work = rule_repair_work(trivial_orbits(3), hints[None], lower)
    monkeypatch.setattr(certs, "QUICK_REPAIR_WORK", work - 1)
    _, proved, _ = certificate(from_epsilon, None)
    assert repairs, "certify did not repair"
    certificate(from_epsilon, Fraction(0))
    assert repairs, "a bracket that is not within skipped the repair"
    quick, result, _ = certificate(from_epsilon, Fraction(1))
    assert not repairs, "the repair ran: the guard did not act"
    assert any("word operations" in note for note in quick.notes)
    # both brackets hold the optimum: they meet
    assert result.bracket[0] <= proved.bracket[1] and proved.bracket[0] <= result.bracket[1]
    monkeypatch.setattr(certs, "QUICK_REPAIR_WORK", work)  # at the limit: not past it
    certificate(from_epsilon, Fraction(1))
    assert repairs, "work at the limit skipped the repair"
    monkeypatch.setattr(certs, "QUICK_REPAIR_WORK", 0)
    certificate('lambda = ["3/2", "2", "5/2"]', Fraction(1))
    assert repairs, "exact lambdas skipped the repair"


def test_verify_lets_a_bracket_from_epsilon_stand_without_the_exact_simplex(monkeypatch):
    """With lambdas from epsilon the exact simplex gives a bracket too: in verify's quick
    mode a checked bracket within the quick width stands without it (as on orbits).
    Controls: certify (no quick width) and exact lambdas run the exact simplex."""
    simplexes = []
    original = certs._exact_subproblem
    monkeypatch.setattr(certs, "_exact_subproblem",
                        lambda *a, **kw: simplexes.append(1) or original(*a, **kw))
    hints = _bad_hints(16, 2, True)

    def certificate(lambdas, quick_width):
        simplexes.clear()
        return _checked_observer(4, lambdas, "majority", hints, quick_width)[0]

    from_epsilon = "epsilon = [0.4, 0.7, 0.9, 1.1]"
    quick = certificate(from_epsilon, Fraction(1))
    assert not simplexes, "the exact simplex ran where the bracket stands"
    assert any("stands" in note for note in quick.notes)
    certificate(from_epsilon, None)
    assert simplexes, "certify did not run the exact simplex"
    certificate('lambda = ["3/2", "2", "5/2", "3"]', Fraction(1))
    assert simplexes, "exact lambdas did not run the exact simplex"


def test_rule_repair_work_counts_equations_unknowns_and_words():
    """Two fractional tau-orbits (supports of 2 and 3 outputs) and a prior on 3 of 4
    x-orbits: 5 equations, 6 unknowns (5 entries and t); one word per 64 bits of the
    lambdas. Without a prior, every relevant x-orbit may be tight: 6 equations."""
    from dpverify.theory.certificates.repair import rule_repair_work

    rule = np.array([[1.0, 0, 0], [0.5, 0.5, 0], [0.2, 0.3, 0.5], [0, 0, 1.0]])
    hint = WorstHint(rule=rule, prior=np.array([0.5, 0.25, 0.25, 0.0]),
                     x_orbits=np.arange(4))
    orbits = trivial_orbits(2)
    assert rule_repair_work(orbits, hint, [Fraction(3, 2)] * 2) == 5 * 6 * 5
    wide = [Fraction(2**70 + 1, 2**70)] * 2  # 71 bits each: 2 words
    assert rule_repair_work(orbits, hint, wide) == 5 * 6 * 5 * 2
    no_prior = WorstHint(rule=rule, prior=None, x_orbits=np.arange(4))
    assert rule_repair_work(orbits, no_prior, [Fraction(3, 2)] * 2) == 6 * 6 * 6


def test_quick_pivot_work_counts_the_lambdas_words():
    assert certs.quick_pivot_work([Fraction(3, 2)] * 10) == certs.QUICK_PIVOT_WORK
    floats = [Fraction(2.718281828459045)] * 6  # 52-53 bits each: about 5 words in all
    assert certs.quick_pivot_work(floats) == certs.QUICK_PIVOT_WORK // 4


def test_bad_hints_without_the_exact_lp_give_a_valid_weaker_certificate(monkeypatch):
    monkeypatch.setattr(certs, "MAX_EXACT_ROWS", 0)
    spec = _spec('[problem]\nparties = 3\nlambda = ["3/2", "2", "5/2"]\n[observer]\n'
                 'function = "and"\n')
    table = _table(spec)
    for with_prior in (True, False):
        cert = worst_certificate("observer", table.outputs, table.gain_exact, 0,
                                 spec.lambdas_exact, spec.lambdas_exact, True,
                                 trivial_orbits(3), _bad_hints(8, 2, with_prior))
        assert cert.status == "bracket" and cert.width > 0 and cert.notes
        result = check_certificate(spec, _roundtrip(cert.to_json(spec.name)))
        assert result.ok, result.message
        assert result.bracket[0] < Fraction(138, 245) < result.bracket[1]


def test_hint_lp_failure_falls_back_to_the_exact_simplex(monkeypatch):
    import dpverify.verifiers.multiparty.hints as glue
    from dpverify.errors import SolverError
    from dpverify.lp import LpSolution, LpStatus

    def failing(*args, **kwargs):
        return LpSolution(LpStatus.ERROR, float("nan"), np.zeros(0), np.zeros(0), 0.0, "highs",
                          "simulated failure")

    options = VerifyOptions(solve_with=failing)
    spec = _spec('[problem]\nparties = 3\nlambda = ["3/2", "2", "5/2"]\n[observer]\n'
                 'function = "and"\n[[party]]\nindex = 2\nfunction = "xor"\n')
    for agent in spec.agents:
        cert = _roundtrip(certify_agent(spec, agent, "worst", options=options))
        assert cert["status"] == "proved-optimal"
        assert check_certificate(spec, cert).ok
    # too large for the exact simplex: the solver failure is reported, never a pass
    monkeypatch.setattr(glue, "MAX_EXACT_ROWS", 0)
    with pytest.raises(SolverError, match="simulated failure"):
        certify_agent(spec, spec.agents[0], "worst", options=options)


# ------------------------------------------------------------------ hypothesis


@st.composite
def instances(draw):
    k = draw(st.integers(1, 3))
    n = 1 << k
    values = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    distinct = len(set(values))
    m = draw(st.integers(1, 3))
    entry = st.fractions(min_value=-3, max_value=3, max_denominator=4)
    matrix = draw(st.lists(st.lists(entry, min_size=m, max_size=m),
                           min_size=distinct, max_size=distinct))
    lam = st.fractions(min_value=1, max_value=9, max_denominator=5)
    lambdas = draw(st.lists(lam, min_size=k, max_size=k))
    party = draw(st.integers(0, k))
    return k, values, m, matrix, lambdas, party


def _instance_spec(k, values, m, matrix, lambdas, party):
    def q(v):
        return f'"{v.numerator}/{v.denominator}"'

    agent = "[observer]" if party == 0 else f"[[party]]\nindex = {party}"
    rows = ", ".join("[" + ", ".join(q(v) for v in row) + "]" for row in matrix)
    text = (f"[problem]\nparties = {k}\nlambda = [{', '.join(q(v) for v in lambdas)}]\n"
            f"{agent}\nfunction = {{ table = {values} }}\ngain = {{ matrix = [{rows}] }}\n"
            f"outputs = {list(range(m))}\n")
    return _spec(text, "random")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_random_instances_are_proved_optimal(instance):
    spec = _instance_spec(*instance)
    for accuracy in ("average", "worst"):
        cert, result = _certify_and_check(spec, spec.agents[0], accuracy)
        assert cert["status"] == "proved-optimal", cert.get("notes")
        assert result.value == Fraction(cert["upper"]["bound"])


# ------------------------------------------------------------------ glue


def test_certificate_filename():
    assert certificate_filename("and-3", "party:2", "worst") == "and-3.party-2.worst.cert.json"
    assert certificate_filename("xor", "observer", "average") == "xor.observer.average.cert.json"


def test_proof_of_a_certificate():
    """A result's `proof` from a typed certificate: status, width, the exact value."""
    from dataclasses import replace

    spec = _spec('[problem]\nparties = 3\nlambda = "2"\n[observer]\nfunction = "and"\n')
    cert = certificate_for(spec, spec.agents[0], "average")
    proved = replace(cert, value=Fraction(1, 2), bound=Fraction(1, 2), status="proved-optimal")
    assert proof_of(proved).to_json() == {"status": "proved-optimal", "width": 0.0,
                                          "value": "1/2"}
    wide = replace(cert, value=Fraction(1, 2), bound=Fraction(3, 4), status="bracket")
    assert proof_of(wide).to_json() == {"status": "bracket", "width": 0.25}
    assert proof_of(replace(wide, status="unproved")).to_json()["status"] == "unproved"


def test_proof_for_reports_limits_as_unproved():
    spec = _spec('[problem]\nparties = 3\nlambda = ["3/2", "2", "5/2"]\n[observer]\n'
                 'function = "and"\n')
    assert proof_for(spec, spec.agents[0], "worst").status == "proved-optimal"
    tiny = VerifyOptions(max_nonzeros=10)
    summary = proof_for(spec, spec.agents[0], "worst", options=tiny).to_json()
    assert summary["status"] == "unproved" and "non-zeros" in summary["reason"]


def test_certify_uses_the_verifier_hints():
    spec = _spec('[problem]\nparties = 3\nlambda = ["3/2", "2", "5/2"]\n[[party]]\n'
                 'index = 1\nfunction = "and"\n')
    agent = spec.agents[0]
    result = verify_by_lp(spec, agent, Accuracy.WORST, VerifyOptions())
    cert = certify_agent(spec, agent, Accuracy.WORST, result)
    assert cert["status"] == "proved-optimal"
    assert float(Fraction(cert["lower"]["value"])) == pytest.approx(result.rr_value, abs=1e-9)


# ------------------------------------------------------------------ commands


AND3 = """
[problem]
name = "and-3"
parties = 3
lambda = ["3/2", "2", "5/2"]
[observer]
function = "and"
[[party]]
index = 2
function = "and"
"""


def test_certify_and_check_cert_commands(write_toml, tmp_path):
    spec = write_toml(AND3, "and-3")
    out = tmp_path / "certs"
    runner = CliRunner()
    res = runner.invoke(main, ["certify", str(spec), "-o", str(out)])
    assert res.exit_code == 0, res.output
    names = sorted(p.name for p in out.iterdir())
    assert names == ["and-3.observer.average.cert.json", "and-3.observer.worst.cert.json",
                     "and-3.party-2.average.cert.json", "and-3.party-2.worst.cert.json"]
    assert res.output.count("proved-optimal") == 4
    files = [str(out / name) for name in names]
    res = runner.invoke(main, ["check-cert", str(spec), *files])
    assert res.exit_code == 0, res.output
    assert "OK " in res.output and "proved value 138/245" in res.output
    # a mutated certificate fails with exit 1 and the reason
    cert = json.loads((out / names[1]).read_text())
    cert["upper"]["bound"] = "1"
    bad = tmp_path / "bad.cert.json"
    bad.write_text(json.dumps(cert))
    res = runner.invoke(main, ["check-cert", str(spec), files[0], str(bad)])
    assert res.exit_code == 1
    assert f"FAIL {bad}: upper.bound = 1 but sum(mu)" in res.output
    # a malformed file: exit 2 and one line
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    res = runner.invoke(main, ["check-cert", str(spec), str(junk)])
    assert res.exit_code == 2
    assert len(res.output.strip().splitlines()) == 1 and "not a certificate" in res.output


def test_certify_epsilon_brackets(write_toml, tmp_path):
    spec = write_toml('[problem]\nname = "maj"\nparties = 3\nepsilon = 1\n'
                      'accuracy = "worst"\n[observer]\nfunction = "majority"\n', "maj")
    res = CliRunner().invoke(main, ["certify", str(spec), "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("bracket") and "width" in res.output
    res = CliRunner().invoke(main, ["check-cert", str(spec),
                                    str(tmp_path / "maj.observer.worst.cert.json")])
    assert res.exit_code == 0 and "bracket [" in res.output


def test_certify_size_limit_is_exit_3(write_toml, tmp_path):
    spec = write_toml(AND3, "and-3")
    res = CliRunner().invoke(main, ["certify", str(spec), "-o", str(tmp_path),
                                    "--max-nonzeros", "10"])
    assert res.exit_code == 3
    assert "non-zeros" in res.output


def test_certify_refuses_count_problems(write_toml, tmp_path):
    spec = write_toml('[problem]\nkind = "count"\nn = 3\nepsilon = 1\n[consumer]\n'
                      'loss = "abs"\n', "count")
    res = CliRunner().invoke(main, ["certify", str(spec), "-o", str(tmp_path)])
    assert res.exit_code == 2
    assert "multi-party" in res.output


@pytest.mark.parametrize("command", ["certify", "check-cert"])
def test_commands_have_help(command):
    res = CliRunner().invoke(main, [command, "--help"])
    assert res.exit_code == 0
    assert len(res.output.split("\n\n")[1].strip()) > 40


def test_exact_simplex_integer_rows_as_fractions():
    """Integer rows take a short way in (no Fractions, scale 1): the same optimum, basis
    and duals as the same rows given as Fractions, and as the rows divided by 3 (whose
    duals are 3 times as large)."""
    rows = [[2, 1, 1, 0, 0], [1, 3, 0, 1, 0], [1, 1, 0, 0, 1]]
    rhs, cost = [8, 9, 4], [3, 2, 0, 0, 0]
    ints = simplex_from_basis(rows, rhs, cost, [2, 3, 4])
    fractions = simplex_from_basis([[Fraction(v) for v in r] for r in rows],
                                   [Fraction(v) for v in rhs], cost, [2, 3, 4])
    thirds = simplex_from_basis([[Fraction(v, 3) for v in r] for r in rows],
                                [Fraction(v, 3) for v in rhs], cost, [2, 3, 4])
    assert ints.value == fractions.value == thirds.value == 12  # x = 4, y = 0
    assert ints.z == fractions.z == thirds.z == [4, 0, 0, 5, 0]
    assert ints.basis == fractions.basis == thirds.basis
    assert ints.y == fractions.y == [1, 0, 1]
    assert thirds.y == [3 * v for v in ints.y]


def test_verify_s_quick_width_is_in_normalised_gains(monkeypatch):
    """exact_certificate hands worst_certificate half of --tol in normalised gains (the
    hints' brackets there are in [0, 1] units), not half of the tolerance in the user's
    units: a gain of range 3 tells them apart (the negative control)."""
    from dpverify.spec.model import Accuracy
    from dpverify.verifiers.multiparty import all_inputs
    from dpverify.verifiers.multiparty.memo import Hints
    from dpverify.verifiers.multiparty.reductions import AgentProblem
    from dpverify.verifiers.options import VerifyOptions

    seen = []
    original = certs.worst_certificate

    def spy(*args, **kwargs):
        seen.append(args[-1])
        return original(*args, **kwargs)

    monkeypatch.setattr(certs, "worst_certificate", spy)  # imported where it is used
    spec = _spec('[problem]\nparties = 3\nepsilon = [0.5, 1.0, 2.0]\naccuracy = "worst"\n'
                 '[observer]\nfunction = "sum"\ngain = "-abs"\n')
    options = VerifyOptions(tol=1e-9)
    problem = AgentProblem(spec, spec.agents[0], Accuracy.WORST, options)
    all_inputs.exact_certificate(problem, Hints(), quick=True)
    assert seen and seen[0] == Fraction(1e-9) / 2
    assert problem.tol / 2 != seen[0]  # the user's units differ here (range 3)
    seen.clear()
    all_inputs.exact_certificate(problem, Hints(), quick=False)
    assert seen == [None]
