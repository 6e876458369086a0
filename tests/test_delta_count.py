"""Count queries under (epsilon, delta)-DP (verifiers/count/approximate.py,
theory/approx/count.py): the LP against an independent LP written with every set T of
KOV's eq. (12), the one-bit closed form (RR(epsilon, delta)), delta = 0 as today, exact
gaps, `derive` with delta (privacy, tradeoff curves against RR(epsilon, delta)) and the
refusals."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction as F

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import linprog

from dpverify.cli import main
from dpverify.errors import SpecError
from dpverify.spec import loads
from dpverify.spec.count_loader import loads_mechanism
from dpverify.spec.losses import loss_table
from dpverify.status import ExitStatus
from dpverify.theory.approx.count import (
    mechanism_delta,
    mix_to_delta,
    pair_serves,
    rr_tradeoff,
    tradeoff,
)
from dpverify.theory.exact import exp_bracket
from dpverify.verifiers.count.approximate import delta_derivation
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.options import VerifyOptions

OPTIONS = VerifyOptions()


def count(n: int, level: str, delta: str, consumer: str = 'loss = "abs"') -> str:
    return (f'[problem]\nkind = "count"\nname = "c"\nn = {n}\n{level}\ndelta = "{delta}"\n'
            f"[consumer]\n{consumer}\n")


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def set_lp_optimum(loss: np.ndarray, alpha: float, delta: float, side, prior=None) -> float:
    """The (epsilon, delta) optimum written as KOV's eq. (12) itself: for every ordered
    adjacent pair and every set T of released answers, x[i, T] <= x[j, T] / alpha + delta
    (scipy's linprog; no slacks, no hockey-stick sums)."""
    N = loss.shape[0]
    nx = N * N
    minimax = prior is None
    A_ub, b_ub, A_eq, b_eq = [], [], [], []
    for i in range(N):
        row = np.zeros(nx + minimax)
        row[i * N:(i + 1) * N] = 1
        A_eq.append(row)
        b_eq.append(1.0)
    for i in range(N - 1):
        for a, b in ((i, i + 1), (i + 1, i)):
            for size in range(1, N + 1):
                for T in itertools.combinations(range(N), size):
                    row = np.zeros(nx + minimax)
                    for r in T:
                        row[a * N + r] += 1.0
                        row[b * N + r] -= 1.0 / alpha
                    A_ub.append(row)
                    b_ub.append(delta)
    c = np.zeros(nx + minimax)
    if minimax:
        c[-1] = 1.0
        for i in side:
            row = np.zeros(nx + 1)
            row[i * N:(i + 1) * N] = loss[i]
            row[-1] = -1.0
            A_ub.append(row)
            b_ub.append(0.0)
    else:
        c[:nx] = (np.asarray(prior)[:, None] * loss).ravel()
    bounds = [(0, None)] * nx + [(None, None)] * minimax
    res = linprog(c, A_ub=np.array(A_ub), b_ub=b_ub, A_eq=np.array(A_eq), b_eq=b_eq,
                  bounds=bounds, method="highs")
    assert res.status == 0
    return float(res.fun)


@pytest.mark.parametrize(("n", "loss", "delta", "model"), [
    (2, "abs", "1/10", ""), (3, "square", "1/20", ""), (3, "indicator", "1/5", ""),
    (2, "abs", "1/10", 'model = "bayes"\nprior = [1, 2, 3]'),
    (3, "abs", "3/10", "side_information = [1, 3]")])
def test_the_lp_is_eq_12_over_every_set(n, loss, delta, model):
    text = count(n, 'alpha = "1/2"', delta, f'loss = "{loss}"\n{model}')
    spec = loads(text, source="<c>")
    (r,) = verify_spec(spec, OPTIONS).results
    table = np.array([[float(v) for v in row] for row in loss_table(spec)])
    prior = None if spec.prior is None else np.array([float(p) for p in spec.prior])
    expected = set_lp_optimum(table, 0.5, float(F(delta)), spec.side_information, prior)
    assert r.mechanism_optimum == pytest.approx(expected, abs=1e-8)
    assert r.geometric_value >= r.mechanism_optimum - 1e-12


def test_one_bit_is_rr_delta_in_closed_form():
    """n = 1, indicator loss, minimax: the least error over (lambda, delta)-DP mechanisms
    is 1 - (delta + (1 - delta) lambda / (1 + lambda)) (RR(epsilon, delta)); the geometric
    mechanism makes 1 / (1 + lambda): a gap, proved exactly."""
    spec = loads(count(1, 'alpha = "1/3"', "1/10", 'loss = "indicator"'), source="<c>")
    (r,) = verify_spec(spec, OPTIONS).results
    assert r.mechanism_optimum == pytest.approx(1 - F(31, 40), abs=1e-12)
    assert r.geometric_value == pytest.approx(1 / 4, abs=1e-12)
    assert r.verdict.value == "gap" and "proved exactly" in r.reason
    assert r.delta == "1/10" and r.best == "lp"


@pytest.mark.parametrize("body", ['loss = "abs"', 'loss = "square"\nside_information = [2, 5]',
                                  'loss = "abs"\nmodel = "bayes"\nprior = [1,1,1,1,1,1,1]'])
def test_delta_zero_is_todays_count_result(body):
    pure = loads(count(6, "epsilon = 0.7", "0", body).replace('delta = "0"\n', ""),
                 source="<c>")
    zero = loads(count(6, "epsilon = 0.7", "0", body), source="<c>")
    a, b = verify_spec(pure, OPTIONS).to_dict(), verify_spec(zero, OPTIONS).to_dict()
    for r in a["results"] + b["results"]:
        r.pop("seconds")
    assert a == b and "delta" not in a


def test_the_gap_grows_with_delta_and_vanishes_at_zero():
    values = []
    for delta in ("0", "1/100", "1/10", "3/10"):
        (r,) = verify_spec(loads(count(4, "epsilon = 1", delta), source="<c>"),
                           OPTIONS).results
        values.append(r.mechanism_optimum)
        if delta == "0":
            assert r.verdict.value == "optimal"
    assert values == sorted(values, reverse=True) and values[0] > values[-1]


def test_the_cli_json_and_exit_status(write_toml):
    path = write_toml(count(5, "epsilon = 1", "1/10"), "c")
    got = run("verify", str(path), "--json")
    assert got.exit_code == ExitStatus.FAILED  # a gap: delta helps this consumer
    data = json.loads(got.output)[0]
    assert data["delta"] == "1/10" and data["results"][0]["delta"] == "1/10"
    assert data["results"][0]["verdict"] == "gap"


def test_count_delta_is_validated(load_toml):
    with pytest.raises(SpecError, match="delta"):
        load_toml(count(3, "epsilon = 1", "1"))
    with pytest.raises(SpecError, match="one delta"):
        load_toml(count(3, "epsilon = 1", "0").replace('delta = "0"', "delta = [0.1, 0.1]"))


# -- the exact pieces ------------------------------------------------------------------------
def test_hockey_sums_and_the_repair_are_exact():
    x = [[F(3, 4), F(1, 4)], [F(1, 4), F(3, 4)]]
    assert mechanism_delta(x, F(3)) == 0 and mechanism_delta(x, F(2)) == F(1, 4)
    mixed, t = mix_to_delta(x, F(2), F(1, 10))
    assert mechanism_delta(mixed, F(2)) <= F(1, 10) < mechanism_delta(x, F(2)) and t > 0
    assert all(sum(row) == 1 for row in mixed)


def test_the_tradeoff_of_rr_delta_is_rrs():
    lam, d = F(3), F(1, 10)
    rr = [[d, (1 - d) * lam / (1 + lam), (1 - d) / (1 + lam), F(0)],
          [F(0), (1 - d) / (1 + lam), (1 - d) * lam / (1 + lam), d]]
    for a in (F(0), F(1, 20), F(9, 40), F(1, 2), F(9, 10), F(1)):
        assert tradeoff(rr[0], rr[1], a) == rr_tradeoff(lam, d, a)
    assert pair_serves(rr, 0, 1, lam, d)[0] is True
    merged = [[rr[0][0] + rr[0][1], rr[0][2] + rr[0][3]],
              [rr[1][0] + rr[1][1], rr[1][2] + rr[1][3]]]  # the negative control
    assert pair_serves(merged, 0, 1, lam, d)[0] is False


# -- derive --------------------------------------------------------------------------------
RR = '[["1/10", "27/40", "9/40", 0], [0, "9/40", "27/40", "1/10"]]'


def mechanism(matrix: str, level: str = 'alpha = "1/3"', delta: str = "1/10") -> str:
    return f'[mechanism]\n{level}\ndelta = "{delta}"\nmatrix = {matrix}\n'


def test_derive_rr_delta_serves_every_consumer(write_toml):
    got = run("derive", str(write_toml(mechanism(RR), "rr")), "--json")
    assert got.exit_code == ExitStatus.OK, got.output
    data = json.loads(got.output)
    assert data["private"] is True and data["achieved_delta"] == "1/10"
    assert data["derivable"] is True and data["covers"] == "every consumer"


def test_derive_refuses_what_overspends_or_loses_information(write_toml):
    over = mechanism(RR, delta="1/20")
    got = json.loads(run("derive", str(write_toml(over, "over")), "--json").output)
    assert got["private"] is False and got["derivable"] is False
    merged = mechanism('[["31/40", "9/40"], ["9/40", "31/40"]]')
    path = write_toml(merged, "merged")
    got = run("derive", str(path))
    assert got.exit_code == ExitStatus.FAILED and "Does not serve every consumer" in got.output


def test_derive_at_an_irrational_level_uses_brackets():
    """epsilon = 1: e is irrational, so privacy and the tests are decided against the
    rational brackets of e. A near-RR mechanism with a ratio r of its said columns is
    private when r <= lambda_lo, and then serves the pair only if r >= lambda_hi; a ratio
    inside [lambda_lo, lambda_hi] (the bracket is 1e-19 wide) is undecided."""
    lo, hi = exp_bracket(F(1))

    def with_ratio(r: F) -> str:
        p = F(9, 10) * r / (1 + r)
        return (f'[["1/10", "{p}", "{F(9, 10) - p}", 0], '
                f'[0, "{F(9, 10) - p}", "{p}", "1/10"]]')

    below = delta_derivation(loads_mechanism(mechanism(with_ratio(lo - F(1, 10**12)),
                                                       "epsilon = 1")))
    assert below.private is True and below.pairs[0].serves is False
    above = delta_derivation(loads_mechanism(mechanism(with_ratio(hi + F(1, 10**12)),
                                                       "epsilon = 1")))
    assert above.private is False and above.derivable is False
    inside = delta_derivation(loads_mechanism(mechanism(with_ratio((lo + hi) / 2),
                                                        "epsilon = 1")))
    assert inside.private is None and inside.derivable is None


def test_float_entries_meet_the_claim_within_tol(write_toml):
    """RR(3, 0.1) in TOML floats: 0.1 is not 1/10, so exactly it spends a hair more than
    1/10, within --tol; --tol 0 refuses it (the negative control)."""
    text = ('[mechanism]\nalpha = "1/3"\ndelta = 0.1\n'
            "matrix = [[0.1, 0.675, 0.225, 0.0], [0.0, 0.225, 0.675, 0.1]]\n")
    path = write_toml(text, "floats")
    assert json.loads(run("derive", str(path), "--json").output)["private"] is True
    strict = json.loads(run("derive", str(path), "--json", "--tol", "0").output)
    assert strict["private"] is False


def test_a_mechanism_audit_refuses_delta(write_toml):
    text = mechanism(RR) + '[consumer]\nloss = "abs"\n'
    got = run("audit", str(write_toml(text, "m")))
    assert got.exit_code == ExitStatus.UNDECIDED and "delta > 0" in got.output
