"""`dpverify falsify`: random protocols meet their levels, the search never beats the bound
and comes close to it, and a tampered bound produces a counterexample file that audits."""

from __future__ import annotations

import dataclasses
import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.research.falsify import SearchOptions, falsify
from dpverify.spec import load
from dpverify.spec.protocol_model import ProtocolSpec
from dpverify.theory.protocols.random import (
    extreme_kernel,
    perturb,
    random_kernel,
    random_protocol,
    rr_protocol,
    within_budget,
)
from dpverify.theory.protocols.transcripts import achieved_lambdas
from dpverify.verifiers.options import VerifyOptions

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"


def column_ratio(K: np.ndarray) -> float:
    return float(np.max(K.max(axis=0) / K.min(axis=0)))


@pytest.mark.parametrize("lam", [1.0, 1.5, 3.0, 50.0])
def test_random_kernels_are_stochastic_and_within_budget(lam):
    rng = np.random.default_rng(1)
    for draw in (random_kernel, extreme_kernel):
        for messages in (2, 3, 5):
            K = draw(rng, 2, messages, lam)
            assert np.allclose(K.sum(axis=1), 1.0, atol=1e-12) and (K >= 0).all()
            assert column_ratio(K) <= lam * (1 + 1e-12)


def test_within_budget_is_the_least_mixture():
    """A kernel already inside the budget is left alone; one outside ends on its edge."""
    K = np.array([[0.6, 0.4], [0.4, 0.6]])
    assert within_budget(K, 2.0) is K
    tight = within_budget(np.array([[1.0, 0.0], [0.0, 1.0]]), 3.0)
    assert column_ratio(tight) == pytest.approx(3.0, rel=1e-12)


def test_random_protocols_and_their_moves_meet_the_levels():
    """Budgets split over rounds compose back to at most each party's level, on every
    transcript (measured from P, independently of the budgets)."""
    rng = np.random.default_rng(7)
    lambdas = [2.0, 3.0, 1.0, 5.0]
    for _ in range(40):
        protocol = random_protocol(rng, lambdas, 4, 3)
        for _ in range(3):
            protocol = perturb(rng, protocol, 0.5)
        P = protocol.transcripts().num
        assert np.allclose(P.sum(axis=1), 1.0, atol=1e-12)
        for achieved, level in zip(achieved_lambdas(protocol.transcripts()), lambdas,
                                   strict=True):
            assert achieved <= level * (1 + 1e-12)


def test_the_rr_seed_achieves_the_levels_exactly():
    levels = achieved_lambdas(rr_protocol([2.0, 3.0]).transcripts())
    assert levels == pytest.approx((2.0, 3.0), rel=1e-14)


def campaign(name: str, tmp_path: Path, **kw):
    path = PROBLEMS / name
    spec = load(path)
    document = tomllib.loads(path.read_text(encoding="utf-8"))
    options = SearchOptions(**{"protocols": 30, "rounds": 3, "messages": 2, "seed": 3,
                               "climb": 15, **kw})
    return falsify(spec, document, options, VerifyOptions(), counterexample_dir=tmp_path)


@pytest.mark.parametrize("name", ["xor-2.toml", "sum-abs-4.toml"])
def test_no_protocol_beats_the_bound_and_the_best_comes_close(tmp_path, name):
    result = campaign(name, tmp_path)
    assert result.results and not result.counterexamples
    for r in result.results:
        assert r.verdict.value == "optimal" and r.counterexample is None
        assert r.best_value <= r.bound + 1e-9 * max(1.0, abs(r.bound))
        assert abs(r.bound - r.best_value) <= 1e-3 * abs(r.bound)  # RR is in the family
        assert r.best_searched is not None and r.best_searched <= r.best_value
        assert r.protocols == 1 + 30 + 2 * 15
    assert not list(tmp_path.iterdir())


def test_a_tampered_bound_gives_a_counterexample_that_audits(tmp_path, monkeypatch):
    """Negative control: with the bound lowered by 0.01, RR (in the family) beats it. The
    counterexample is written as a protocol file that loads, meets the claimed levels and
    reaches the value reported."""
    import dpverify.research.falsify as module

    real = module.verify_agent

    def tampered(*args, **kwargs):
        result = real(*args, **kwargs)
        return dataclasses.replace(result, bound=result.bound - 0.01)

    monkeypatch.setattr(module, "verify_agent", tampered)
    result = campaign("xor-2.toml", tmp_path, protocols=5, climb=0)
    assert len(result.counterexamples) == len(result.results) == 2
    for r in result.results:
        assert r.verdict.value == "contradiction" and r.best_value > r.bound
        spec = load(r.counterexample)
        assert isinstance(spec, ProtocolSpec) and spec.exact is False
        from dpverify.verifiers.audit.protocol import audit_protocol

        monkeypatch.undo()
        audited = audit_protocol(spec, VerifyOptions())
        assert audited.header["private"] is True
        got = {(a.agent, a.accuracy): a for a in audited.results}[(r.agent, r.accuracy)]
        assert got.protocol_value == pytest.approx(r.best_value, abs=1e-12)


def test_cli_json_and_exit_status(tmp_path):
    out = CliRunner().invoke(main, ["falsify", str(PROBLEMS / "xor-2.toml"), "--protocols", "10",
                                    "--climb", "5", "--json", "--seed", "1",
                                    "--save-best", str(tmp_path / "best.toml")])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert [(r["agent"], r["accuracy"]) for r in rows] == [("observer", "average"),
                                                            ("observer", "worst")]
    for r in rows:
        assert set(r) >= {"agent", "accuracy", "protocols", "best_value", "bound", "ratio",
                          "counterexample"}
        assert r["counterexample"] is None and r["ratio"] == pytest.approx(1.0, abs=1e-9)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best-observer-average.toml",
                                                          "best-observer-worst.toml"]


def test_the_same_seed_gives_the_same_campaign(tmp_path):
    a = campaign("xor-2.toml", tmp_path, protocols=8, climb=4)
    b = campaign("xor-2.toml", tmp_path, protocols=8, climb=4)
    assert [r.to_json() for r in a.results] == [r.to_json() for r in b.results]


@pytest.mark.parametrize("args, message", [
    (["problems/count/parity-gap-6.toml"], "a count problem"),
    (["problems/xor-2.toml", "--messages", "16", "--rounds", "4"], "at most 4,096 are searched"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    out = CliRunner().invoke(main, ["falsify", *[str(ROOT / a) if a.endswith(".toml") else a
                                                 for a in args]])
    assert out.exit_code == 2, out.output
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_levels_from_epsilon_are_met_within_the_margin():
    """Budgets are drawn a factor (1 - 1e-12) inside epsilon, so the float levels never
    exceed e^epsilon."""
    rng = np.random.default_rng(0)
    lam = math.exp(1.2)
    for _ in range(30):
        protocol = random_protocol(rng, [lam, lam], 4, 2)
        assert max(achieved_lambdas(protocol.transcripts())) <= lam
