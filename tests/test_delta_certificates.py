"""Certificates of the envelope bound under (epsilon, delta)-DP (issue 27;
`dpverify-envelope-certificate/1`, docs/format.md; the checker dpverify/checker/envelope.py,
docs/theory.md section 7.10), and the four-ray bound's of earlier versions
(`dpverify-delta-certificate/1`, checker/delta.py), which stay readable.

The shipped delta problems certify and check (xor-2-delta a bracket between
RR(epsilon, delta)'s closed form and the interactive protocol's, bit-1-delta and
and-2-party-delta proved optimal); `certify` and `check-cert` exit statuses; every
mutation of a certificate is rejected with its reason (negative controls of each check,
the chords included); a delta certificate fails against a pure problem and a pure one
against a delta problem; the answers do not depend on the order of the certificates or the
process; and `verify --certify` reports the checked certificate as the result's `proof`.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from fractions import Fraction as F
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify.checker import (
    DELTA_FORMAT,
    ENVELOPE_FORMAT,
    FORMAT,
    check_certificate,
    read_certificate,
)
from dpverify.cli import main
from dpverify.reasons import ReasonCode
from dpverify.spec import load, loads
from dpverify.status import ExitStatus
from dpverify.verifiers.certifiers import certify_agent, dump_certificate
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.options import VerifyOptions

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "problems" / "approximate"
XOR = SHIPPED / "xor-2-delta.toml"
BIT = SHIPPED / "bit-1-delta.toml"
AND = SHIPPED / "and-2-party-delta.toml"
FOUR_RAY = Path(__file__).parent / "data" / "four-ray"  # written by the version before

D = 0.1
P = math.e / (1 + math.e)
INTERACTIVE = D + (1 - D) * (P * P + (1 - P) ** 2)  # docs/theory.md 7.5: the bound
NONINTERACTIVE = (D + (1 - D) * P) ** 2 + ((1 - D) * (1 - P)) ** 2  # c^2 + w^2


def _certs(path: Path) -> dict[tuple[str, str], dict]:
    spec = load(path)
    return {(a.name, acc.value): certify_agent(spec, a, acc)
            for a in spec.agents for acc in spec.accuracies}


@pytest.fixture(scope="module")
def xor_certs() -> dict[tuple[str, str], dict]:
    return _certs(XOR)


@pytest.fixture(scope="module")
def bit_certs() -> dict[tuple[str, str], dict]:
    return _certs(BIT)


def test_xor_2_delta_is_a_bracket_between_rr_and_the_interactive_protocol(xor_certs):
    spec = load(XOR)
    for accuracy in ("average", "worst"):
        cert = xor_certs[("observer", accuracy)]
        assert cert["format"] == ENVELOPE_FORMAT and cert["deltas"] == ["1/10", "1/10"]
        assert len(cert["upper"]["b"]) == 4 ** 2 and "mu" not in cert["upper"]
        assert cert["status"] == "bracket"
        bound, value = F(cert["upper"]["bound"]), F(cert["lower"]["value"])
        assert float(bound) == pytest.approx(INTERACTIVE, abs=1e-12)
        assert float(value) == pytest.approx(NONINTERACTIVE, abs=1e-12)
        assert len(cert["upper"]["nu"]) == 2 * 2 * 2  # parties x directions x x_-i
        assert len(cert["lower"]["decision"]) == 4 ** 2  # RR(epsilon, delta)'s transcripts
        result = check_certificate(spec, cert)
        assert result.ok, result.message
        assert result.bracket == (value, bound)


def test_one_party_and_and_are_proved_optimal(bit_certs):
    spec = load(BIT)
    expected = {("observer", "average"): F(31, 40), ("observer", "worst"): F(31, 40),
                ("party:1", "average"): F(1), ("party:1", "worst"): F(1)}
    for key, value in expected.items():
        cert = bit_certs[key]
        assert cert["status"] == "proved-optimal", key
        assert F(cert["upper"]["bound"]) == F(cert["lower"]["value"]) == value
        result = check_certificate(spec, cert)
        assert result.ok and result.value == value, (key, result.message)
    and_spec = load(AND)
    for key, cert in _certs(AND).items():
        result = check_certificate(and_spec, cert)
        assert result.ok and cert["status"] == "proved-optimal", (key, result.message)


# -- negative controls: each mutation is rejected by the check it exercises ---------------


def _mutated(cert: dict, change) -> dict:
    out = copy.deepcopy(cert)
    change(out)
    return out


def _positive_nu(cert: dict) -> int:
    return next(j for j, row in enumerate(cert["upper"]["nu"]) if F(row["value"]) > 0)


def _lower_nu(cert: dict) -> None:
    """A positive nu lowered, and the bound lowered with it (so that the bound's sum still
    holds): only dual feasibility can catch it."""
    j = _positive_nu(cert)
    nu = F(cert["upper"]["nu"][j]["value"])
    cert["upper"]["nu"][j]["value"] = str(nu / 2)
    cert["upper"]["bound"] = str(F(cert["upper"]["bound"]) - nu / 2 * F(1, 10))


CORNERS = (0, 1, 4, 5)  # the products of corners of two parties' four rays


def _drop_nu(cert: dict) -> None:
    """Every nu 0 and the bound the sum of b at the corners: the delta rows are what pays
    for the reveals."""
    for row in cert["upper"]["nu"]:
        row["value"] = "0"
    cert["upper"]["bound"] = str(sum(F(cert["upper"]["b"][s]) for s in CORNERS))


def _shift_b(cert: dict) -> None:
    """b down by 1 at (c0, c0), up by 1 at (c1, c1): the same bound, but (E1) fails."""
    b = cert["upper"]["b"]
    b[0], b[5] = str(F(b[0]) - 1), str(F(b[5]) + 1)


def _bend_b(cert: dict) -> None:
    """b up by 10 wherever party 1 has revealed 0: (E1) and the bound still hold, a chord
    from party 1's corner 0 does not."""
    b = cert["upper"]["b"]
    for s in range(len(b)):
        if s // 4 == 2:
            b[s] = str(F(b[s]) + 10)


def _set(path: tuple, value):
    def change(cert: dict) -> None:
        obj = cert
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value(obj[path[-1]])
    return change


MUTATIONS = {
    "nu lowered": (_lower_nu, "(E1) fails at the product of rays"),
    "nu dropped": (_drop_nu, "(E1) fails"),
    "nu negative": (_set(("upper", "nu", 0, "value"), lambda v: "-1/100"), "is negative"),
    "nu row twice": (lambda c: c["upper"]["nu"].__setitem__(1, dict(c["upper"]["nu"][0])),
                     "is given twice"),
    "nu row missing": (lambda c: c["upper"]["nu"].pop(), "rows, not 8"),
    "b changed": (_shift_b, "(E1) fails"),
    "b bent": (_bend_b, "(E2) fails"),
    "bound lowered": (_set(("upper", "bound"), lambda v: str(F(v) - F(1, 10**9))),
                      "but the sum of b over the products of corners + sum(nu delta)"),
    "delta changed": (_set(("deltas", 1), lambda v: "1/20"), "differ from the spec's"),
    "upper lambda below e^eps": (_set(("upper", "lambdas", 0), lambda v: "2"),
                                 "is not >= e^1"),
    "lower lambda above e^eps": (_set(("lower", "lambdas", 1), lambda v: "3"),
                                 "is not <= e^1"),
    "gain changed": (_set(("gain", 0, 0), lambda v: "2"), "but the spec gives"),
    "lower value raised": (_set(("lower", "value"), lambda v: str(F(v) + F(1, 10**9))),
                           "lower.value"),
    "decision not a distribution": (_set(("lower", "decision", 5, 0), lambda v: "2"),
                                    "is not a distribution"),
    "status proved-optimal on a bracket": (_set(("status",), lambda v: "proved-optimal"),
                                           "needs the exact lambdas"),
    "prior not uniform": (_set(("upper", "prior"), lambda v: ["1/2", "1/2", "0", "0"]),
                          "must be uniform"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_every_mutation_is_rejected_with_its_reason(xor_certs, name):
    change, reason = MUTATIONS[name]
    spec = load(XOR)
    cert = xor_certs[("observer", "average")]
    assert check_certificate(spec, cert).ok  # the unmutated certificate checks
    result = check_certificate(spec, _mutated(cert, change))
    assert not result.ok and reason in result.message, (name, result.message)


def test_mutations_of_a_proved_certificate_at_an_exact_lambda(bit_certs):
    """At lambda = 3 (exact): a lambda changed names the spec's; the bound lowered with the
    value (both still equal) fails dual feasibility; the worst case's prior is checked."""
    spec = load(BIT)
    cert = bit_certs[("observer", "average")]
    got = check_certificate(spec, _mutated(cert, _set(("upper", "lambdas", 0),
                                                      lambda v: "4")))
    assert not got.ok and "the spec's lambda is 3" in got.message
    got = check_certificate(spec, _mutated(cert, _lower_nu))
    assert not got.ok and "(E1) fails" in got.message, got.message
    worst = bit_certs[("observer", "worst")]
    got = check_certificate(spec, _mutated(worst, _set(("upper", "prior"),
                                                       lambda v: ["1/2", "1/3"])))
    assert not got.ok and "not a distribution" in got.message
    party = bit_certs[("party:1", "average")]
    got = check_certificate(spec, _mutated(party, _set(("lower", "value"),
                                                       lambda v: "2")))
    assert not got.ok and "lower.value = 2" in got.message


def test_a_delta_certificate_fails_against_a_pure_problem(xor_certs):
    """The same problem without delta: the deltas differ (a proof of another problem)."""
    pure = loads(XOR.read_text(encoding="utf-8").replace('delta = "1/10"\n', ""),
                 source="pure.toml")
    got = check_certificate(pure, xor_certs[("observer", "average")])
    assert not got.ok and "differ from the spec's" in got.message
    # and a pure certificate against the delta problem, the other way round
    pure_cert = certify_agent(pure, pure.agents[0], "average")
    assert pure_cert["format"] == FORMAT
    got = check_certificate(load(XOR), pure_cert)
    assert not got.ok and "delta > 0" in got.message


def test_a_delta_certificate_of_a_mixed_problem_leaves_out_the_pure_party(tmp_path):
    """delta = [1/10, 0]: party 2 keeps its two corners (no reveal rays, no nu rows); a nu
    row for it is refused."""
    spec = loads(XOR.read_text(encoding="utf-8").replace('delta = "1/10"',
                                                         'delta = ["1/10", 0]'))
    cert = certify_agent(spec, spec.agents[0], "average")
    assert {row["party"] for row in cert["upper"]["nu"]} == {1}
    assert check_certificate(spec, cert).ok
    extra = _mutated(cert, lambda c: c["upper"]["nu"].append(
        {"party": 2, "direction": "0->1", "others": "0", "value": "0"}))
    got = check_certificate(spec, extra)
    assert not got.ok and "no hockey-stick row for party 2" in got.message


def test_four_ray_certificates_of_the_version_before_stay_readable():
    """The four-ray certificates `certify` wrote before the envelope bound still check, and
    a mutation of one is still caught (its mu moved: the same sum, a product fails)."""
    cases = {"xor-2-delta.observer.average.cert.json": XOR,
             "and-2-party-delta.party-1.worst.cert.json": AND,
             "bit-1-delta.observer.average.cert.json": BIT}
    for name, problem_path in cases.items():
        cert = read_certificate((FOUR_RAY / name).read_text(encoding="utf-8"))
        assert cert["format"] == DELTA_FORMAT
        spec = load(problem_path)
        assert check_certificate(spec, cert).ok, name
        moved = copy.deepcopy(cert)
        mu = moved["upper"]["mu"]
        mu[0], mu[-1] = str(F(mu[0]) - 1), str(F(mu[-1]) + 1)
        got = check_certificate(spec, moved)
        assert not got.ok and "dual feasibility fails" in got.message, name


def test_the_envelope_bound_is_below_the_four_ray_bound_it_replaces():
    """xor-2-delta's bound is the same (interaction reaches the four-ray bound there);
    the and-2-party-delta one too (RR is optimal); both certificates check."""
    for name, problem_path in (("xor-2-delta.observer.average.cert.json", XOR),
                               ("and-2-party-delta.party-1.worst.cert.json", AND)):
        old = read_certificate((FOUR_RAY / name).read_text(encoding="utf-8"))
        spec = load(problem_path)
        agent = next(a for a in spec.agents if a.name == old["agent"])
        new = certify_agent(spec, agent, old["accuracy"])
        assert F(new["upper"]["bound"]) <= F(old["upper"]["bound"]) + F(1, 10**12)


# -- the command line -----------------------------------------------------------------------


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_certify_and_check_cert_exit_statuses(tmp_path):
    out = tmp_path / "certs"
    got = run("certify", str(XOR), str(BIT), "-o", str(out), "--json")
    assert got.exit_code == ExitStatus.OK, got.output
    records = json.loads(got.stdout)
    assert {r["status"] for r in records} == {"bracket", "proved-optimal"}
    files = sorted(out.glob("*.cert.json"))
    assert [p.name for p in files if p.name.startswith("xor")] == [
        "xor-2-delta.observer.average.cert.json", "xor-2-delta.observer.worst.cert.json"]
    xor_files = [str(p) for p in files if p.name.startswith("xor")]
    assert run("check-cert", str(XOR), *xor_files).exit_code == ExitStatus.OK
    cert = read_certificate(Path(xor_files[0]).read_text(encoding="utf-8"))
    bad = tmp_path / "bad.cert.json"
    bad.write_text(dump_certificate(_mutated(cert, _shift_b)), encoding="utf-8")
    got = run("check-cert", str(XOR), xor_files[0], str(bad))
    assert got.exit_code == ExitStatus.FAILED and "FAIL" in got.output
    junk = tmp_path / "junk.cert.json"
    junk.write_text(json.dumps(_mutated(cert, lambda c: c["upper"].pop("nu"))),
                    encoding="utf-8")
    got = run("check-cert", str(XOR), str(junk))
    assert got.exit_code == ExitStatus.BAD_INPUT and "upper.nu" in got.output


def test_certify_refuses_beyond_the_size_guard_with_the_limit_named(tmp_path):
    got = run("certify", str(XOR), "-o", str(tmp_path), "--max-nonzeros", "50")
    assert got.exit_code == ExitStatus.UNDECIDED
    assert "--max-nonzeros" in got.output and "50" in got.output


def test_verify_certify_reports_the_checked_certificate(tmp_path):
    options = VerifyOptions(certify=True, witness_dir=str(tmp_path))
    result = verify_spec(load(BIT), options)
    for r in result.results:
        assert r.proof is not None and r.proof.status == "proved-optimal", r.reason
        assert r.to_json()["proof"]["value"] in ("31/40", "1")
    result = verify_spec(load(XOR), options)
    for r in result.results:
        assert r.proof.status == "bracket" and r.proof.bracket.checked
        assert r.proof.width == pytest.approx(INTERACTIVE - NONINTERACTIVE, abs=1e-12)
    plain = verify_spec(load(XOR), VerifyOptions(witness_dir=str(tmp_path)))
    assert all(r.proof is None and "proof" not in r.to_json() for r in plain.results)


def test_a_certificate_the_checker_rejects_makes_the_verdict_an_error(tmp_path, monkeypatch):
    """Negative control of verify --certify: if the independent checker rejects the
    certificate (here: forced), the verdict is `error`, never optimal."""
    import dpverify.checker as checker
    from dpverify.checker import CheckResult

    monkeypatch.setitem(checker.CHECKERS, ENVELOPE_FORMAT,
                        lambda spec, cert: CheckResult(False, "forced"))
    result = verify_spec(load(BIT), VerifyOptions(certify=True, witness_dir=str(tmp_path)))
    for r in result.results:
        assert r.verdict.value == "error" and r.code is ReasonCode.CHECK_FAILED


# -- no state between certificates ----------------------------------------------------------


CHECK = """
import json, sys
from dpverify.checker import check_certificate, read_certificate
from dpverify.spec import load
spec = load(sys.argv[1])
for path in sys.argv[2:]:
    result = check_certificate(spec, read_certificate(open(path, encoding="utf-8").read()))
    print(json.dumps([path, result.ok, result.message]))
"""


def test_the_answers_do_not_depend_on_the_order_or_the_process(tmp_path, xor_certs):
    good = tmp_path / "good.cert.json"
    good.write_text(dump_certificate(xor_certs[("observer", "worst")]), encoding="utf-8")
    bad = tmp_path / "bad.cert.json"
    bad.write_text(dump_certificate(_mutated(xor_certs[("observer", "worst")], _lower_nu)),
                   encoding="utf-8")
    spec = load(XOR)

    def answers(paths) -> dict:
        out = {}
        for path in paths:
            r = check_certificate(spec, read_certificate(path.read_text(encoding="utf-8")))
            out[str(path)] = [r.ok, r.message]
        return out

    forward, backward = answers([good, bad]), answers([bad, good])
    assert forward == backward and forward[str(good)][0] and not forward[str(bad)][0]
    env_root = str(ROOT)
    fresh = {}
    for paths in ([good, bad], [bad, good], [good], [bad]):
        done = subprocess.run([sys.executable, "-c", CHECK, str(XOR), *map(str, paths)],
                              capture_output=True, text=True, check=True,
                              env={"PYTHONPATH": env_root, "PATH": "/usr/bin:/bin"})
        for line in done.stdout.splitlines():
            path, ok, message = json.loads(line)
            assert fresh.setdefault(path, [ok, message]) == [ok, message]
    assert fresh == forward


def test_certify_notes_that_method_does_not_apply_to_delta(tmp_path):
    """--method chooses among the pure routes; a delta > 0 problem has one certificate,
    the four-ray one: a note says so (and none without --method, the control)."""
    from click.testing import CliRunner

    from dpverify.cli import main

    path = Path(__file__).resolve().parents[1] / "problems" / "approximate" / "bit-1-delta.toml"
    res = CliRunner().invoke(main, ["certify", str(path), "-o", str(tmp_path), "-q",
                                    "--method", "orbit"])
    assert res.exit_code == 0, res.output
    assert "--method does not apply to delta > 0" in res.stderr
    res = CliRunner().invoke(main, ["certify", str(path), "-o", str(tmp_path), "-q"])
    assert res.exit_code == 0 and "does not apply" not in res.stderr
