"""`dpverify verify` through click's CliRunner (and once through a real process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from dpverify.cli import every_command, main

XOR2 = """
[problem]
name = "xor-2"
parties = 2
lambda = 3
[observer]
function = "xor"
[[party]]
index = 2
function = "and"
"""
XOR2_VALUE = (9 + 1) / 16  # Corollary 3.1 at k = 2, lambda = 3: (lambda^2 + 1)/(1 + lambda)^2

AND3 = """
[problem]
parties = 3
epsilon = 0.5
accuracy = "average"
[observer]
function = "and"
"""

RESULT_FIELDS = {"agent", "accuracy", "relaxed_optimum", "rr_value", "gap", "verdict", "seconds"}
PROBLEM_FIELDS = {"problem", "source", "kind", "parties", "lambdas", "verdict", "results"}


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_table_output(write_toml) -> None:
    path = write_toml(XOR2, "xor2")
    run = invoke("verify", str(path))
    assert run.exit_code == 0, run.output
    out = run.stdout
    assert "xor-2" in out and str(path) in out
    for header in ("agent", "accuracy", "relaxed optimum", "RR value", "gap", "verdict",
                   "seconds"):
        assert header in out
    rows = [line for line in out.splitlines() if line.startswith(("observer", "party:"))]
    assert len(rows) == 4
    assert [r.split()[0] for r in rows] == ["observer", "observer", "party:2", "party:2"]
    assert all("optimal" in r for r in rows)
    assert f"{XOR2_VALUE:.12g}" in rows[0]
    assert out.strip().splitlines()[-1].startswith("1 problem: 1 optimal, 0 gap, 0 error")
    assert run.stderr == ""


def test_json_one_file_is_an_array_of_one(write_toml) -> None:
    """One stable shape: always a JSON array, one result object per file."""
    path = write_toml(XOR2, "xor2")
    run = invoke("verify", "--json", str(path))
    assert run.exit_code == 0, run.output
    whole = json.loads(run.stdout)  # the whole of stdout is the JSON document
    assert isinstance(whole, list) and len(whole) == 1
    (data,) = whole
    assert set(data) >= PROBLEM_FIELDS
    assert data["problem"] == "xor-2"
    assert data["source"] == str(path)
    assert data["kind"] == "multiparty"
    assert data["parties"] == 2
    assert data["lambdas"] == [3.0, 3.0]
    assert data["verdict"] == "optimal"
    results = data["results"]
    assert [(r["agent"], r["accuracy"]) for r in results] == [
        ("observer", "average"), ("observer", "worst"), ("party:2", "average"),
        ("party:2", "worst")]
    for r in results:
        assert set(r) >= RESULT_FIELDS
        assert r["verdict"] == "optimal"
        assert isinstance(r["relaxed_optimum"], float) and isinstance(r["rr_value"], float)
        assert r["gap"] == pytest.approx(r["relaxed_optimum"] - r["rr_value"], abs=1e-15)
        assert abs(r["gap"]) <= 1e-9
        assert r["seconds"] >= 0
    assert results[0]["relaxed_optimum"] == pytest.approx(XOR2_VALUE, abs=1e-9)


def test_json_several_files_is_an_array(write_toml) -> None:
    a = write_toml(XOR2, "a")
    b = write_toml(AND3, "b")
    run = invoke("verify", "--json", str(a), str(b))
    assert run.exit_code == 0, run.output
    data = json.loads(run.stdout)
    assert isinstance(data, list) and len(data) == 2
    assert [d["source"] for d in data] == [str(a), str(b)]
    assert data[1]["problem"] == "b"  # the default name: the file name without .toml
    assert [r["accuracy"] for r in data[1]["results"]] == ["average"]


def test_directories_are_searched_recursively(tmp_path, write_toml) -> None:
    write_toml(XOR2, "top")
    write_toml(AND3, "inner", subdir="one/two")
    write_toml(AND3, "other", subdir="one")
    (tmp_path / "one" / "notes.txt").write_text("not a problem")
    (tmp_path / "one" / "two" / "data.json").write_text("{}")
    run = invoke("verify", "--json", str(tmp_path))
    assert run.exit_code == 0, run.output
    sources = sorted(d["source"] for d in json.loads(run.stdout))
    assert sources == sorted(str(p) for p in (tmp_path / "top.toml",
                                              tmp_path / "one" / "other.toml",
                                              tmp_path / "one" / "two" / "inner.toml"))


def test_quiet_prints_only_the_summary(write_toml) -> None:
    path = write_toml(XOR2, "xor2")
    run = invoke("verify", "--quiet", str(path))
    assert run.exit_code == 0
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("1 problem: 1 optimal, 0 gap, 0 error")


def test_show_rules_prints_the_xor_rule(write_toml) -> None:
    path = write_toml("[problem]\nparties = 2\nlambda = 3\naccuracy = \"average\"\n"
                      "[observer]\nfunction = \"xor\"\n", "xor")
    run = invoke("verify", "--show-rules", str(path))
    assert run.exit_code == 0, run.output
    out = run.stdout
    assert "decision rule of observer (average)" in " ".join(out.split())  # titles wrap
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.replace("│", "|").split("|")]
        if len(cells) == 2 and cells[0] in ("00", "01", "10", "11"):
            rows[cells[0]] = cells[1]
    # Corollary 3.1: the observer's optimal decision is the XOR of the released bits.
    assert rows == {"00": "0", "01": "1", "10": "1", "11": "0"}
    without = invoke("verify", str(path))
    assert "decision rule" not in without.stdout


def test_show_rules_for_a_party_has_one_column_per_own_bit(write_toml) -> None:
    path = write_toml("[problem]\nparties = 2\nlambda = 3\naccuracy = \"average\"\n"
                      "[[party]]\nindex = 1\nfunction = \"xor\"\n", "p")
    run = invoke("verify", "--show-rules", str(path))
    assert "decision if own bit 0" in run.stdout and "decision if own bit 1" in run.stdout


# A real gap: the shipped counterexample, a count consumer whose loss is not monotone
# (outside Gupte-Sundararajan's theorem).
PARITY_GAP = Path(__file__).resolve().parent.parent / "problems" / "count" / "parity-gap-6.toml"


def test_exit_1_on_a_gap() -> None:
    """Negative control: a candidate that falls short is reported `gap`, exit 1."""
    path = PARITY_GAP
    run = invoke("verify", "--json", str(path))
    assert run.exit_code == 1, run.output
    (data,) = json.loads(run.stdout)
    assert data["verdict"] == "gap"
    (result,) = data["results"]
    assert result["verdict"] == "gap" and result["gap"] > 0.1
    table = invoke("verify", str(path))
    assert table.exit_code == 1
    assert "1 problem: 0 optimal, 1 gap, 0 error" in table.stdout


def test_tol_decides_what_counts_as_optimal() -> None:
    path = PARITY_GAP
    assert invoke("verify", "--quiet", str(path)).exit_code == 1  # default tol 1e-9
    assert invoke("verify", "--quiet", "--tol", "0.2", str(path)).exit_code == 0


def test_exit_2_on_bad_input(write_toml) -> None:
    bad = write_toml("[problem]\nparties = 2\nepsilon = -1\n[observer]\nfunction = \"xor\"\n",
                     "bad")
    run = invoke("verify", str(bad))
    assert run.exit_code == 2
    assert run.stderr.strip() == (f"dpverify: {bad}: `problem.epsilon` = -1: "
                                  "epsilon must be a number >= 0")


def test_bad_input_does_not_hide_the_other_results(write_toml) -> None:
    bad = write_toml("[problem]\nparties = 2\n", "bad")
    good = write_toml(XOR2, "good")
    run = invoke("verify", "--json", str(bad), str(good))
    assert run.exit_code == 2  # bad input outranks everything
    data = json.loads(run.stdout)
    assert [d["source"] for d in data] == [str(bad), str(good)]
    assert data[1]["verdict"] == "optimal"
    # the invalid file is a result object too, as in `batch --json`
    assert data[0]["verdict"] == "error" and data[0]["invalid"] is True
    assert data[0]["results"] == [] and data[0]["reason_code"] == "invalid"
    assert "problem.epsilon" in data[0]["reason"]


@pytest.mark.parametrize("args", [
    ["verify", "--tol", "abc", "X"],
    ["verify", "--backend", "glpk", "X"],
    ["verify", "--max-nonzeros", "0", "X"],
    ["verify", "--max-nonzeros", "1.5e0", "X"],  # not a whole number
    ["verify", "--max-orbit-work", "1e-3", "X"],
    ["verify", "--grid", "1", "X"],
    ["verify", "--no-such-option", "X"],
    ["verify"],
    ["verify", "does-not-exist.toml"],
])
def test_exit_2_on_a_bad_command_line(write_toml, args) -> None:
    path = str(write_toml(XOR2, "x"))
    run = invoke(*[path if a == "X" else a for a in args])
    assert run.exit_code == 2, run.output
    assert "Traceback" not in run.output


def test_a_size_limit_is_taken_as_its_refusal_prints_it(write_toml) -> None:
    """The refusals print limits as 5e+07; the option takes a whole number so written."""
    from dpverify.cli.options import Count

    count = Count(min=1)
    assert [count.convert(v, None, None) for v in ("1e9", "5e+07", "2.5e3", "12")] == \
        [10**9, 5 * 10**7, 2500, 12]
    path = str(write_toml(XOR2, "x"))
    run = invoke("verify", "--json", "--max-orbit-work", "1e9", "--max-nonzeros", "2e5", path)
    assert run.exit_code == 0, run.output
    with pytest.raises(click.BadParameter):  # the control: not whole, or below the minimum
        count.convert("2.5e-1", None, None)
    with pytest.raises(click.BadParameter):
        count.convert("0e3", None, None)


@pytest.mark.parametrize("value", ["1" + "0" * 400, "1e400", "2e15"])
def test_a_size_limit_beyond_any_run_is_refused_in_one_short_line(write_toml, value) -> None:
    """A 401-digit --max-orbit-work crashed (exit 4: a float overflow in the check); the
    size limits now end at 1e15, and a long value is shortened in the message."""
    path = str(write_toml(XOR2, "x"))
    for option in ("--max-orbit-work", "--max-nonzeros"):
        run = invoke("verify", "--json", option, value, path)
        assert run.exit_code == 2, run.output
        assert "Traceback" not in run.output and "internal error" not in run.output
        (line,) = [t for t in run.output.splitlines() if t.startswith("Error:")]
        assert len(line) < 200, line
    assert invoke("verify", "--json", "--max-orbit-work", "1e15", path).exit_code == 0


@pytest.mark.parametrize("args", [
    ["verify", "--grid", "1" + "0" * 400, "--method", "lp", "X"],
    ["verify", "--samples", "1" + "0" * 400, "--method", "lp", "X"],
    ["batch", "--jobs", "1" + "0" * 400, "--no-store", "X"],
    ["falsify", "--rounds", "1" + "0" * 400, "X"],
    ["falsify", "--rounds", "1000000", "X"],
    ["falsify", "--messages", "5000", "X"],
    ["survey", "--alphabet", "2", "--parties", "1" + "0" * 400],
])
def test_a_whole_number_beyond_its_range_is_one_short_line(write_toml, args) -> None:
    """Each crashed (exit 4: a float or C-int overflow, a 300,000-digit power) or printed
    all 401 digits."""
    path = str(write_toml(XOR2, "x"))
    run = invoke(*[path if a == "X" else a for a in args])
    assert run.exit_code == 2, run.output
    assert "Traceback" not in run.output and "internal error" not in run.output
    assert all(len(line) < 200 for line in run.output.splitlines()), run.output


@pytest.mark.parametrize("args", [
    ["release", "--n", "1" + "0" * 400, "--alphas", "0.5", "--answer", "1"],
    ["release", "--n", "10", "--alphas", "0.5,1" + "0" * 400, "--answer", "1"],
    ["sweep", "X", "--epsilon", "0.1:1:1" + "0" * 400],
    ["survey", "--alphabet", "3", "--parties", "1", "--epsilon", "1" + "0" * 400],
    ["check", "--no-store", "--expect-tol", "inf", "X"],
    ["check", "--no-store", "--expect-tol", "nan", "X"],
])
def test_a_refusal_shortens_long_numbers_and_an_infinite_tolerance_is_refused(
        write_toml, args) -> None:
    """These printed all 401 digits (dpverify's own messages and click's alike), and
    `check --expect-tol inf` matched every value."""
    path = str(write_toml(XOR2, "x"))
    run = invoke(*[path if a == "X" else a for a in args])
    assert run.exit_code == 2, run.output
    assert all(len(line) < 200 for line in run.output.splitlines()), run.output


def test_short_message_keeps_a_short_number_and_word_whole() -> None:
    from dpverify.cli.app import short_message

    assert short_message("n = " + "7" * 40 + ": too large") == "n = " + "7" * 40 + ": too large"
    assert short_message("n = " + "7" * 41) == "n = " + "7" * 24 + "... (41 digits)"
    name = "a" * 200 + ".toml:"
    assert short_message(f"{name} cannot write") == \
        f"{'a' * 60}...{name[-40:]} (206 characters) cannot write"
    assert short_message("x" * 160) == "x" * 160  # the control: 160 stays


def test_a_file_name_of_5000_characters_is_one_short_line(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = invoke("new", "multiparty", "x" * 5000)
    assert run.exit_code == 2, run.output
    assert len(run.stderr) < 300 and "File name too long" in run.stderr, run.stderr


def test_the_api_checks_a_huge_value_without_overflow() -> None:
    from dpverify import api

    assert api.option_problem("max_orbit_work", 10**400) == "must be an integer >= 1 and <= 1e+15"
    assert api.option_problem("tol", 10**400) == "must be a finite number >= 0"
    assert api.option_problem("seed", 10**400) is None  # a seed has no upper end
    assert api.option_problem("max_orbit_work", 10**15) is None  # the control


BIG_ASYMMETRIC = ("[problem]\nparties = 30\nepsilon = 1\n[observer]\n"
                  'function = { expr = "x1 and not x2" }\n')


def test_exit_3_when_no_method_fits(write_toml) -> None:
    """30 parties, a function with no symmetry: no LP, no orbits, no certificate fits."""
    path = write_toml(BIG_ASYMMETRIC, "big")
    run = invoke("verify", "--json", str(path))
    assert run.exit_code == 3
    (data,) = json.loads(run.stdout)
    assert data["verdict"] == "error" and "invalid" not in data
    assert data["reason_code"] == "size-limit" and "2^30 inputs" in data["reason"]
    assert "no method fits" in run.stderr


def test_a_symmetric_function_at_30_parties_verifies_by_orbits(write_toml) -> None:
    path = write_toml("[problem]\nparties = 30\nepsilon = 1\n[observer]\nfunction = \"and\"\n",
                      "big")
    run = invoke("verify", "--json", str(path))
    assert run.exit_code == 0, run.output
    (data,) = json.loads(run.stdout)
    assert {r["method"] for r in data["results"]} == {"orbit"}
    assert {r["verdict"] for r in data["results"]} == {"optimal"}


def test_error_outranks_gap_in_the_exit_status(write_toml) -> None:
    gap = PARITY_GAP
    big = write_toml(BIG_ASYMMETRIC, "big")
    assert invoke("verify", "--quiet", str(gap)).exit_code == 1
    assert invoke("verify", "--quiet", str(gap), str(big)).exit_code == 3


@pytest.mark.parametrize("extra", [["--backend", "cvxpy"], ["--lp-form", "dense"],
                                   ["--no-color"]])
def test_options_keep_the_verdict(write_toml, extra) -> None:
    path = write_toml(XOR2, "xor2")
    run = invoke("verify", "--json", *extra, str(path))
    assert run.exit_code == 0, run.output
    (data,) = json.loads(run.stdout)
    assert data["results"][0]["relaxed_optimum"] == pytest.approx(XOR2_VALUE, abs=1e-9)


def test_every_command_has_help_text() -> None:
    assert main.help and main.help.strip()
    assert every_command(), "no commands registered"
    assert "verify" in every_command()
    top = invoke("--help")
    assert top.exit_code == 0
    for name, command in every_command().items():
        assert command.help and command.help.strip(), f"`dpverify {name}` has no docstring"
        run = invoke(name, "--help")
        assert run.exit_code == 0, (name, run.output)
        first = " ".join(command.help.split())[:40]  # click re-wraps the text
        assert first in " ".join(run.stdout.split())
        assert name in top.stdout
        for param in command.params:  # and every option says what it does
            if isinstance(param, click.Option):
                assert param.help, f"`dpverify {name} {param.opts[0]}` has no help"


def test_version() -> None:
    run = invoke("--version")
    assert run.exit_code == 0 and "dpverify" in run.stdout


def _python(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=cwd, check=False)


def test_python_m_dpverify_help() -> None:
    done = _python("-m", "dpverify", "--help")
    assert done.returncode == 0, done.stderr
    assert "verify" in done.stdout
    assert done.stdout.startswith("Usage: dpverify")


def test_json_stdout_is_clean_in_a_real_process(write_toml) -> None:
    """In a fresh process the first HiGHS object prints a banner on fd 1: not in --json."""
    path = write_toml(XOR2, "xor2")
    done = _python("-m", "dpverify", "verify", "--json", str(path))
    assert done.returncode == 0, done.stderr
    (data,) = json.loads(done.stdout)
    assert data["verdict"] == "optimal"
    assert "HiGHS" not in done.stdout


# -- files that are not problems ------------------------------------------------------------
ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = '[project]\nname = "x"\n[tool.ruff]\nline-length = 100\n'


def test_a_mechanism_file_says_what_it_is() -> None:
    path = ROOT / "examples" / "geometric-remap.toml"
    run = invoke("verify", str(path))
    assert run.exit_code == 2
    assert "a mechanism file" in run.stderr and f"dpverify derive {path}" in run.stderr
    assert "is required" not in run.stderr


def test_foreign_toml_in_a_directory_is_skipped_with_a_note(tmp_path, write_toml) -> None:
    write_toml(XOR2, "xor2")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    run = invoke("verify", "--json", str(tmp_path))
    assert run.exit_code == 0, run.output
    assert [d["problem"] for d in json.loads(run.stdout)] == ["xor-2"]
    assert f"note: skipped {tmp_path / 'pyproject.toml'}: not a problem file" in run.stderr
    # Named explicitly, it is still an error; and a broken problem file is never skipped.
    explicit = invoke("verify", str(tmp_path / "pyproject.toml"))
    assert explicit.exit_code == 2 and "not a dpverify problem file" in explicit.stderr
    (tmp_path / "broken.toml").write_text("[problem\nparties = 2\n")
    assert invoke("verify", "--quiet", str(tmp_path)).exit_code == 2


def files_below(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


# The checkout itself with --runslow (every shipped problem, seconds); by default a tree of
# the same shape: pyproject.toml, the mechanism example, a gap, a witness and the open one.
ROOT_SAMPLE = ("pyproject.toml", "examples/geometric-remap.toml", "problems/xor-2.toml",
               "problems/count/parity-gap-6.toml", "problems/multisymbol/max-3x2-gap.toml",
               "problems/multisymbol/max-3x2-open.toml")


@pytest.mark.parametrize("where", ["sample", pytest.param("checkout", marks=pytest.mark.slow)])
def test_verify_dot_at_the_repository_root(monkeypatch, tmp_path, where) -> None:
    """`verify .` skips pyproject.toml and the mechanism example instead of failing; the
    shipped counterexamples would make it exit 1, and the open instance with three symbols
    (problems/multisymbol/max-3x2-open.toml) makes it exit 3, as `make run` says. It
    writes nothing into the checkout: its witness files go to tmp_path."""
    root = ROOT
    if where == "sample":
        root = tmp_path / "checkout"
        for name in ROOT_SAMPLE:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes((ROOT / name).read_bytes())
    witnesses = tmp_path / "witnesses"
    monkeypatch.chdir(root)
    before = files_below(root / ".dpverify")
    run = invoke("verify", "--quiet", "--witness-dir", str(witnesses), ".")
    assert files_below(root / ".dpverify") == before  # the suite leaves the checkout alone
    assert list(witnesses.glob("*.witness.toml"))  # the witnesses were written, there
    assert run.exit_code == 3, run.output
    assert "1 open" in run.stdout and " 0 error" in run.stdout
    assert "invalid" not in run.stdout
    assert "skipped pyproject.toml" in run.stderr
    assert "skipped examples/geometric-remap.toml: a mechanism file" in run.stderr


WITNESS = """[problem]
name = "w"
kind = "protocol"
parties = 1
lambda = "3"
[observer]
function = "bit:1"
[[round]]
party = 1
messages = 2
kernel = [["3/4", "1/4"], ["1/4", "3/4"]]
"""


def test_hidden_directories_are_not_searched(tmp_path, write_toml) -> None:
    """Issue 17, D15: the witness files dpverify writes under .dpverify/ were verified by
    `verify .` as problems of their own; hidden directories and files are left out."""
    write_toml(XOR2, "xor2")
    for folder, name in ((".dpverify/witnesses", "p.observer.average.witness"),
                         (".git", "x"), ("", ".h")):
        write_toml(WITNESS, name, folder)
    run = invoke("verify", "--json", str(tmp_path))
    assert run.exit_code == 0, run.output
    assert [d["problem"] for d in json.loads(run.stdout)] == ["xor-2"]
    assert "skipped" not in run.stderr
    # named explicitly, a file in a hidden directory is verified (negative control)
    witness = tmp_path / ".dpverify" / "witnesses" / "p.observer.average.witness.toml"
    assert invoke("verify", "--json", str(witness)).exit_code == 0
    # and a hidden directory given as the path is searched
    named = invoke("verify", "--json", str(tmp_path / ".dpverify"))
    assert [d["problem"] for d in json.loads(named.stdout)] == ["w"]


def test_audit_leaves_hidden_directories_out_too(tmp_path, write_toml) -> None:
    """Issue 17 left `audit DIR` with a directory search of its own, which audited the
    witness protocol files under .dpverify/witnesses/ as files of the directory: `audit`
    finds files as `verify` does (runner.files.toml_files)."""
    write_toml(WITNESS.replace('name = "w"', 'name = "mine"'), "mine")
    for folder, name in ((".dpverify/witnesses", "p.observer.average.witness"),
                         (".git", "x"), ("", ".h")):
        write_toml(WITNESS, name, folder)
    run = invoke("audit", "--json", str(tmp_path))
    assert run.exit_code == 0, run.output
    assert [d["problem"] for d in json.loads(run.stdout)] == ["mine"]
    # the hidden directory named as the path is searched (negative control)
    named = invoke("audit", "--json", str(tmp_path / ".dpverify"))
    assert [d["problem"] for d in json.loads(named.stdout)] == ["w"]


def test_an_integer_beyond_pythons_limit_in_a_directory_is_bad_input(tmp_path) -> None:
    """The directory search reads every TOML file: a 5000-digit integer is bad input
    (exit 2, one line), not an internal error."""
    (tmp_path / "big.toml").write_text("[problem]\nparties = 2\nlambda = " + "1" * 5000
                                       + '\n[observer]\nfunction = "xor"\n')
    run = invoke("verify", "--quiet", str(tmp_path))
    assert run.exit_code == 2, run.output
    assert "at most 4,000" in run.stderr and "internal error" not in run.stderr


# -- --show-rules in JSON, and options that do not apply -------------------------------------
def test_json_show_rules_gives_the_rules(write_toml) -> None:
    path = write_toml("[problem]\nparties = 2\nlambda = 3\naccuracy = \"average\"\n"
                      "[observer]\nfunction = \"xor\"\n[[party]]\nindex = 1\n"
                      "function = \"and\"\n", "xor")
    run = invoke("verify", "--json", "--show-rules", str(path))
    assert run.exit_code == 0, run.output
    (data,) = json.loads(run.stdout)
    observer, party = data["results"]
    # Corollary 3.1: the observer's optimal decision is the XOR of the released bits.
    assert observer["rule"] == {"outputs": [0, 1],
                                "decision": [[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]]}
    assert party["rule"]["outputs"] == [0, 1]
    assert len(party["rule"]["decision"]) == 2  # one rule per own bit
    assert all(len(rows) == 4 for rows in party["rule"]["decision"])
    plain = json.loads(invoke("verify", "--json", str(path)).stdout)
    assert "rule" not in plain[0]["results"][0]  # negative control


def test_options_that_do_not_apply_get_a_note(write_toml) -> None:
    count = write_toml('[problem]\nkind = "count"\nn = 3\nalpha = "1/2"\n'
                       '[consumer]\nloss = "abs"\n', "count")
    run = invoke("verify", "--quiet", "--show-rules", "--certify", str(count))
    assert run.exit_code == 0, run.output
    notes = run.stderr.splitlines()  # --show-rules applies to count problems (issue 26)
    assert len(notes) == 1 and notes[0].startswith("dpverify: note: ")
    assert "--certify applies to multi-party problems only" in notes[0]
    assert str(count) in notes[0]
    xor = write_toml(XOR2, "xor2")
    seed = invoke("verify", "--quiet", "--seed", "3", str(xor))
    assert seed.stderr.strip() == "dpverify: note: --seed has no effect without --samples"
    with_samples = invoke("verify", "--quiet", "--seed", "3", "--samples", "2", str(xor))
    assert with_samples.exit_code == 0 and with_samples.stderr == ""


# -- regressions found in review: the command line's edges -----------------------------------
XOR2_EPS1 = '[problem]\nparties = 2\nepsilon = 1\n[observer]\nfunction = "xor"\n'


@pytest.mark.parametrize("tol", ["nan", "-1", "inf"])
def test_a_tolerance_that_is_not_finite_and_non_negative_is_bad_input(tmp_path, tol):
    path = tmp_path / "x.toml"
    path.write_text(XOR2_EPS1)
    result = invoke("verify", "--tol", tol, str(path))
    assert result.exit_code == 2 and "--tol" in result.output


def test_a_refusal_by_the_loader_names_its_own_file(tmp_path):
    big = tmp_path / "b.toml"
    big.write_text(BIG_ASYMMETRIC.replace("parties = 30", "parties = 61"))
    good = tmp_path / "a.toml"
    good.write_text(XOR2_EPS1)
    result = invoke("verify", "--json", str(good), str(big))
    assert result.exit_code == 3 and "Traceback" not in result.output
    assert '"problem": "b"' in result.stdout and '"problem": "a"' in result.stdout


def test_a_negative_seed_is_bad_input(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(XOR2_EPS1)
    assert invoke("verify", "--samples", "3", "--seed", "-1", str(path)).exit_code == 2
