"""Issue 26, point 10: approximate privacy and count queries read right. The delta table's
columns (bound, RR(epsilon, delta), best found, the advantage shown), `verify --show-rules`
on count problems (the geometric mechanism's best post-processing and an optimal
mechanism, checked against the losses they claim), `prior = "uniform"`, and the hints of
a count file without `kind` and of `gain = "abs"` in a multi-party file. (The audit of a
witness is in test_delta_audit.py and test_delta_verify.py.)"""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from rich.console import Console

from dpverify.cli import main
from dpverify.console.verify import print_problem
from dpverify.spec import loads
from dpverify.spec.losses import loss_table
from dpverify.status import ExitStatus
from dpverify.theory.count.geometric import bayes_loss, geometric_matrix, minimax_loss
from dpverify.verifiers.approximate.result import ApproxResult
from dpverify.verifiers.result import ProblemResult, Verdict

ROOT = Path(__file__).resolve().parents[1]
COUNT = ROOT / "problems" / "count"


def run(*args: str):
    return CliRunner().invoke(main, list(args))


# -- approximate privacy: the advantage, not the room -----------------------------------------
def approx(bound: float, rr: float, best: float) -> ProblemResult:
    r = ApproxResult("observer", "average", (F(1, 10),) * 2, bound, rr, best, None,
                     Verdict.INTERACTION_HELPS, "", 0.1)
    return ProblemResult("p", "p.toml", "multiparty", (r,), {"delta": ["1/10", "1/10"]})


def shown(result: ProblemResult) -> str:
    console = Console(width=200, record=True, color_system=None)
    print_problem(console, result)
    return console.export_text()


def test_the_delta_table_shows_the_advantage_not_the_bound_minus_rr():
    """bound 0.7, RR 0.6, best 0.62: the table shows the advantage 0.02 (best - RR), not
    0.1, which interaction is only allowed (room), not shown, to gain."""
    result = approx(0.7, 0.6, 0.62)
    text = shown(result)
    header = text.splitlines()[1]
    for column in ("bound", "RR(epsilon, delta)", "best found", "advantage"):
        assert column in header
    assert "2.00e-02" in text and "1.00e-01" not in text
    (r,) = result.to_dict()["results"]
    assert r["advantage"] == pytest.approx(0.02) and r["gap"] == pytest.approx(0.1)
    # the control: a best found at RR shows no advantage
    assert "0.00e+00" in shown(approx(0.7, 0.6, 0.6))
    # no best found (an error): no advantage
    assert ApproxResult("observer", "average", (), 0.7, 0.6, None, None, Verdict.ERROR, "",
                        0.0).advantage is None


# -- count problems: the rules ------------------------------------------------------------
@pytest.mark.parametrize("name", ["abs-10", "bayes-abs-10", "parity-gap-6"])
def test_show_rules_of_a_count_problem_are_the_mechanisms_behind_its_numbers(name):
    """The JSON rule's post-processing T makes G T reach `geometric_value`, and its
    mechanism reaches `mechanism_optimum`: both row-stochastic; computed here afresh."""
    path = COUNT / f"{name}.toml"
    got = run("verify", str(path), "--show-rules", "--json")
    data = json.loads(got.output)[0]
    (r,) = data["results"]
    T = np.array(r["rule"]["post_processing"])
    x = np.array(r["rule"]["mechanism"])
    spec = loads(path.read_text(), source=str(path))
    n = spec.n
    assert T.shape == x.shape == (n + 1, n + 1)
    for m in (T, x):
        assert np.all(m >= -1e-12) and np.allclose(m.sum(axis=1), 1, atol=1e-9)
    loss = np.array([[float(v) for v in row] for row in loss_table(spec)])
    G = geometric_matrix(spec.alpha, n)
    if spec.model == "bayes":
        prior = np.array([float(p) for p in spec.prior])
        value = lambda m: float(bayes_loss(m, loss, prior))  # noqa: E731
    else:
        value = lambda m: float(minimax_loss(m, loss, spec.side_information))  # noqa: E731
    assert value(G @ T) == pytest.approx(r["geometric_value"], abs=1e-9)
    assert value(x) == pytest.approx(r["mechanism_optimum"], abs=1e-9)
    text = run("verify", str(path), "--show-rules").output
    assert "the best post-processing of the geometric mechanism" in text
    assert "an optimal mechanism" in text and "release k" in text
    # the control: without --show-rules, no rule
    plain = json.loads(run("verify", str(path), "--json").output)[0]
    assert "rule" not in plain["results"][0]
    assert "release k" not in run("verify", str(path)).output


def test_a_large_mechanism_is_left_to_the_json(write_toml):
    path = write_toml('[problem]\nkind = "count"\nn = 20\nalpha = "1/2"\n'
                      '[consumer]\nloss = "abs"\n', "abs-20")
    text = run("verify", str(path), "--show-rules").output
    assert "21 x 21: too large to print here" in text
    assert "\n       20 │" in text  # the post-processing lists every row


# -- prior = "uniform" ---------------------------------------------------------------------
BAYES = '''[problem]
kind = "count"
n = 6
alpha = "1/2"
[consumer]
loss = "abs"
model = "bayes"
{side}prior = {prior}
'''


@pytest.mark.parametrize("side,weights", [
    ("", "[1, 1, 1, 1, 1, 1, 1]"),
    ("side_information = [2, 5]\n", "[0, 0, 1, 1, 1, 1, 0]"),
])
def test_a_uniform_prior_is_equal_weights_on_the_side_information(write_toml, side,
                                                                  weights):
    uniform = write_toml(BAYES.format(side=side, prior='"uniform"'), "uniform")
    listed = write_toml(BAYES.format(side=side, prior=weights), "listed")
    a = loads(uniform.read_text(), source="u")
    b = loads(listed.read_text(), source="l")
    assert a.prior == b.prior and sum(a.prior) == 1
    got = [json.loads(run("verify", str(p), "--json").output)[0]["results"][0]
           for p in (uniform, listed)]
    assert got[0]["mechanism_optimum"] == got[1]["mechanism_optimum"]
    # the control: a skewed prior gives another optimum
    skewed = write_toml(BAYES.format(side=side, prior=weights.replace("1]", "5]")
                                     if not side else "[0, 0, 5, 1, 1, 1, 0]"), "skewed")
    other = json.loads(run("verify", str(skewed), "--json").output)[0]["results"][0]
    assert other["mechanism_optimum"] != got[0]["mechanism_optimum"]


def test_a_prior_that_is_neither_uniform_nor_weights_names_both(write_toml):
    path = write_toml(BAYES.format(side="", prior='"flat"'), "flat")
    got = run("verify", str(path))
    assert got.exit_code == ExitStatus.BAD_INPUT
    assert "`consumer.prior`" in got.output and '"uniform"' in got.output


# -- hints ------------------------------------------------------------------------------
def test_a_count_file_without_kind_is_told_to_say_kind(write_toml):
    for text, key in [('[problem]\nn = 4\nepsilon = 1\n[consumer]\nloss = "abs"\n',
                       "`consumer`"),
                      ('[problem]\nn = 4\nalpha = "1/2"\n', "`problem.n`")]:
        got = run("verify", str(write_toml(text, "nokind")))
        assert got.exit_code == ExitStatus.BAD_INPUT
        assert key in got.output and 'kind = "count"' in got.output
        assert "unknown key" not in got.output and "Traceback" not in got.output
    # the control: with the kind, the same file verifies
    fixed = write_toml('[problem]\nkind = "count"\nn = 4\nepsilon = 1\n[consumer]\n'
                       'loss = "abs"\n', "kind")
    assert run("verify", str(fixed)).exit_code == ExitStatus.OK
    # and a multi-party file that says its kind gets the plain message
    said = write_toml('[problem]\nkind = "multiparty"\nparties = 2\nepsilon = 1\n'
                      '[consumer]\nloss = "abs"\n', "said")
    assert "unknown key" in run("verify", str(said)).output


@pytest.mark.parametrize("gain,suggestion", [("abs", '"-abs"'), ("square", '"-square"'),
                                              ("absolute", None)])
def test_a_loss_named_as_a_gain_suggests_its_negation(write_toml, gain, suggestion):
    path = write_toml(f'[problem]\nparties = 2\nepsilon = 1\n[observer]\n'
                      f'function = "sum"\ngain = "{gain}"\n', "gain")
    got = run("verify", str(path))
    assert got.exit_code == ExitStatus.BAD_INPUT and "`observer.gain`" in got.output
    assert ("did you mean" in got.output) is (suggestion is not None)
    if suggestion:
        assert f"did you mean {suggestion}" in got.output
    fixed = path.read_text().replace(f'"{gain}"', '"-abs"')
    assert run("verify", str(write_toml(fixed, "fixed"))).exit_code == ExitStatus.OK
