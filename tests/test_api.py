"""The Python API (dpverify.api, re-exported from dpverify): it gives what the command line
gives, for every shipped problem; problems built in code are validated like files, with
the same one-line errors; results are frozen, with `to_dict()` and `verdict`."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

import dpverify
from dpverify import Agent, Consumer, Problem
from dpverify.cli import main

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def without_seconds(obj):
    """A result object without its timings (the only fields two runs may differ in)."""
    if isinstance(obj, dict):
        return {k: without_seconds(v) for k, v in obj.items() if k != "seconds"}
    if isinstance(obj, list):
        return [without_seconds(v) for v in obj]
    return obj


def as_json(obj):
    return json.loads(json.dumps(obj))


def typed(obj):
    """`obj` with every key and leaf paired with its exact type: two objects compare equal
    only when their values and types are equal (an enum member is not its string)."""
    if isinstance(obj, dict):
        return {(type(k).__name__, k): typed(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [typed(v) for v in obj]
    return (type(obj).__name__, obj)


# -- the bar, and importing ---------------------------------------------------------------
def test_the_one_liner_of_the_issue_prints_optimal():
    code = ("import dpverify; r = dpverify.verify(dpverify.load('problems/and-3.toml')); "
            "print(r.verdict)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "optimal\n"


def test_import_dpverify_loads_no_solver_no_numpy_no_matplotlib():
    code = ("import sys, dpverify; dpverify.Problem; print(sorted(m for m in ('numpy', "
            "'highspy', 'cvxpy', 'matplotlib', 'scipy', 'click', 'rich') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # each is imported when a function first needs it


def test_the_api_names_are_exported_and_typed():
    for name in ("load", "verify", "certify", "audit", "batch", "sweep", "plot", "results",
                 "Problem", "Agent", "Consumer", "ProblemResult", "DpverifyError",
                 "SpecError"):
        assert name in dpverify.__all__ and hasattr(dpverify, name), name
    assert (ROOT / "dpverify" / "py.typed").exists()
    assert callable(dpverify.verify) and callable(dpverify.batch)
    # the sub-packages of the same names still import as packages
    import dpverify.runner.files as paths

    assert paths.verify_paths is not None
    assert "options" in str(__import__("inspect").signature(dpverify.verify))


# -- the same JSON as the command line ------------------------------------------------------
SHIPPED = sorted(str(p) for p in PROBLEMS.rglob("*.toml"))
# Seconds each way: checked with --runslow only (the default run stays within its budget).
SLOW_TO_VERIFY = {str(PROBLEMS / "count" / "abs-50.toml"),
                  *(str(p) for p in (PROBLEMS / "large").rglob("*.toml"))}


@pytest.mark.parametrize("which", ["fast", pytest.param("all", marks=pytest.mark.slow)])
def test_every_shipped_problem_gives_the_json_of_the_cli(which, tmp_path):
    files = [f for f in SHIPPED if which == "all" or f not in SLOW_TO_VERIFY]
    assert len(files) >= 25
    # The command line in its own process (the real entry point), the API in this one: both
    # at once, on two cores.
    witnesses = str(tmp_path)  # not the checkout's .dpverify/witnesses
    cli = subprocess.Popen([sys.executable, "-m", "dpverify", "verify", *files, "--json",
                            "--witness-dir", witnesses],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
    try:
        api = {f: dpverify.verify(dpverify.load(f), witness_dir=witnesses) for f in files}
        stdout, _ = cli.communicate(timeout=300)
    finally:
        cli.kill()
    assert cli.returncode != 0  # problems/count/parity-gap-6.toml is a shipped gap
    expected = {obj["source"]: obj for obj in json.loads(stdout)}
    assert sorted(expected) == files
    for source, result in api.items():
        got = result.to_dict()  # plain JSON values, equal type for type to what --json prints
        assert typed(got) == typed(as_json(got)), source
        assert typed(without_seconds(got)) == typed(without_seconds(expected[source])), source
        assert result.verdict == expected[source]["verdict"]
        assert result.to_json() == result.to_dict()  # the older name stays


def test_results_are_frozen():
    result = dpverify.verify(PROBLEMS / "xor-2.toml")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.problem = "other"  # type: ignore[misc]
    from dpverify.runner.batch import BatchReport

    with pytest.raises(dataclasses.FrozenInstanceError):
        BatchReport().freeze().total = 3  # type: ignore[misc]


def test_load_takes_a_path_a_pathlike_or_the_text():
    text = (PROBLEMS / "and-3.toml").read_text()
    from_text = dpverify.load(text)
    from_path = dpverify.load(PROBLEMS / "and-3.toml")
    assert from_text.source == "<string>" and from_path.source.endswith("and-3.toml")
    assert from_text.spec.lambdas_exact == from_path.spec.lambdas_exact
    assert dpverify.verify(from_text).to_dict()["results"][0]["relaxed_optimum"] == 0.875


def test_a_problem_built_in_code_equals_its_file():
    built = Problem.multiparty(parties=3, lambda_=[Fraction(3, 2), 2, "5/2"], observer="and",
                               party={1: Agent(function="and")}, name="and-3")
    assert built.spec.lambdas_exact == (Fraction(3, 2), Fraction(2), Fraction(5, 2))
    got = without_seconds(dpverify.verify(built).to_dict())
    want = without_seconds(dpverify.verify(PROBLEMS / "and-3.toml").to_dict())
    assert got.pop("source") == "<Problem.multiparty>"
    want.pop("source")
    assert got == want


def test_the_builders_of_the_issue():
    majority = Problem.multiparty(parties=5, epsilon=1.0, observer=Agent(function="majority"))
    assert majority.name == "multiparty-5" and majority.spec.parties == 5
    # the builder's default name follows the parties; a name given stays
    assert majority.replace(parties=7).name == "multiparty-7"
    named = Problem.multiparty(parties=5, epsilon=1.0, observer="xor", name="mine")
    assert named.replace(parties=3).name == "mine"
    result = dpverify.verify(majority, tol=1e-9)
    assert result.verdict == "optimal"
    expected = {"average": 0.6716547315136133, "worst": 0.6029342355439434}  # majority-5
    for r in result.results:
        assert r.relaxed_optimum == pytest.approx(expected[r.accuracy], abs=1e-9)
    count = Problem.count(6, alpha="1/2", consumer=Consumer(loss={"expr": "abs(i - r) % 2"}))
    assert dpverify.verify(count).verdict == "gap"  # the shipped counterexample, in code


# -- errors: one type, the command line's one line -------------------------------------------
BAD_FILES = [
    ("[problem]\nparties = 3\nepsilon = -1\n[observer]\nfunction = 'xor'\n",
     "`problem.epsilon` = -1: epsilon must be a number >= 0"),
    ("[problem]\nparties = 3\nepsilon = 1\n[observer]\nfunction = 'xor'\ntypo = 1\n",
     "`observer.typo` = 1: unknown key"),
    ("[problem]\nparties = 2\nepsilon = 1\n[observer]\nfunction = { expr = 'x1 / (x2 - x2)' }\n",
     "division by zero"),
    ("[problem]\nparties = 2\nepsilon = 1\n", "no agent"),
    ("[problem\n", "TOML syntax error"),
]


@pytest.mark.parametrize(("text", "fragment"), BAD_FILES)
def test_api_errors_are_the_lines_the_cli_prints(tmp_path, text, fragment):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    done = invoke("verify", str(path))
    assert done.exit_code == 2
    line = done.stderr.strip().splitlines()[0]
    with pytest.raises(dpverify.SpecError) as caught:
        dpverify.load(path)
    assert line == f"dpverify: {caught.value}"
    assert fragment in line and caught.value.exit_code == 2
    with pytest.raises(dpverify.DpverifyError):  # one family, whatever the function
        dpverify.verify(str(path))


def test_a_builder_raises_the_message_of_the_same_file(tmp_path):
    with pytest.raises(dpverify.SpecError) as caught:
        Problem.multiparty(parties=3, epsilon=-1, observer="xor")
    path = tmp_path / "same.toml"
    path.write_text("[problem]\nparties = 3\nepsilon = -1\n[observer]\nfunction = 'xor'\n")
    line = invoke("verify", str(path)).stderr.strip()
    assert str(caught.value) == line.removeprefix(f"dpverify: {path}: ").join(
        ["<Problem.multiparty>: ", ""])
    with pytest.raises(dpverify.SpecError, match="unknown function"):
        Problem.multiparty(parties=3, epsilon=1, observer="xnor")
    with pytest.raises(dpverify.SpecError, match="cannot be written to a problem file"):
        Problem.multiparty(parties=3, epsilon=1, observer=Agent(function=len))  # type: ignore


def test_bad_options_raise_option_errors_with_the_cli_messages(tmp_path):
    with pytest.raises(dpverify.OptionError, match="tol = -1.0: must be a finite number >= 0"):
        dpverify.verify(PROBLEMS / "xor-2.toml", tol=-1.0)
    assert "must be a finite number >= 0" in invoke("verify", str(PROBLEMS / "xor-2.toml"),
                                                    "--tol", "-1").stderr
    with pytest.raises(dpverify.OptionError, match="unknown option 'tl'"):
        dpverify.verify(PROBLEMS / "xor-2.toml", tl=1)  # type: ignore[call-arg]
    with pytest.raises(dpverify.OptionError, match="grid = 1"):
        dpverify.verify(PROBLEMS / "xor-2.toml", grid=1)


def test_a_size_limit_is_raised_with_the_cli_reason():
    source = str(PROBLEMS / "count" / "abs-50.toml")
    cli = json.loads(invoke("verify", source, "--max-nonzeros", "100", "--json").stdout)[0]
    with pytest.raises(dpverify.SizeLimitError) as caught:
        dpverify.verify(source, max_nonzeros=100)
    assert str(caught.value) == cli["reason"] and caught.value.exit_code == 3


# -- certify, audit, batch -------------------------------------------------------------------
def test_certify_gives_the_objects_of_certify_json(tmp_path):
    done = invoke("certify", str(PROBLEMS / "and-3.toml"), "-o", str(tmp_path), "--json")
    cli = json.loads(done.stdout)
    got = dpverify.certify(PROBLEMS / "and-3.toml")
    assert got.verdict == "proved-optimal"
    assert [dict(c, path=None) for c in cli] == got.to_dict()["certificates"]
    written = dpverify.certify(PROBLEMS / "and-3.toml", tmp_path / "api")
    assert sorted(p.name for p in (tmp_path / "api").iterdir()) == \
        sorted(Path(c["path"]).name for c in cli)
    assert all(c.certificate["status"] == "proved-optimal" for c in written.certificates)
    with pytest.raises(dpverify.SpecError, match="multi-party problems only"):
        dpverify.certify(PROBLEMS / "count" / "abs-10.toml")


def test_audit_gives_the_json_of_the_cli():
    source = str(PROBLEMS / "protocols" / "rr-and-3.toml")
    cli = json.loads(invoke("audit", source, "--json").stdout)[0]
    got = dpverify.audit(source)
    assert without_seconds(as_json(got.to_dict())) == without_seconds(cli)
    with pytest.raises(dpverify.SpecError, match="not a protocol"):
        dpverify.audit(PROBLEMS / "xor-2.toml")


# -- to_dict() is the JSON, type for type (issue 17, B9) ----------------------------------------
@pytest.mark.parametrize(("command", "source"), [
    ("verify", PROBLEMS / "and-3.toml"),  # multi-party
    ("verify", PROBLEMS / "count" / "abs-10.toml"),  # count
    ("verify", PROBLEMS / "multisymbol" / "xor-3x2.toml"),  # more than two symbols
    ("audit", PROBLEMS / "protocols" / "rr-and-3.toml"),  # a protocol audit
    ("audit", ROOT / "examples" / "remap-audit.toml"),  # a count mechanism's audit
])
def test_to_dict_is_the_json_type_for_type(command, source):
    result = getattr(dpverify, command)(source)
    got = result.to_dict()
    assert typed(got) == typed(as_json(got))
    cli = json.loads(invoke(command, str(source), "--json").stdout)[0]
    assert typed(without_seconds(got)) == typed(without_seconds(cli))


def test_batch_items_and_sweep_rows_are_plain_json():
    sources = [PROBLEMS / "count" / "abs-10.toml", PROBLEMS / "multisymbol" / "xor-3x2.toml",
               PROBLEMS / "and-3.toml"]
    report = dpverify.batch(sources, jobs=2)
    assert len(report.items) == 3
    for item in report.items:
        assert typed(item.to_dict()) == typed(as_json(item.to_dict())), item.source
    assert typed(report.to_dict()) == typed(as_json(report.to_dict()))
    sweep = dpverify.sweep(PROBLEMS / "count" / "abs-10.toml", alpha="1/4,1/2", jobs=2)
    assert typed(sweep.rows()) == typed(as_json(sweep.rows()))
    assert typed(sweep.to_dict()) == typed(as_json(sweep.to_dict()))
    assert {row["accuracy"] for row in sweep.rows()} == {"minimax"}
    assert type(sweep.rows()[0]["kind"]) is str and type(sweep.kind) is str
