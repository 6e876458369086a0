"""The API functions of the commands that had none before issue 18 (check, check_cert,
derive, release, falsify, survey), and `certify` with every option: each gives what the
command's `--json` prints, with the command's exit status (the command line calls them:
tests/test_codebase.py checks that it does)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import dpverify
from dpverify.cli import main
from dpverify.console.batch import check_json
from dpverify.console.certify import check_json as cert_check_json
from dpverify.console.count import derivation_json, release_json

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"

DERIVABLE = """[mechanism]
alpha = "1/2"
matrix = [
  ["3/4", "1/8", "1/24", "1/12"],
  ["1/2", "1/4", "1/12", "1/6"],
  ["1/4", "1/4", "1/6",  "1/3"],
  ["1/8", "1/8", "1/12", "2/3"],
]
"""
MAJORITY_5 = """[problem]
name = "maj5"
parties = 5
lambda = "2"
accuracy = "worst"
[observer]
function = "majority"
"""


def cli(*args: object) -> tuple[int, object]:
    run = CliRunner().invoke(main, [str(a) for a in args])
    return run.exit_code, json.loads(run.stdout) if run.stdout.strip() else None


def without(obj, *keys: str):
    """`obj` without the fields `keys` at any depth (timings differ between two runs)."""
    if isinstance(obj, dict):
        return {k: without(v, *keys) for k, v in obj.items() if k not in keys}
    if isinstance(obj, list):
        return [without(v, *keys) for v in obj]
    return obj


def test_the_new_functions_are_exported():
    for name in ("verify_paths", "certify_paths", "check_cert", "audit_paths", "check",
                 "derive", "release", "new", "falsify", "survey"):
        assert name in dpverify.__all__ and callable(getattr(dpverify, name)), name


# -- check ------------------------------------------------------------------------------------
def test_check_gives_the_json_of_the_command(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    for name in ("xor-2.toml", "and-3.toml"):
        shutil.copy(PROBLEMS / name, folder / name)
    wrong = (PROBLEMS / "xor-2.toml").read_text().replace("average = 0.6067761335170362",
                                                          "average = 0.123")
    assert "0.123" in wrong
    (folder / "wrong.toml").write_text(wrong.replace('name = "xor-2"', 'name = "wrong"'))
    code, printed = cli("check", folder, "--json", "--store", tmp_path / "a.sqlite", "-j", "1")
    report = dpverify.check(folder, store=tmp_path / "b.sqlite", jobs=1)
    assert check_json(report) == printed
    assert report.exit_status() == code == 1  # the wrong expectation is a mismatch
    assert [m.source for m in report.mismatches] == [str(folder / "wrong.toml")]
    loose = dpverify.check(folder, store=tmp_path / "b.sqlite", jobs=1, expect_tol=1.0)
    assert loose.exit_status() == 0 and not loose.mismatches  # control: the tolerance bites


# -- certificates -----------------------------------------------------------------------------
def test_check_cert_gives_the_json_of_the_command(tmp_path):
    problem = PROBLEMS / "xor-2.toml"
    made = dpverify.certify(problem, tmp_path)
    paths = [str(c.path) for c in made.certificates]
    broken = tmp_path / "broken.cert.json"
    cert = json.loads(Path(paths[0]).read_text())
    cert["lower"]["value"] = "1"  # claims more than RR achieves: the checker says so
    broken.write_text(json.dumps(cert))
    code, printed = cli("check-cert", problem, *paths, broken, "--json")
    checks = dpverify.check_cert(problem, [*paths, broken])
    assert [cert_check_json(c) for c in checks] == printed
    assert checks.exit_status() == code == 1
    assert [c.ok for c in checks] == [True] * len(paths) + [False]
    assert dpverify.check_cert(problem, paths).exit_status() == 0


@pytest.mark.parametrize("method, fmt", [("orbit", "dpverify-orbit-certificate/1"),
                                         ("proof", "dpverify-certificate/1")])
def test_certify_honours_the_method(tmp_path, method, fmt):
    """`certify` ignored --method and --max-orbit-work (the command had no such options,
    the API refused them): the orbit certificate is asked for by name."""
    problem = dpverify.load(MAJORITY_5)
    made = dpverify.certify(problem, method=method)
    assert [c.certificate["format"] for c in made.certificates] == [fmt]
    assert made.verdict == "proved-optimal"
    source = tmp_path / "maj5.toml"
    source.write_text(MAJORITY_5)
    code, printed = cli("certify", source, "-o", tmp_path / "out", "--method", method, "--json")
    assert code == 0 and [c["status"] for c in printed] == ["proved-optimal"]
    written = json.loads(Path(printed[0]["path"]).read_text())
    assert written["format"] == fmt


def test_certify_honours_max_orbit_work(tmp_path):
    problem = dpverify.load(MAJORITY_5)
    refused = dpverify.certify(problem, method="orbit", max_orbit_work=1)
    assert refused.verdict == "error" and "max-orbit-work" in refused.messages[0]
    source = tmp_path / "maj5.toml"
    source.write_text(MAJORITY_5)
    code, printed = cli("certify", source, "-o", tmp_path, "--method", "orbit",
                        "--max-orbit-work", "1", "--json")
    assert code == 3 and printed == []
    # the default limit certifies it (control)
    assert dpverify.certify(problem, method="orbit").verdict == "proved-optimal"


# -- count queries ----------------------------------------------------------------------------
@pytest.mark.parametrize("matrix, tol", [(DERIVABLE, None),
                                         (DERIVABLE.replace('"1/2"', "0.5", 1)
                                          .replace('"3/4"', "0.75"), 1e-6)])
def test_derive_gives_the_json_of_the_command(tmp_path, matrix, tol):
    path = tmp_path / "m.toml"
    path.write_text(matrix)
    extra = ["--tol", tol] if tol is not None else []
    code, printed = cli("derive", path, "--json", *extra)
    found = dpverify.derive(path, **({"tol": tol} if tol is not None else {}))
    assert derivation_json(found.mechanism, found.derivation) == printed
    assert found.exit_status() == code == 0 and found.derivable is True
    assert dpverify.derive(matrix).derivable is True  # the text of a file, too


def test_derive_of_a_mechanism_that_does_not_derive(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('[mechanism]\nalpha = "1/2"\nmatrix = [["1/2", "1/4", "1/4"], '
                    '["3/10", "7/20", "7/20"], ["1/2", "1/4", "1/4"]]\n')
    code, printed = cli("derive", path, "--json")
    found = dpverify.derive(path)
    assert derivation_json(found.mechanism, found.derivation) == printed
    assert found.exit_status() == code == 1 and found.derivable is False


def test_release_gives_the_json_of_the_command():
    code, printed = cli("release", "--n", 6, "--alphas", "1/10,1/2,0.9", "--answer", 2,
                        "--seed", 7, "--check", "--json")
    done = dpverify.release(6, "1/10,1/2,0.9", 2, seed=7, check=True)
    assert release_json(done.plan, list(done.released), 2, done.seed, done.check) == printed
    assert code == 0 and done.ok
    from fractions import Fraction

    same = dpverify.release(6, [Fraction(1, 10), "1/2", 0.9], 2, seed=7)
    assert same.released == done.released  # the levels as a sequence


# -- research ---------------------------------------------------------------------------------
def test_falsify_gives_the_json_of_the_command(tmp_path):
    problem = PROBLEMS / "xor-2.toml"
    args = dict(protocols=6, rounds=2, climb=3, seed=5)
    code, printed = cli("falsify", problem, "--json", "--counterexamples", tmp_path / "a",
                        *[x for k, v in args.items() for x in (f"--{k}", v)])
    campaign = dpverify.falsify(problem, counterexamples=tmp_path / "b", **args)
    assert [r.to_json() for r in campaign.results] == printed
    assert campaign.exit_status() == code == 0  # RR is optimal: no counterexample
    assert all(r["protocols"] > 6 for r in printed)


def test_falsify_refuses_too_many_transcripts_without_computing_them():
    # rounds = 10**400 through the API: messages^rounds was computed, and hung
    with pytest.raises(dpverify.InputError, match=r"2\^1000.* transcripts per protocol"):
        dpverify.falsify(PROBLEMS / "xor-2.toml", rounds=10**400)
    with pytest.raises(dpverify.InputError, match="at most 4,096 are searched"):
        dpverify.falsify(PROBLEMS / "xor-2.toml", rounds=13)  # 8,192
    from dpverify.research.falsify import _transcripts_over  # the control: 4,096 fits

    assert not _transcripts_over(2, 12, 4096) and _transcripts_over(2, 13, 4096)
    assert not _transcripts_over(4096, 1, 4096) and _transcripts_over(4097, 1, 4096)


def test_falsify_refuses_a_count_problem():
    with pytest.raises(dpverify.InputError, match="a count problem"):
        dpverify.falsify(PROBLEMS / "count" / "abs-10.toml")


def test_survey_gives_the_json_of_the_command(tmp_path):
    code, printed = cli("survey", "--alphabet", 3, "--parties", 1, "--epsilon", "1,1/2",
                        "--jobs", 1, "--restarts", 1, "--save", tmp_path / "a", "--json")
    report = dpverify.survey(alphabet=3, parties=1, epsilon="1,1/2", jobs=1, restarts=1,
                             save_dir=tmp_path / "b")
    assert without(report.to_json(), "seconds", "saved") == without(printed, "seconds",
                                                                      "saved")
    assert report.exit_status() == code
    assert [Path(p).name for p in report.to_json()["saved"]] == \
        [Path(p).name for p in printed["saved"]]


def test_survey_levels_are_checked_as_on_the_command_line():
    with pytest.raises(dpverify.OptionError, match="epsilon must be in 0..700"):
        dpverify.survey(alphabet=3, parties=1, epsilon="800")
    code, _ = cli("survey", "--alphabet", 3, "--parties", 1, "--epsilon", "800")
    assert code == 2


def test_a_file_whose_name_starts_with_a_bracket_is_a_path(tmp_path, monkeypatch):
    """A `str` starting with `[` is the text of a file unless it names a file: `derive`,
    `falsify` and `sweep` take the command line's paths as given."""
    monkeypatch.chdir(tmp_path)
    Path("[m].toml").write_text(DERIVABLE)
    Path("[p].toml").write_text((PROBLEMS / "xor-2.toml").read_text())
    assert dpverify.derive("[m].toml").derivable is True
    assert dpverify.load("[p].toml").name == "xor-2"
    assert cli("derive", "[m].toml", "--json")[0] == 0
    with pytest.raises(dpverify.SpecError, match="TOML syntax error"):
        dpverify.load("[problem")  # no such file: the text of one, which does not parse
