"""Symmetric problems by orbits (docs/theory.md, "Symmetry"): the transforms, the orbit
certificates and their checker, the methods, and symmetric problem files at large k."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpverify.checker import check_certificate
from dpverify.errors import SizeLimitError, SpecError
from dpverify.spec import loads
from dpverify.spec.model import Accuracy
from dpverify.spec.symmetric import agent_symmetry, count_form, count_values
from dpverify.theory.orbits.space import (
    OrbitArray,
    OrbitSpace,
    apply_m,
    apply_n,
    masses,
)
from dpverify.theory.rr import rr_matrix
from dpverify.verifiers.multiparty.orbit import orbit_certificate, verify_orbit_agent
from dpverify.verifiers.multiparty.planner import choose_method, verify_by_lp
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import Verdict

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"
OPTIONS = VerifyOptions()


# --------------------------------------------------------------------------- transforms


def _orbit_ids(sizes: tuple[int, ...], k: int) -> np.ndarray:
    """The orbit of every input for classes of consecutive parties with these sizes."""
    ids = []
    for x in range(1 << k):
        bits = [(x >> (k - i)) & 1 for i in range(1, k + 1)]
        index, start = 0, 0
        for n in sizes:
            index = index * (n + 1) + sum(bits[start:start + n])
            start += n
        ids.append(index)
    return np.array(ids)


@pytest.mark.parametrize("sizes, lambdas", [((2, 3), (2, Fraction(3, 2))), ((4,), (3,)),
                                            ((1, 2, 2), (Fraction(5, 4), 2, 7)),
                                            ((2, 2), (1, 3))])
def test_orbit_transforms_equal_randomized_response(sizes, lambdas):
    """Masses: M a^ = masses of S^T a, M v^ = masses of S v, N v^ = masses of S^-1 v,
    against the 2^k x 2^k matrix of randomized response."""
    space = OrbitSpace(sizes, tuple(Fraction(v) for v in lambdas))
    k = sum(sizes)
    S = rr_matrix([float(lam) for lam, n in zip(lambdas, sizes, strict=True) for _ in range(n)])
    ids = _orbit_ids(sizes, k)
    sizes_w = space.orbit_sizes()
    rng = np.random.default_rng(sum(sizes))
    a = rng.integers(-5, 6, size=(space.count, 2))
    got = apply_m(space, masses(OrbitArray.of(a.tolist()), sizes_w))
    per_input = np.array([[float(v) for v in row] for row in got.fractions()])
    per_input /= np.array(sizes_w)[:, None]
    assert np.abs(S.T @ a[ids] - per_input[ids]).max() < 1e-12
    if all(Fraction(v) > 1 for v in lambdas):
        inv = apply_n(space, masses(OrbitArray.of(a.tolist()), sizes_w))
        values = np.array([[float(v) for v in row] for row in inv.fractions()])
        values /= np.array(sizes_w)[:, None]
        assert np.abs(np.linalg.solve(S, a[ids].astype(float)) - values[ids]).max() < 1e-9


# --------------------------------------------------------------------------- orbit = LP


def _symmetric_shipped() -> list[Path]:
    out = []
    for path in sorted(PROBLEMS.glob("*.toml")):
        spec = loads(path.read_text(), source=str(path))
        if spec.kind == "multiparty" and spec.parties <= 8 and any(
                (s := agent_symmetry(spec, a)) is not None and not s.trivial
                for a in spec.agents):
            out.append(path)
    return out


SHIPPED = _symmetric_shipped()


def test_shipped_symmetric_problems_were_found():
    assert len(SHIPPED) >= 8
    classes = [loads(p.read_text(), source=str(p)) for p in SHIPPED]
    assert any(len(agent_symmetry(s, a).classes) >= 3 for s in classes for a in s.agents
               if a.party)  # several classes, a party agent among them


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_orbit_results_equal_the_full_corner_lp(path):
    spec = loads(path.read_text(), source=str(path))
    for agent in spec.agents:
        if agent_symmetry(spec, agent) is None:
            continue
        for accuracy in spec.accuracies:
            lp = verify_by_lp(spec, agent, accuracy, OPTIONS)
            orbit = verify_orbit_agent(spec, agent, accuracy, OPTIONS)
            assert orbit.verdict is Verdict.OPTIMAL and orbit.method == "orbit", orbit.reason
            assert orbit.relaxed_optimum == pytest.approx(lp.relaxed_optimum, abs=1e-9)
            assert orbit.rr_value == pytest.approx(lp.rr_value, abs=1e-9)


@st.composite
def symmetric_problems(draw):
    # at most 7 parties: the full corner LP, the reference here, stays within its guard
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3).filter(
        lambda s: sum(s) <= 7))
    k = sum(sizes)
    levels = ["2", "3/2", "3", "5/4"]
    lambdas = [levels[c] for c, n in enumerate(sizes) for _ in range(n)]
    counts = draw(st.lists(st.integers(0, 2), min_size=k + 1, max_size=k + 1))
    gain = draw(st.sampled_from(['"indicator"', '"-abs"', '{ expr = "-(f - y)**2 + f" }']))
    party = draw(st.integers(0, k))
    agent = ("[observer]" if party == 0 else f"[[party]]\nindex = {party}")
    return (f'[problem]\nparties = {k}\nlambda = {json.dumps(lambdas)}\n{agent}\n'
            f"function = {{ counts = {counts} }}\ngain = {gain}\n")


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(symmetric_problems())
def test_random_symmetric_problems_agree_with_the_lp(text):
    spec = loads(text)
    agent = spec.agents[0]
    for accuracy in (Accuracy.AVERAGE, Accuracy.WORST):
        lp = verify_by_lp(spec, agent, accuracy, OPTIONS)
        orbit = verify_orbit_agent(spec, agent, accuracy, OPTIONS)
        assert orbit.verdict is Verdict.OPTIMAL, orbit.reason
        assert orbit.relaxed_optimum == pytest.approx(lp.relaxed_optimum, abs=1e-8)


# --------------------------------------------------------------------------- symmetry


def _table_problem(values: list[int]) -> str:
    return (f'[problem]\nparties = 3\nlambda = "2"\n[observer]\n'
            f"function = {{ table = {values} }}\n")


def test_a_symmetric_table_is_detected():
    majority = [int(bin(x).count("1") >= 2) for x in range(8)]
    spec = loads(_table_problem(majority))
    assert agent_symmetry(spec, spec.agents[0]).classes == ((1, 2, 3),)


def test_a_table_symmetric_but_for_one_entry_is_not_reduced():
    """Negative control: f(011) differs from f(101) and f(110): party 1 cannot swap with 2
    or 3, while 2 and 3 still can."""
    almost = [int(bin(x).count("1") >= 2) for x in range(8)]
    almost[0b011] = 0
    spec = loads(_table_problem(almost))
    symmetry = agent_symmetry(spec, spec.agents[0])
    assert symmetry.classes == ((1,), (2, 3))
    cert = orbit_certificate(spec, spec.agents[0], "worst", OPTIONS).to_json(spec.name)
    assert check_certificate(spec, cert).ok
    forged = dict(cert, classes=[[1, 2, 3]])  # claiming the symmetry it does not have
    result = check_certificate(spec, forged)
    assert not result.ok and "swap" in result.message


def test_privacy_levels_split_the_classes_and_a_party_is_alone():
    spec = loads('[problem]\nparties = 5\nlambda = ["2", "2", "3", "3", "3"]\n'
                 '[observer]\nfunction = "majority"\n[[party]]\nindex = 4\nfunction = "xor"\n')
    observer, party = spec.agents
    assert agent_symmetry(spec, observer).classes == ((1, 2), (3, 4, 5))
    assert agent_symmetry(spec, party).classes == ((1, 2), (3, 5), (4,))


# --------------------------------------------------------------------------- certificates


def _k1000() -> object:
    return loads('[problem]\nparties = 60\nlambda = "2"\n[observer]\nfunction = "majority"\n')


def test_orbit_certificates_check_and_mutations_are_rejected():
    spec = _k1000()
    for accuracy in ("average", "worst"):
        cert = json.loads(json.dumps(orbit_certificate(spec, spec.agents[0], accuracy,
                                                       OPTIONS).to_json(spec.name)))
        assert cert["format"] == "dpverify-orbit-certificate/1"
        assert cert["status"] == "proved-optimal"
        assert check_certificate(spec, cert).ok
        mutations = {
            "mu": lambda c: c["upper"]["mu"].__setitem__(30, str(Fraction(c["upper"]["mu"][30])
                                                              - Fraction(1, 10**6))),
            "prior": lambda c: c["upper"]["prior"].__setitem__(
                max(range(61), key=lambda w: Fraction(c["upper"]["prior"][w])),
                str(Fraction(max(Fraction(v) for v in c["upper"]["prior"])) / 2)),
            "bound": lambda c: c["upper"].__setitem__("bound", "1"),
            "value": lambda c: c["lower"].__setitem__("value", "1"),
            "decision": lambda c: c["lower"]["decision"].__setitem__(30, ["1", "1"]),
            "lambda": lambda c: c["upper"]["lambdas"].__setitem__(0, "3/2"),
            "gain": lambda c: c["gain"][0].__setitem__(0, "7"),
            "classes": lambda c: c.__setitem__("classes", [list(range(1, 31)),
                                                          list(range(31, 61))]),
        }
        for name, mutate in mutations.items():
            bad = json.loads(json.dumps(cert))
            mutate(bad)
            try:
                result = check_certificate(spec, bad)
            except ValueError:  # a malformed certificate is refused as bad input
                continue
            assert not result.ok, f"{accuracy}: the {name} mutation passed"


def test_a_mu_shift_that_keeps_the_bound_is_caught():
    """Mass moved between two orbits of mu, the bound unchanged: a corner inequality fails."""
    spec = _k1000()
    cert = orbit_certificate(spec, spec.agents[0], "average", OPTIONS).to_json(spec.name)
    mu = [Fraction(v) for v in cert["upper"]["mu"]]
    a, b = 20, 40
    delta = Fraction(1, 10**9)
    mu[a] -= delta / math.comb(60, a)
    mu[b] += delta / math.comb(60, b)
    cert["upper"]["mu"] = [str(v) for v in mu]
    result = check_certificate(spec, cert)
    assert not result.ok and "corner inequality" in result.message


def test_an_orbit_bound_mismatch_names_the_weighted_sum():
    """The orbit checker's bound is sum_W |W| mu_W (one mu per orbit, |W| inputs each),
    and its message says so rather than a plain sum(mu)."""
    spec = _k1000()
    cert = orbit_certificate(spec, spec.agents[0], "average", OPTIONS).to_json(spec.name)
    cert["upper"]["bound"] = "1"
    result = check_certificate(spec, cert)
    assert not result.ok and "sum_W |W| mu_W" in result.message, result.message


def test_a_pure_certificate_fails_against_a_delta_problem():
    """Certificates prove RR optimal under pure epsilon-DP: against the same problem with
    delta > 0 (where interaction can help, docs/theory.md section 7) every one fails, while
    the pure problem accepts it (the positive control)."""
    pure = loads('[problem]\nparties = 12\nlambda = "2"\n[observer]\nfunction = "majority"\n')
    approximate = loads('[problem]\nparties = 12\nlambda = "2"\ndelta = "1/100"\n'
                        '[observer]\nfunction = "majority"\n')
    cert = orbit_certificate(pure, pure.agents[0], "average", OPTIONS).to_json(pure.name)
    assert check_certificate(pure, cert).ok
    result = check_certificate(approximate, cert)
    assert not result.ok and "delta > 0" in result.message, result.message


# --------------------------------------------------------------------------- files


def test_count_functions_and_sum_only_expressions():
    assert count_form("1 if sum(x) > k/2 else 0") == "1 if c > k/2 else 0"
    assert count_form("x1 + sum(x)") is None and count_form("min(x)") is None
    spec = loads('[problem]\nparties = 10000\nlambda = "2"\n[observer]\n'
                 'function = { expr = "sum(x) % 3" }\n[[party]]\nindex = 7\n'
                 "function = { counts = [" + ", ".join(["0", "1"] * 5000) + ", 0] }\n")
    assert count_values(spec.agents[0].function, 10000)[:4] == (0, 1, 2, 0)
    assert count_values(spec.agents[1].function, 10000)[:3] == (0, 1, 0)


@pytest.mark.parametrize("text, key", [
    ('[problem]\nparties = 61\nepsilon = 1\n[observer]\nfunction = { expr = "x1" }\n',
     "observer.function"),
    ('[problem]\nparties = 3\nepsilon = 1\n[observer]\nfunction = { counts = [0, 1] }\n',
     "observer.function.counts"),
    ('[problem]\nparties = 200000\nepsilon = 1\n[observer]\nfunction = "xor"\n',
     "problem.parties"),
])
def test_bad_symmetric_files_get_one_line(text, key):
    with pytest.raises((SpecError, SizeLimitError)) as info:
        loads(text, source="p.toml")
    message = str(info.value)
    assert message.startswith("p.toml: ") and f"`{key}`" in message and "\n" not in message


def test_methods_auto_lp_orbit_proof():
    small = loads('[problem]\nparties = 4\nlambda = "2"\n[observer]\nfunction = "xor"\n')
    large = loads('[problem]\nparties = 200\nlambda = "2"\n[observer]\nfunction = "xor"\n')
    distinct = json.dumps([f"{i + 2}/{i + 1}" for i in range(14)])  # no two parties alike
    odd = loads(f'[problem]\nparties = 14\nlambda = {distinct}\n[observer]\n'
                'function = "majority"\n')
    a = Accuracy.AVERAGE
    assert choose_method(small, small.agents[0], a, OPTIONS)[0] == "proof"
    assert choose_method(small, small.agents[0], a, VerifyOptions(grid=3))[0] == "lp"
    assert choose_method(large, large.agents[0], a, OPTIONS)[0] == "orbit"
    assert choose_method(odd, odd.agents[0], a, OPTIONS)[0] == "proof"
    with pytest.raises(SizeLimitError, match="full LP"):
        choose_method(large, large.agents[0], a, VerifyOptions(method="lp"))
    with pytest.raises(SizeLimitError, match="no symmetry"):
        choose_method(odd, odd.agents[0], a, VerifyOptions(method="orbit"))
    with pytest.raises(SizeLimitError, match="max-orbit-work"):
        choose_method(large, large.agents[0], a, VerifyOptions(method="orbit",
                                                               max_orbit_work=10))
