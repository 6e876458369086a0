"""A referee's attempts at false certificates, beyond tests/test_checker_core.py's
mutations: on the orbit format with two privacy classes and a party agent alone in its
class, the all-input format with float epsilons (a bracket of lambdas), and the delta
format with two parties of different deltas. Every tampering that changes what is claimed
is rejected, by the check that should catch it; the rewritings that keep the claim (the
classes listed in another order with every orbit vector permuted alike, rationals with a
huge common factor) are accepted with the same bracket, so the rejections are not a
reader's blindness to order or size.
"""

from __future__ import annotations

import copy
import itertools
import json
import time
from fractions import Fraction as F
from pathlib import Path

import pytest

from dpverify.checker import check_certificate
from dpverify.spec import load, loads
from dpverify.verifiers.certifiers import certify_agent, dump_certificate

ORBITS = ('[problem]\nname = "o"\nparties = 9\nlambda = ["2", "2", "2", "2", "2", "3", "3", '
          '"3", "3"]\n[observer]\nfunction = "majority"\n[[party]]\nindex = 1\n'
          'function = "majority"\n')
BITS = '[problem]\nname = "b"\nparties = 3\nepsilon = [0.5, 0.7, 1.5]\n[[party]]\nindex = 2\n' \
       'function = "majority"\n'
DATA = Path(__file__).parent / "data"
PROBLEMS = Path(__file__).parent.parent / "problems"
DELTA = '[problem]\nname = "d"\nparties = 2\nlambda = ["3", "2"]\ndelta = ["1/10", "1/5"]\n' \
        '[observer]\nfunction = "xor"\n[[party]]\nindex = 1\nfunction = "and"\n'


@pytest.fixture(scope="module")
def certs() -> dict[str, tuple[object, dict]]:
    """Worst-case certificates (a prior and a rule to tamper with), for a party agent."""
    out = {}
    for name, text in (("orbits", ORBITS), ("bits", BITS), ("envelope", DELTA)):
        spec = loads(text)
        party = next(a for a in spec.agents if a.party)
        out[name] = (spec, json.loads(dump_certificate(certify_agent(spec, party, "worst"))))
    assert out["envelope"][1]["format"] == "dpverify-envelope-certificate/1"
    # the four-ray format is no longer written: a certificate of the version that wrote it
    four_ray = json.loads((DATA / "four-ray" / "and-2-party-delta.party-1.worst.cert.json")
                          .read_text(encoding="utf-8"))
    out["delta"] = (load(PROBLEMS / "approximate" / "and-2-party-delta.toml"), four_ray)
    assert four_ray["format"] == "dpverify-delta-certificate/1"
    assert out["orbits"][1]["format"] == "dpverify-orbit-certificate/1"
    assert out["orbits"][1]["classes"] == [[1], [2, 3, 4, 5], [6, 7, 8, 9]]
    assert out["bits"][1]["upper"]["lambdas"] != out["bits"][1]["lower"]["lambdas"]
    return out


def _grid(classes: list[list[int]]) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(len(c) + 1) for c in classes)))


def reorder_classes(cert: dict, order: list[int], *, vectors: bool) -> dict:
    """The classes listed in `order`, and their lambdas; with `vectors`, every
    orbit-indexed vector (prior, mu, gain, the rule's rows) permuted alike: the same
    certificate. Without, mu and the prior of one class's orbits stand at the other's."""
    out = copy.deepcopy(cert)
    old = cert["classes"]
    out["classes"] = [old[o] for o in order]
    for end in ("upper", "lower"):
        out[end]["lambdas"] = [cert[end]["lambdas"][o] for o in order]
    if not vectors:
        return out
    index = {p: i for i, p in enumerate(_grid(old))}
    source = [index[tuple(q[order.index(c)] for c in range(len(old)))]
              for q in _grid(out["classes"])]

    def permuted(rows: list) -> list:
        return [rows[i] for i in source]

    for key in ("prior", "mu"):
        out["upper"][key] = permuted(out["upper"][key])
    out["gain"] = permuted(out["gain"])
    out["lower"]["decision"] = [permuted(block) for block in out["lower"]["decision"]]
    return out


def scaled(cert: dict, factor: F) -> dict:
    """prior, mu (and nu) and the bound all times `factor`: a dual of another prior mass."""
    out = copy.deepcopy(cert)
    upper = out["upper"]
    upper["prior"] = [str(F(v) * factor) for v in upper["prior"]]
    dual = "mu" if "mu" in upper else "b"  # the envelope format's values on ray products
    upper[dual] = [str(F(v) * factor) for v in upper[dual]]
    for row in upper.get("nu", ()):
        row["value"] = str(F(row["value"]) * factor)
    upper["bound"] = str(F(upper["bound"]) * factor)
    return out


def extra_label(cert: dict) -> dict:
    """One more output, with gain 0 everywhere and never chosen by the rule."""
    out = copy.deepcopy(cert)
    out["outputs"] = out["outputs"] + ["7"]
    out["gain"] = [row + ["0"] for row in out["gain"]]
    out["lower"]["decision"] = [[row + ["0"] for row in block]
                                for block in out["lower"]["decision"]]
    return out


def swapped_parties(cert: dict) -> dict:
    """A party of the lambda-2 class and one of the lambda-3 class trade places."""
    out = copy.deepcopy(cert)
    a, b = out["classes"][1], out["classes"][2]
    a[0], b[0] = b[0], a[0]
    return out


def agent_in_a_class(cert: dict) -> dict:
    out = copy.deepcopy(cert)
    out["classes"] = [[1, 2, 3, 4, 5], [6, 7, 8, 9]]
    return out


def wrong_way(cert: dict) -> dict:
    """The lambda bracket turned round: upper below e^epsilon, lower above."""
    out = copy.deepcopy(cert)
    out["upper"]["lambdas"], out["lower"]["lambdas"] = \
        out["lower"]["lambdas"], out["upper"]["lambdas"]
    return out


def nu_parties_swapped(cert: dict) -> dict:
    out = copy.deepcopy(cert)
    for row in out["upper"]["nu"]:
        row["party"] = 3 - row["party"]
    return out


def nu_others_flipped(cert: dict) -> dict:
    out = copy.deepcopy(cert)
    for row in out["upper"]["nu"]:
        row["others"] = "".join("10"[int(c)] for c in row["others"])
    return out


REJECTED = [
    ("orbits", "classes and lambdas reordered, vectors kept",
     lambda c: reorder_classes(c, [0, 2, 1], vectors=False), "corner inequality fails"),
    ("orbits", "parties of two levels swapped", swapped_parties, "mixes privacy levels"),
    ("orbits", "the agent inside a class", agent_in_a_class, "must be a class of its own"),
    ("orbits", "an extra label", extra_label, "differ from the spec's"),
    ("bits", "an extra label", extra_label, "differ from the spec's"),
    ("delta", "an extra label", extra_label, "differ from the spec's"),
    ("envelope", "an extra label", extra_label, "differ from the spec's"),
    ("orbits", "prior, mu and bound doubled", lambda c: scaled(c, F(2)), "not a distribution"),
    ("bits", "prior, mu and bound halved", lambda c: scaled(c, F(1, 2)), "not a distribution"),
    ("delta", "prior, mu, nu and bound doubled", lambda c: scaled(c, F(2)),
     "not a distribution"),
    ("envelope", "prior, b, nu and bound doubled", lambda c: scaled(c, F(2)),
     "not a distribution"),
    ("bits", "the lambda bracket the wrong way round", wrong_way, "outside the bracket"),
    ("delta", "nu of one party given to the other", nu_parties_swapped,
     "dual feasibility fails"),
    ("delta", "nu at the other parties' bits flipped", nu_others_flipped,
     "dual feasibility fails"),
    ("envelope", "nu of one party given to the other", nu_parties_swapped, "upper.bound"),
]


@pytest.mark.parametrize("fmt, name, mutate, reason", REJECTED,
                         ids=[f"{f}-{n}" for f, n, _, _ in REJECTED])
def test_a_tampered_certificate_is_rejected(certs, fmt, name, mutate, reason):
    spec, cert = certs[fmt]
    assert check_certificate(spec, cert).ok  # the certificate as written checks
    result = check_certificate(spec, mutate(cert))
    assert not result.ok and reason in result.message, (name, result.message)


def test_rewritings_that_keep_the_claim_are_accepted_with_the_same_bracket(certs):
    """The controls: what the checker accepts is what is claimed, not the layout."""
    spec, cert = certs["orbits"]
    base = check_certificate(spec, cert)
    for order in ([0, 2, 1], [2, 1, 0], [1, 0, 2]):
        again = check_certificate(spec, reorder_classes(cert, order, vectors=True))
        assert again.ok and again.bracket == base.bracket, (order, again.message)
    inside = copy.deepcopy(cert)
    inside["classes"] = [list(reversed(c)) for c in cert["classes"]]
    assert check_certificate(spec, inside).bracket == base.bracket


def test_huge_rationals_are_exact_and_quick(certs):
    """Every mu written with a common factor of 3,000 digits: the same value, accepted at
    once; one of them raised by 10^-3000, the bound kept: rejected."""
    factor = 10 ** 3000
    for fmt in ("orbits", "bits", "delta", "envelope"):
        spec, cert = certs[fmt]
        dual = "mu" if "mu" in cert["upper"] else "b"
        big = copy.deepcopy(cert)
        big["upper"][dual] = [f"{F(v).numerator * factor}/{F(v).denominator * factor}"
                              for v in cert["upper"][dual]]
        start = time.perf_counter()
        result = check_certificate(spec, big)
        assert result.ok and result.bracket == check_certificate(spec, cert).bracket, fmt
        assert time.perf_counter() - start < 10
        raised = copy.deepcopy(cert)
        mu = F(raised["upper"][dual][0]) + F(1, factor)
        raised["upper"][dual][0] = f"{mu.numerator}/{mu.denominator}"
        assert "upper.bound" in check_certificate(spec, raised).message, fmt


def test_a_bracket_message_writes_e_to_a_fraction_with_parentheses(certs):
    """`e^7/10` read as e^7 divided by 10: the exponent of a fractional epsilon is
    parenthesised (an integer one is not)."""
    spec, cert = certs["bits"]
    message = check_certificate(spec, wrong_way(cert)).message
    assert "is not <= e^(1/2)" in message, message
    low = copy.deepcopy(cert)
    low["upper"]["lambdas"][1] = "1"
    message = check_certificate(spec, low).message
    assert "is not >= e^(" in message and "/" in message.split("e^(")[1], message
