"""`verify` with delta > 0 end to end (issue 20): the approximate route of
verifiers/dispatch.py, its table and JSON (spec.md, "Approximate privacy"), witness files
under --witness-dir that `audit` confirms, exit statuses, `[expect]` verdicts and `check`,
the refusals (more than two symbols, falsify), certify's size guard, and delta = 0 unchanged."""

from __future__ import annotations

import json
import math
import shutil
from fractions import Fraction as F
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.errors import SpecError
from dpverify.spec import load, loads
from dpverify.status import ExitStatus, verdict_status
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import Verdict, worst_verdict

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "problems" / "approximate"
XOR = """\
[problem]
name = "xor-2-delta"
parties = 2
epsilon = 1
delta = "1/10"
[observer]
function = "xor"
"""
D = 0.1
P = math.e / (1 + math.e)
INTERACTIVE = D + (1 - D) * (P * P + (1 - P) ** 2)  # issue 20's protocol (docs/theory.md)
NONINTERACTIVE = (D + (1 - D) * P) ** 2 + ((1 - D) * (1 - P)) ** 2  # c^2 + w^2


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_xor_through_the_cli_and_audit_of_its_witness(write_toml, tmp_path):
    """Issue 20's "Done when": two-party XOR at (1, 1/10) prints the bound, the best
    non-interactive value and the best interactive protocol, verdict interaction-helps
    (exit 1); `audit` confirms the witness file private at (1, 1/10) for both parties."""
    path = write_toml(XOR, "xor")
    witnesses = tmp_path / "w"
    shown = run("verify", str(path), "--witness-dir", str(witnesses))
    assert shown.exit_code == ExitStatus.FAILED, shown.output
    assert "interaction-helps" in shown.output and "envelope" in shown.output
    for value in (INTERACTIVE, NONINTERACTIVE):
        assert f"{value:.9f}"[:10] in shown.output
    got = run("verify", str(path), "--witness-dir", str(witnesses), "--json")
    assert got.exit_code == ExitStatus.FAILED
    data = json.loads(got.output)[0]
    assert data["verdict"] == "interaction-helps" and data["delta"] == ["1/10", "1/10"]
    for r in data["results"]:
        assert r["delta"] == ["1/10", "1/10"] and r["method"] == "envelope"
        assert r["rr_value"] == pytest.approx(NONINTERACTIVE, abs=1e-12)
        assert r["best_value"] == pytest.approx(INTERACTIVE, abs=1e-9)
        assert r["relaxed_optimum"] >= r["best_value"] > r["rr_value"] + 0.01
        assert r["relaxed_optimum"] == pytest.approx(INTERACTIVE, abs=1e-9)
        assert r["gap"] == pytest.approx(r["relaxed_optimum"] - r["rr_value"])
        witness = Path(r["witness"])
        assert witness.parent.resolve() == witnesses.resolve() and witness.is_file()
        audited = run("audit", str(witness), "--json")
        assert audited.exit_code == ExitStatus.FAILED, audited.output  # as verify's
        header = json.loads(audited.output)[0]
        assert header["private"] is True and header["private_by_party"] == [True, True]
        assert header["claimed_deltas"] == ["1/10", "1/10"]
        for got_delta in header["achieved_deltas"]:  # epsilon claims: exact brackets
            ends = got_delta if isinstance(got_delta, list) else [got_delta]
            assert all(F(v) <= F(1, 10) if isinstance(v, str) else v <= 0.1 for v in ends)
        (result,) = header["results"]
        # the verdict of verify: the witness beats RR(epsilon, delta) (and reaches the bound)
        assert result["verdict"] == "interaction-helps" == r["verdict"]
        assert "reaches the bound" in result["reason"]
        assert result["protocol_value"] == pytest.approx(r["best_value"], abs=1e-12)
        assert result["advantage"] == pytest.approx(r["advantage"], abs=1e-12)


def test_the_table_shows_the_numbers_and_the_witness(write_toml, tmp_path):
    path = write_toml(XOR, "xor")
    out = run("verify", str(path), "--witness-dir", str(tmp_path / "w")).output
    for column in ("bound", "RR(epsilon, delta)", "best found", "advantage", "verdict",
                   "method"):
        assert column in out
    assert " gap " not in out  # the bound minus RR is room, not an advantage shown
    assert "delta = 1/10" in out and "dpverify audit" in out
    assert "1 interaction-helps" in out  # the summary line counts it


def test_rr_optimal_exits_0_and_writes_no_witness(tmp_path):
    witnesses = tmp_path / "w"
    got = run("verify", str(SHIPPED / "bit-1-delta.toml"), "--witness-dir", str(witnesses),
              "--json")
    assert got.exit_code == ExitStatus.OK, got.output
    data = json.loads(got.output)[0]
    assert data["verdict"] == "optimal"
    values = {(r["agent"], r["accuracy"]): r for r in data["results"]}
    assert values[("observer", "average")]["relaxed_optimum"] == 31 / 40
    assert values[("observer", "average")]["relaxed_optimum_exact"] == "31/40"
    assert all(r["witness"] is None for r in data["results"])
    assert not witnesses.exists() or not any(witnesses.iterdir())


def test_open_is_undecided_and_interaction_helps_a_finding():
    """The exit statuses of the new verdicts, and where interaction-helps ranks."""
    assert verdict_status(["interaction-helps"]) == ExitStatus.FAILED
    assert verdict_status(["interaction-helps", "open"]) == ExitStatus.UNDECIDED
    assert verdict_status(["optimal", "interaction-helps"]) == ExitStatus.FAILED
    assert worst_verdict([Verdict.GAP, Verdict.INTERACTION_HELPS]) is Verdict.INTERACTION_HELPS
    assert worst_verdict([Verdict.INTERACTION_HELPS, Verdict.OPEN]) is Verdict.OPEN


def test_a_witness_stays_in_its_directory_whatever_the_name(write_toml, tmp_path):
    path = write_toml(XOR.replace('"xor-2-delta"', '"../../escape/x"'), "xor")
    witnesses = tmp_path / "deep" / "w"
    spec = load(path)
    result = verify_spec(spec, VerifyOptions(witness_dir=str(witnesses), restarts=0))
    paths = [Path(r.witness) for r in result.results if r.witness]
    assert paths and all(p.parent.resolve() == witnesses.resolve() for p in paths)
    assert not (tmp_path / "escape").exists()


def test_more_than_two_symbols_with_delta_is_refused(write_toml):
    path = write_toml('[problem]\nparties = 2\nalphabet = 3\nepsilon = 1\ndelta = 0.1\n'
                      '[observer]\nfunction = "max"\n', "m")
    got = run("verify", str(path))
    assert got.exit_code == ExitStatus.UNDECIDED
    assert "approximate privacy (delta > 0)" in got.output and "bits only" in got.output
    # the control: delta = 0 verifies (the ray-product method)
    path0 = write_toml('[problem]\nparties = 1\nalphabet = 3\nepsilon = 1\ndelta = 0\n'
                       '[observer]\nfunction = "bit:1"\n', "m0")
    assert run("verify", str(path0), "--witness-dir", str(path0.parent / "w")).exit_code == 0


@pytest.mark.parametrize("body", [
    '[observer]\nfunction = "majority"\n[[party]]\nindex = 2\nfunction = "and"\n',
    '[observer]\nfunction = "sum"\ngain = "-abs"\n'])
def test_delta_zero_is_todays_result(body):
    """`delta = 0` takes today's route: every number equals the file without the key."""
    text = f'[problem]\nname = "p"\nparties = 3\nepsilon = 0.7\n{body}'
    with_key = text.replace("epsilon = 0.7\n", 'epsilon = 0.7\ndelta = "0"\n')
    a = verify_spec(loads(text, source="<a>"), VerifyOptions()).to_dict()
    b = verify_spec(loads(with_key, source="<a>"), VerifyOptions()).to_dict()
    for r in a["results"] + b["results"]:
        r.pop("seconds")
    assert a == b and "delta" not in a


def test_expect_accepts_interaction_helps_and_check_holds(tmp_path):
    """`[expect]` may say `verdict = "interaction-helps"` (spec/sections.py), and `check`
    compares the bound; a wrong value is a mismatch (the negative control)."""
    folder = tmp_path / "p"
    folder.mkdir()
    shutil.copy(SHIPPED / "xor-2-delta.toml", folder)
    spec = load(folder / "xor-2-delta.toml")
    assert {e.verdict for e in spec.expect} == {"interaction-helps"}
    store = tmp_path / "s.db"
    ok = run("check", str(folder), "--store", str(store), "--witness-dir",
             str(tmp_path / "w"))
    assert ok.exit_code == 0, ok.output
    text = (folder / "xor-2-delta.toml").read_text().replace(
        "average = 0.6460985201653328", "average = 0.6")
    (folder / "xor-2-delta.toml").write_text(text)
    bad = run("check", str(folder), "--store", str(store), "--witness-dir",
              str(tmp_path / "w"))
    assert bad.exit_code == ExitStatus.FAILED, bad.output


def test_an_unknown_expected_verdict_is_still_refused(load_toml):
    with pytest.raises(SpecError, match="verdict"):
        load_toml(XOR + '[expect.observer]\naverage = 0.6\nverdict = "helps"\n')


def test_certify_writes_delta_certificates_and_falsify_refuses_delta(write_toml, tmp_path):
    """certify writes the four-ray bound's certificates (dpverify-delta-certificate/1,
    tests/test_delta_certificates.py); beyond --max-nonzeros it refuses naming the limit
    (exit 3), as verify does; falsify (pure epsilon-DP) still refuses delta > 0."""
    path = write_toml(XOR, "xor")
    got = run("certify", str(path), "-o", str(tmp_path / "c"))
    assert got.exit_code == ExitStatus.OK, got.output
    assert len(list((tmp_path / "c").glob("*.cert.json"))) == 2
    got = run("certify", str(path), "-o", str(tmp_path / "d"), "--max-nonzeros", "100")
    assert got.exit_code == ExitStatus.UNDECIDED and "--max-nonzeros" in got.output
    assert not list((tmp_path / "d").glob("*.json"))
    got = run("falsify", str(path), "--protocols", "2")
    assert got.exit_code == ExitStatus.BAD_INPUT and "delta > 0" in got.output


def test_the_shipped_problems_say_what_they_expect(tmp_path):
    options = VerifyOptions(witness_dir=str(tmp_path / "w"))
    for path in sorted(SHIPPED.glob("*.toml")):
        spec = load(path)
        result = verify_spec(spec, options)
        values = {(r.agent, r.accuracy): r for r in result.results}
        for e in spec.expect:
            r = values[(e.agent, e.accuracy)]
            assert r.verdict.value == e.verdict, (path.name, r.reason)
            assert r.optimum == pytest.approx(float(e.value), abs=1e-9)


def test_options_that_do_not_apply_to_delta_get_a_note(write_toml, tmp_path):
    """--grid (and the other corner-LP options) do nothing with delta > 0: a note says so;
    --certify applies (the bound's certificate: no note); --seed seeds the protocol
    search, so it gets no "no effect" note there, and still gets it on a problem without a
    search (the negative control)."""
    path = write_toml(XOR, "xor")
    res = CliRunner().invoke(main, ["verify", "-q", "--certify", "--grid", "3", "--seed",
                                    "4", "--witness-dir", str(tmp_path), str(path)])
    assert res.exit_code == ExitStatus.FAILED, res.output
    assert "--grid does not apply to delta > 0" in res.stderr
    assert "--certify" not in res.stderr
    assert "--seed" not in res.stderr
    pure = write_toml(XOR.replace('delta = "1/10"\n', ""), "pure")
    res = CliRunner().invoke(main, ["verify", "-q", "--seed", "4", str(pure)])
    assert res.exit_code == 0 and "--seed has no effect" in res.stderr
    assert "do not apply" not in res.stderr


def test_check_update_writes_the_exact_bound(tmp_path):
    """`check --update` on a delta > 0 problem writes the four-ray bound exactly ("31/40"),
    not its float (0.775), as it does for certified pure problems."""
    text = (SHIPPED / "bit-1-delta.toml").read_text(encoding="utf-8")
    path = tmp_path / "bit.toml"
    path.write_text(text[:text.index("[expect")], encoding="utf-8")
    res = CliRunner().invoke(main, ["check", "--update", "--jobs", "1", str(path)])
    assert res.exit_code == 0, res.output
    written = {(e.agent, e.accuracy): e.value for e in load(path).expect}
    assert written[("observer", "average")] == 0.775, written
    assert 'average = "31/40"' in path.read_text(encoding="utf-8")
