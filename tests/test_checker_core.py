"""The one checking core (dpverify/checker/core.py, issue 24 point 5): every certificate
format goes through its routines, and mutations of every format are rejected by the check
they exercise (negative controls); bad JSON is bad input, never an internal error.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from fractions import Fraction as F
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify.checker import (
    CHECKERS,
    CertificateFormatError,
    CheckFailed,
    check_certificate,
    core,
    factors,
    read_certificate,
)
from dpverify.cli import main
from dpverify.spec import loads
from dpverify.spec.model import Accuracy
from dpverify.status import ExitStatus
from dpverify.verifiers.certifiers import certify_agent, dump_certificate
from dpverify.verifiers.multiparty.all_inputs import all_inputs_interval_certificate
from dpverify.verifiers.multiparty.orbit import orbit_interval_certificate
from dpverify.verifiers.options import VerifyOptions

BITS = '[problem]\nname = "b"\nparties = 3\nepsilon = [0.5, 1, 1.5]\n[[party]]\nindex = 2\n' \
       'function = "majority"\n'
ORBITS = '[problem]\nname = "o"\nparties = 17\nlambda = "2"\n[observer]\nfunction = "majority"\n'
SYMBOLS = '[problem]\nname = "m"\nparties = 2\nlambda = "3"\nalphabet = 3\n[observer]\n' \
          'function = "max"\n'
DELTA = '[problem]\nname = "d"\nparties = 2\nlambda = "3"\ndelta = "1/10"\n[observer]\n' \
        'function = "xor"\n'


# the four-ray bound's certificates are no longer written (certify writes the envelope
# bound's); one written by the version before, of the problem DELTA, stays readable
FOUR_RAY = Path(__file__).parent / "data" / "four-ray" / "d.observer.worst.cert.json"


def _json(cert: dict) -> dict:
    return json.loads(dump_certificate(cert))


@pytest.fixture(scope="module")
def certificates() -> dict[str, tuple[object, dict]]:
    """One certificate of each format, worst case (a prior and a rule to mutate)."""
    options = VerifyOptions()
    specs = {name: loads(text) for name, text in
             (("bits", BITS), ("orbits", ORBITS), ("symbols", SYMBOLS), ("delta", DELTA))}
    out = {name: (spec, _json(certify_agent(spec, spec.agents[0], "worst")))
           for name, spec in specs.items()}
    out["envelope"] = out.pop("delta")
    out["delta"] = (specs["delta"], read_certificate(FOUR_RAY.read_text(encoding="utf-8")))
    bits, orbits = specs["bits"], specs["orbits"]
    out["interval"] = (bits, _json(all_inputs_interval_certificate(
        bits, bits.agents[0], Accuracy.WORST, options).to_json("b")))
    out["orbit-interval"] = (orbits, _json(orbit_interval_certificate(
        orbits, orbits.agents[0], Accuracy.WORST, options).to_json("o")))
    assert sorted(c["format"] for _, c in out.values()) == sorted(CHECKERS)
    return out


EXACT = ("bits", "orbits", "symbols", "delta", "envelope")
ALL = EXACT + ("interval", "orbit-interval")
WITH_MU = ("bits", "orbits", "symbols", "delta")  # the envelope has b per product instead


# ------------------------------------------------------------------ one core


def test_every_format_goes_through_the_one_core(certificates, monkeypatch):
    """The inequality routine (core.check_dual), the accuracy routine (core.accuracy), the
    best labels (core.best_scores) and the one transform (factors.transform) are what
    each format's reader calls."""
    calls: Counter[str] = Counter()
    for module, name in ((core, "check_dual"), (core, "accuracy"), (core, "best_scores"),
                         (factors, "transform")):
        real = getattr(module, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    for fmt, (spec, cert) in certificates.items():
        calls.clear()
        assert check_certificate(spec, cert).ok, fmt
        used = {name for name, n in calls.items() if n}
        if fmt in EXACT:
            assert used == {"check_dual", "accuracy", "best_scores", "transform"}, fmt
            assert calls["check_dual"] == 1 and calls["accuracy"] == 1, fmt
        else:  # the bound from the best labels of the same right-hand sides
            assert "best_scores" in used and "check_dual" not in used, fmt
            assert ("transform" in used) == (fmt == "orbit-interval"), fmt


def test_the_core_decides(certificates, monkeypatch):
    """Negative control of the test above: with the inequality routine failing every
    certificate, every exact format fails; with the best labels' scores doubled, both
    interval formats' bounds no longer hold."""
    def refuse(dual, describe):
        raise CheckFailed("forced by the test")

    with monkeypatch.context() as patch:
        patch.setattr(core, "check_dual", refuse)
        for fmt in EXACT:
            spec, cert = certificates[fmt]
            result = check_certificate(spec, cert)
            assert not result.ok and result.message == "forced by the test", fmt
    real = core.best_scores
    monkeypatch.setattr(core, "best_scores",
                        lambda scores, best: [[2 * v for v in part] for part in
                                              real(scores, best)])
    for fmt in ("interval", "orbit-interval"):
        spec, cert = certificates[fmt]
        result = check_certificate(spec, cert)
        assert not result.ok and "below the prior's bound" in result.message, fmt


# ------------------------------------------------------------------ mutations


def _shift_mu(cert: dict) -> None:
    """mu moved between the first and the last point (one input each): the same bound."""
    mu = cert["upper"]["mu"]
    mu[0], mu[-1] = str(F(mu[0]) - 1), str(F(mu[-1]) + 1)


def _shift_b(cert: dict) -> None:
    """b moved between the first and the last product of corners (both count in the bound):
    the same bound."""
    b = cert["upper"]["b"]
    last = 5  # products of two parties' four rays: (c0, c0) = 0, (c1, c1) = 5
    b[0], b[last] = str(F(b[0]) - 1), str(F(b[last]) + 1)


def _bend_b(cert: dict) -> None:
    """b raised at every product where party 1 has revealed 0: (E1) still holds, the bound
    (products of corners only) is the same, and a chord from party 1's corner 0 fails."""
    b = cert["upper"]["b"]
    for s in range(len(b)):
        if s // 4 == 2:
            b[s] = str(F(b[s]) + 10)


def _swap_rule(cert: dict) -> None:
    """The first row of the rule that is no palindrome, reversed (still a distribution):
    the value is another."""
    decision = cert["lower"]["decision"]
    rows = decision if isinstance(decision[0][0], str) else decision[0]
    row = next(r for r in rows if r != r[::-1])
    row.reverse()


def _at(path: tuple, change):
    def mutate(cert: dict) -> None:
        obj = cert
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = change(obj[path[-1]])
    return mutate


LOWER_BOUND = _at(("upper", "bound"), lambda v: str(F(v) - F(1, 10**12)))
RAISE_VALUE = _at(("lower", "value"), lambda v: str(F(v) + F(1, 10**12)))
# (mutation, formats it applies to, what the message says)
MUTATIONS = {
    "bound lowered": (LOWER_BOUND, EXACT, "upper.bound"),
    "bound below the enclosure": (LOWER_BOUND, ("interval", "orbit-interval"),
                                  "below the prior's bound"),
    "value raised": (RAISE_VALUE, EXACT, "lower.value"),
    "value above the enclosure": (RAISE_VALUE, ("interval", "orbit-interval"),
                                  "above the rule's accuracy"),
    "mu moved": (_shift_mu, WITH_MU, "fails"),
    "b moved": (_shift_b, ("envelope",), "(E1) fails"),
    "b bent": (_bend_b, ("envelope",), "(E2) fails"),
    "rule changed": (_swap_rule, EXACT, "lower.value"),
    "upper lambda too small": (_at(("upper", "lambdas", 0), lambda v: "1"),
                               ("bits", "interval"), "is not >= e^"),
    "upper lambda not the spec's": (_at(("upper", "lambdas", 0), lambda v: "5/2"),
                                    ("orbits", "symbols", "delta", "envelope",
                                     "orbit-interval"),
                                    "the spec's lambda is"),
    "gain changed": (_at(("gain", 0, 0), lambda v: str(F(v) + 1)), EXACT, "the spec"),
    "outputs changed": (_at(("outputs",), lambda v: v[::-1]), ALL, "differ from the spec's"),
    "status": (_at(("status",), lambda v: "unproved"), ALL, "status 'unproved'"),
    "another problem": (_at(("problem",), lambda v: "other"), ALL, "problem"),
    "prior not a distribution": (_at(("upper", "prior", 0), lambda v: str(F(v) + 1)),
                                 EXACT + ("interval",), "not a distribution"),
    "masses not a distribution": (_at(("upper", "masses"), lambda v: ["1"] * len(v)
                                      if isinstance(v, list) else ["1"] * 18),
                                  ("orbit-interval",), "not a distribution"),
    "classes no partition": (_at(("classes",), lambda v: [list(range(1, 17))]),
                             ("orbits", "orbit-interval"), "do not partition"),
    "channel not DP": (_at(("lower", "channels", 0, 0), lambda v: ["1"] + ["0"] * (len(v) - 1)),
                       ("symbols",),
                       "not DP"),
    "nu dropped": (_at(("upper", "nu"), lambda v: [dict(r, value="0") for r in v]),
                   ("delta", "envelope"), "upper.bound"),
    "delta changed": (_at(("deltas", 0), lambda v: "1/20"), ("delta", "envelope"),
                      "differ from the spec's"),
}
CASES = [(name, fmt) for name, (_, formats, _) in MUTATIONS.items() for fmt in formats]


@pytest.mark.parametrize("name, fmt", CASES, ids=[f"{f}-{n}" for n, f in CASES])
def test_every_format_rejects_its_mutations(certificates, name, fmt):
    mutate, _, reason = MUTATIONS[name]
    spec, cert = certificates[fmt]
    assert check_certificate(spec, cert).ok  # the unmutated certificate checks
    bad = copy.deepcopy(cert)
    mutate(bad)
    try:
        result = check_certificate(spec, bad)
    except CertificateFormatError as exc:  # refused as bad input is refused too
        pytest.fail(f"{fmt}, {name}: not a certificate ({exc}), not the check")
    assert not result.ok and reason in result.message, (fmt, name, result.message)


def test_mu_moved_fails_the_inequality_itself(certificates):
    """The mu shift keeps every bound's sum: only the inequality (C) catches it."""
    for fmt in WITH_MU:
        spec, cert = certificates[fmt]
        bad = copy.deepcopy(cert)
        _shift_mu(bad)
        message = check_certificate(spec, bad).message
        assert "inequality fails" in message or "feasibility fails" in message, (fmt, message)


# ------------------------------------------------------------------ bad JSON


def test_json_nested_too_deeply_is_not_a_certificate(tmp_path):
    """Issue 25: check-cert on deeply nested JSON raised RecursionError (exit 4); it is bad
    input (exit 2) with one short line. JSON just shallow enough to parse is refused by
    the checker as malformed."""
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(CertificateFormatError, match="nested too deeply"):
        read_certificate(deep)
    problem = tmp_path / "b.toml"
    problem.write_text(BITS, encoding="utf-8")
    path = tmp_path / "deep.cert.json"
    path.write_text(deep, encoding="utf-8")
    out = CliRunner().invoke(main, ["check-cert", str(problem), str(path)])
    assert out.exit_code == ExitStatus.BAD_INPUT, out.output
    assert len(out.output.strip().splitlines()) == 1 and len(out.output) < 200, out.output
    assert "nested too deeply" in out.output
    shallow = "[" * 900 + "]" * 900
    nested = {"format": "dpverify-certificate/1", "problem": "b", "agent": "party:2",
              "accuracy": "worst", "outputs": json.loads(shallow)}
    with pytest.raises(CertificateFormatError):
        check_certificate(loads(BITS), nested)
