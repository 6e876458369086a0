"""`dpverify derive`, `dpverify release`, and count problems through `dpverify verify`,
driven with click's CliRunner: exit statuses of spec.md, one-line errors, valid JSON."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify.cli import every_command, main
from dpverify.spec import load
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.options import VerifyOptions

PROBLEMS = Path(__file__).resolve().parent.parent / "problems" / "count"

# x = G_{1/2} T on 0..3 with T = [[1,0,0,0],[1/2,1/2,0,0],[0,1/2,1/2,0],[0,0,0,1]]
DERIVABLE = '''
[mechanism]
description = "the 1/2-geometric mechanism, then a remap"
alpha = "1/2"
matrix = [
  ["3/4", "1/8", "1/24", "1/12"],
  ["1/2", "1/4", "1/12", "1/6"],
  ["1/4", "1/4", "1/6",  "1/3"],
  ["1/8", "1/8", "1/12", "2/3"],
]
'''
# alpha-DP at 1/2 but the local test fails at (1, 0)
NOT_DERIVABLE = '''
[mechanism]
alpha = "1/2"
matrix = [["1/2", "1/4", "1/4"], ["3/10", "7/20", "7/20"], ["1/2", "1/4", "1/4"]]
'''


@pytest.fixture
def runner():
    return CliRunner()


def run(runner, *args):
    return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


# --------------------------------------------------------------------------------------
# help


@pytest.mark.parametrize("command", ["derive", "release"])
def test_every_command_has_help(runner, command):
    result = run(runner, command, "--help")
    assert result.exit_code == 0
    assert "Exit status" in result.output
    assert every_command()[command].help and len(every_command()[command].help) > 100


# --------------------------------------------------------------------------------------
# verify with count problems


def test_verify_shipped_count_problems(runner):
    result = run(runner, "verify", PROBLEMS, "--json")
    assert result.exit_code == 1  # the parity example is a gap, on purpose
    objs = json.loads(result.output)
    assert len(objs) >= 8
    for obj in objs:
        (res,) = obj["results"]
        assert obj["kind"] == "count" and {"n", "alpha"} <= set(obj)
        expected = "gap" if "gap" in obj["problem"] else "optimal"
        assert obj["verdict"] == res["verdict"] == expected, obj
        assert res["agent"] == "consumer" and res["accuracy"] in ("minimax", "bayes")
        if expected == "gap":
            assert res["hypothesis"] == "not-monotone" and "gap expected" in res["note"]
        else:
            assert res["hypothesis"] == "monotone" and abs(res["gap"]) < 1e-9


def test_shipped_expectations_match():
    paths = sorted(PROBLEMS.glob("*.toml"))
    assert len(paths) >= 8, f"no shipped count problems found in {PROBLEMS}"  # not vacuous
    for path in paths:
        spec = load(path)
        (r,) = verify_spec(spec, VerifyOptions()).results
        (e,) = spec.expect
        assert e.agent == r.agent and e.accuracy == r.accuracy
        assert r.optimum == pytest.approx(e.value, abs=1e-8), path


def test_verify_table_for_a_count_problem(runner):
    result = run(runner, "verify", PROBLEMS / "abs-10.toml")
    assert result.exit_code == 0
    for word in ("mechanism optimum", "geometric value", "hypothesis", "monotone", "optimal",
                 "1 problem: 1 optimal"):
        assert word in result.output


def test_verify_table_notes_an_expected_gap(runner):
    result = run(runner, "verify", PROBLEMS / "parity-gap-6.toml")
    assert result.exit_code == 1
    assert "not-monotone" in result.output and "gap expected" in result.output


def test_verify_refuses_a_large_count_problem(runner, write_toml):
    path = write_toml('[problem]\nkind = "count"\nn = 60\nalpha = 0.5\n[consumer]\n'
                      'loss = "abs"\n')
    result = run(runner, "verify", path, "--max-nonzeros", "1000")
    assert result.exit_code == 3
    assert "too large" in result.output


def test_verify_answers_a_count_problem_past_the_parties_default(runner, write_toml):
    """n = 120 (its optimal-mechanism LP about 100,000 non-zeros) is answered with
    --max-nonzeros unset, and refused when a smaller limit is given (it binds)."""
    path = write_toml('[problem]\nkind = "count"\nn = 120\nalpha = "9/10"\n[consumer]\n'
                      'loss = "square"\n')
    assert run(runner, "verify", path, "--json").exit_code == 0
    refused = run(runner, "verify", path, "--max-nonzeros", "70000")
    assert refused.exit_code == 3 and "70,000 non-zeros" in refused.output
    assert "--max-nonzeros" in refused.output


def test_verify_refuses_a_huge_count_problem_in_one_line(runner, write_toml):
    path = write_toml('[problem]\nkind = "count"\nn = 5000\nalpha = "9/10"\n[consumer]\n'
                      'loss = "abs"\n')
    result = CliRunner().invoke(main, ["verify", str(path)])
    assert result.exit_code == 3
    lines = [line for line in result.stderr.splitlines() if "too large" in line]
    assert len(lines) == 1 and "of memory" in lines[0] and "--max-nonzeros" in lines[0]


def test_verify_bad_count_file_is_exit_2(runner, write_toml):
    path = write_toml('[problem]\nkind = "count"\nn = 3\nalpha = 0.5\n[consumer]\n'
                      'loss = "abss"\n')
    result = run(runner, "verify", path)
    assert result.exit_code == 2
    assert "`consumer.loss` = 'abss'" in result.output


# --------------------------------------------------------------------------------------
# derive


def test_derive_derivable_exact(runner, write_toml):
    result = run(runner, "derive", write_toml(DERIVABLE, "m"))
    assert result.exit_code == 0, result.output
    assert "exact rational arithmetic" in result.output
    assert "Derivable from the 1/2-geometric mechanism" in result.output
    assert "1/2" in result.output  # T's entries, exactly


def test_derive_json_gives_T_exactly(runner, write_toml):
    result = run(runner, "derive", write_toml(DERIVABLE, "m"), "--json")
    assert result.exit_code == 0
    obj = json.loads(result.output)
    assert obj["derivable"] is True and obj["agree"] and obj["dp"]
    assert obj["arithmetic"] == "exact" and obj["alpha"] == "1/2" and obj["n"] == 3
    assert obj["T"] == [["1", "0", "0", "0"], ["1/2", "1/2", "0", "0"],
                        ["0", "1/2", "1/2", "0"], ["0", "0", "0", "1"]]


def test_derive_not_derivable(runner, write_toml):
    path = write_toml(NOT_DERIVABLE, "m")
    result = run(runner, "derive", path)
    assert result.exit_code == 1
    assert "Not derivable" in result.output and "(1, 0)" in result.output
    obj = json.loads(run(runner, "derive", path, "--json").output)
    assert obj["derivable"] is False and obj["dp"] is True and obj["T"] is None
    assert obj["methods"]["linear_solve"]["violations"] == [[1, 0]]
    assert obj["methods"]["local_test"]["violations"] == [[1, 0]]


def test_derive_not_dp(runner, write_toml):
    path = write_toml('[mechanism]\nalpha = "1/2"\nmatrix = [[1, 0], [0, 1]]\n', "m")
    result = run(runner, "derive", path)
    assert result.exit_code == 1
    assert "not even alpha-DP" in result.output


def test_derive_float_mode(runner, write_toml):
    # randomized response at epsilon = ln 2, in floats: derives from G (alpha = 1/2)
    path = write_toml("[mechanism]\nepsilon = 0.6931471805599453\n"
                      "matrix = [[0.6666666666666666, 0.3333333333333333], "
                      "[0.3333333333333333, 0.6666666666666666]]\n", "m")
    result = run(runner, "derive", path, "--json")
    assert result.exit_code == 0, result.output
    obj = json.loads(result.output)
    assert obj["arithmetic"].startswith("floating point") and obj["derivable"] is True
    assert obj["T"][0][0] == pytest.approx(1.0, abs=1e-9)


def test_derive_alpha_one_and_n_zero(runner, write_toml):
    same = write_toml('[mechanism]\nalpha = 1\nmatrix = [["1/3", "2/3"], ["1/3", "2/3"]]\n',
                      "a")
    assert run(runner, "derive", same).exit_code == 0
    differ = write_toml('[mechanism]\nalpha = 1\nmatrix = [["1/3", "2/3"], ["2/3", "1/3"]]\n',
                        "b")
    assert run(runner, "derive", differ).exit_code == 1
    single = write_toml("[mechanism]\nalpha = 0.5\nmatrix = [[1]]\n", "c")
    assert run(runner, "derive", single).exit_code == 0


@pytest.mark.parametrize("body, words", [
    ('[mechanism]\nalpha = "1/2"\nmatrix = [["1/2", "1/3"], ["1/2", "1/2"]]\n', "sum to 1"),
    ('[mechanism]\nalpha = "3/2"\nmatrix = [[1]]\n', "[0, 1]"),
    ("[mechanism\n", "TOML syntax error"),
])
def test_derive_bad_input_is_one_line_exit_2(runner, write_toml, body, words):
    result = run(runner, "derive", write_toml(body, "m"))
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpverify: ") and words in lines[0]


# Files TOML itself cannot hold in Python: nested deeper than the parser recurses, or an
# integer beyond Python's 4300-digit int-string limit (every loader parses through
# spec.reader.parse_toml: one line, exit 2, never an internal error).
DEEP = "x = " + "[" * 5000 + "]" * 5000 + "\n"
HUGE = "9" * 5000
UNREADABLE = {
    "deep": (DEEP, "nested too deeply"),
    "mechanism": ("[mechanism]\nalpha = 0.5\nmatrix = [[1, 0], [0, 1]]\nname = " + HUGE
                  + "\n", "too many digits"),
    "count": ('[problem]\nkind = "count"\nn = ' + HUGE + '\nalpha = 0.5\n[consumer]\n'
              'loss = "abs"\n', "too many digits"),
    "audited": ('[mechanism]\nalpha = 0.5\nmatrix = [[1, 0], [0, 1]]\n[consumer]\n'
                'loss = "abs"\nprior = ' + HUGE + "\n", "too many digits"),
}


@pytest.mark.parametrize("command", ["derive", "verify", "audit"])
@pytest.mark.parametrize("which", sorted(UNREADABLE))
def test_toml_python_cannot_read_is_bad_input_in_every_command(runner, write_toml, command,
                                                               which):
    body, words = UNREADABLE[which]
    path = write_toml(body, which)
    result = run(runner, command, path)
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("dpverify: ")]
    assert lines == [f"dpverify: {path}: " + lines[0].split(": ", 2)[2]], result.output
    assert words in lines[0]


def test_a_deep_but_readable_file_is_read(runner, write_toml):
    """Negative control: nesting the parser can read is no error of its own (the mechanism
    loader names the unknown key instead)."""
    path = write_toml("[mechanism]\nalpha = 0.5\nmatrix = [[1]]\nx = " + "[" * 50
                      + "]" * 50 + "\n", "nested")
    result = run(runner, "derive", path)
    assert result.exit_code == 2 and "unknown key" in result.output
    assert "nested too deeply" not in result.output


# --------------------------------------------------------------------------------------
# release


def test_release_with_check(runner):
    result = run(runner, "release", "--n", 10, "--alphas", "1/10,1/2,0.9", "--answer", 4,
                 "--seed", 7, "--check")
    assert result.exit_code == 0, result.output
    assert "check passed" in result.output and "stochastic" in result.output


def test_release_json_is_reproducible(runner):
    args = ("release", "--n", 8, "--alphas", "0,1/3,2/3,1", "--answer", 3, "--seed", 11,
            "--check", "--json")
    one = json.loads(run(runner, *args).output)
    two = json.loads(run(runner, *args).output)
    assert one == two
    assert one["ok"] and one["check"]["ok"] and one["check"]["arithmetic"] == "exact"
    assert [s["alpha"] for s in one["stages"]] == ["0", "1/3", "2/3", "1"]
    assert one["stages"][0]["released"] == 3  # alpha = 0: the exact answer
    assert all(s["transition_stochastic"] for s in one["stages"][1:])
    assert len(one["check"]["subsets"]) == 15
    for sub in one["check"]["subsets"]:
        assert sub["measured_alpha"] >= sub["promised_alpha"] - 1e-12
    released = [s["released"] for s in one["stages"]]
    assert all(0 <= r <= 8 for r in released)


def test_release_without_seed_prints_the_seed(runner):
    obj = json.loads(run(runner, "release", "--n", 3, "--alphas", "1/2", "--answer", 0,
                         "--json").output)
    assert isinstance(obj["seed"], int) and len(obj["stages"]) == 1 and "check" not in obj


def test_release_n_zero(runner):
    result = run(runner, "release", "--n", 0, "--alphas", "1/2,1", "--answer", 0, "--check")
    assert result.exit_code == 0


@pytest.mark.parametrize("args, words", [
    (("--n", 5, "--alphas", "1/2,1/3", "--answer", 1), "strictly increasing"),
    (("--n", 5, "--alphas", "1/2,1/2", "--answer", 1), "strictly increasing"),
    (("--n", 5, "--alphas", "1/2,x", "--answer", 1), "'x'"),
    (("--n", 5, "--alphas", "1/2,3/2", "--answer", 1), "[0, 1]"),
    (("--n", 5, "--alphas", "1/2", "--answer", 6), "--answer: 6"),
    (("--n", -1, "--alphas", "1/2", "--answer", 0), "--n: -1"),
    (("--n", 5, "--alphas", "1/2", "--answer", 1, "--seed", -3), "--seed"),
])
def test_release_bad_input_is_one_line_exit_2(runner, args, words):
    result = run(runner, "release", *args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpverify: ") and words in lines[0]


def test_release_check_too_large_is_exit_3(runner):
    result = run(runner, "release", "--n", 200, "--alphas", "0.1,0.2,0.3,0.4", "--answer", 1,
                 "--check")
    assert result.exit_code == 3 and "--check" in result.output


def test_release_without_check_on_a_large_n(runner):
    # n = 50 is already far too large to check (51^5 joint entries > MAX_JOINT_ENTRIES:
    # test_release_check_too_large_is_exit_3); n = 200 took seconds more for nothing new
    result = run(runner, "release", "--n", 50, "--alphas", "0.1,0.2,0.3,0.4", "--answer", 1,
                 "--seed", 1, "--json")
    assert result.exit_code == 0
    assert json.loads(result.output)["ok"] is True
    checked = run(runner, "release", "--n", 50, "--alphas", "0.1,0.2,0.3,0.4", "--answer", 1,
                  "--check")
    assert checked.exit_code == 3  # control: this n is one the check refuses


def test_release_exact_alphas_from_decimals():
    from dpverify.verifiers.count.release import parse_alphas as _alphas

    assert _alphas("0.1, 1/3,1") == [Fraction(1, 10), Fraction(1, 3), Fraction(1)]


def test_the_release_limit_of_the_command_line_is_the_librarys():
    """`--n`'s help names policy.MAX_RELEASE_N (the command line imports no verifier),
    the number the library enforces."""
    from dpverify.policy import MAX_RELEASE_N
    from dpverify.verifiers.count import release

    assert MAX_RELEASE_N == release.MAX_RELEASE_N
    assert f"N <= {MAX_RELEASE_N}" in every_command()["release"].params[0].help
