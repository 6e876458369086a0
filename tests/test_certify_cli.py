"""`dpverify certify` and `dpverify check-cert` output modes: --json (exact rationals as
"p/q" strings), --quiet and --no-color; the library behind them (certify_paths)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

from click.testing import CliRunner

from dpverify.cli import main
from dpverify.runner.certify_files import certify_paths, check_certificates

AND3 = """[problem]
name = "and-3"
parties = 3
lambda = ["3/2", "2", "5/2"]
accuracy = "worst"
[observer]
function = "and"
[[party]]
index = 2
function = "and"
"""
MAJ = ('[problem]\nname = "maj"\nparties = 3\nepsilon = 1\naccuracy = "worst"\n'
       '[observer]\nfunction = "majority"\n')


def test_certify_json(write_toml, tmp_path) -> None:
    spec = write_toml(AND3, "and-3")
    res = CliRunner().invoke(main, ["certify", str(spec), "-o", str(tmp_path / "c"), "--json"])
    assert res.exit_code == 0, res.output
    objs = json.loads(res.stdout)  # the whole of stdout
    assert [(o["agent"], o["accuracy"]) for o in objs] == [("observer", "worst"),
                                                           ("party:2", "worst")]
    for o in objs:
        assert set(o) == {"path", "problem", "agent", "accuracy", "status", "value", "bound",
                          "width"}
        assert o["problem"] == "and-3" and o["status"] == "proved-optimal"
        assert isinstance(o["value"], str) and o["value"] == o["bound"]
        assert o["width"] == 0.0 and Path(o["path"]).parent == tmp_path / "c"
        assert Path(o["path"]).exists()
    assert objs[0]["value"] == "138/245"  # the README's and-3: the observer's worst case


def test_certify_quiet_and_brackets(write_toml, tmp_path) -> None:
    spec = write_toml(MAJ, "maj")
    res = CliRunner().invoke(main, ["certify", str(spec), "-o", str(tmp_path), "--quiet",
                                    "--no-color"])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == "1 certificate: 0 proved optimal, 1 bracketed, 0 unproved"
    (obj,) = json.loads(CliRunner().invoke(main, ["certify", str(spec), "-o", str(tmp_path),
                                                  "--json"]).stdout)
    assert obj["status"] == "bracket" and 0 < obj["width"] < 1e-15
    assert Fraction(obj["value"]) < Fraction(obj["bound"])


def test_check_cert_json_and_quiet(write_toml, tmp_path) -> None:
    spec = write_toml(AND3, "and-3")
    report = certify_paths([spec], tmp_path)
    files = [str(r.path) for r in report.certificates]
    cert = json.loads((tmp_path / files[0]).read_text())
    cert["upper"]["bound"] = "1"
    bad = tmp_path / "bad.cert.json"
    bad.write_text(json.dumps(cert))
    runner = CliRunner()
    res = runner.invoke(main, ["check-cert", str(spec), *files, str(bad), "--json"])
    assert res.exit_code == 1
    objs = json.loads(res.stdout)
    assert [set(o) for o in objs] == [{"path", "ok", "message", "value", "bound"}] * 3
    assert [o["ok"] for o in objs] == [True, True, False]
    assert objs[0]["value"] == objs[0]["bound"] == "138/245"
    assert objs[2]["value"] is None and "sum(mu)" in objs[2]["message"]
    quiet = runner.invoke(main, ["check-cert", str(spec), *files, str(bad), "-q"])
    assert quiet.exit_code == 1 and quiet.stdout.strip() == "3 certificates: 2 OK, 1 failed"
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    res = runner.invoke(main, ["check-cert", str(spec), str(junk), "--json"])
    assert res.exit_code == 2
    (obj,) = json.loads(res.stdout)
    assert obj["ok"] is False and obj["message"].startswith("not a certificate")
    assert [c.malformed for c in check_certificates(spec, [junk])] == [True]


COUNT = '[problem]\nkind = "count"\nn = 3\nepsilon = 1\n[consumer]\nloss = "abs"\n'
PROTOCOL = ('[problem]\nkind = "protocol"\nparties = 1\nlambda = "3"\n[observer]\n'
            'function = "bit:1"\n[[round]]\nparty = 1\nmessages = 2\n'
            'kernel = [["3/4", "1/4"], ["1/4", "3/4"]]\n')


def test_certify_sums_up_the_files_it_skips_in_one_line(write_toml, tmp_path) -> None:
    """Issue 17, D15: one line per skipped file, each with a Python enum repr
    (`<Kind.COUNT: 'count'>`); now one clean line for all of them."""
    write_toml(MAJ, "maj", "in")
    for i in range(3):
        write_toml(COUNT, f"count-{i}", "in")
    write_toml(PROTOCOL, "proto", "in")
    run = CliRunner().invoke(main, ["certify", "-o", str(tmp_path / "out"), "--quiet",
                                    str(tmp_path / "in")])
    assert run.exit_code == 0, run.output
    lines = run.stderr.splitlines()
    assert lines == ["dpverify: note: skipped 4 files (3 count problems, 1 protocol file): "
                     "certificates cover multi-party problems only"], lines
    assert "<Kind" not in run.output
    one = CliRunner().invoke(main, ["certify", "-o", str(tmp_path / "out"), "--quiet",
                                    str(tmp_path / "in" / "maj.toml"),
                                    str(tmp_path / "in" / "count-0.toml")])
    assert one.stderr.strip() == (f"dpverify: note: skipped {tmp_path / 'in' / 'count-0.toml'}"
                                  " (a count problem): certificates cover multi-party "
                                  "problems only")
    report = certify_paths([tmp_path / "in"], tmp_path / "out")
    assert sorted(s.kind for s in report.skipped) == ["count"] * 3 + ["protocol"]
