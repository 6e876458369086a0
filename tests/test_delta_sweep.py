"""`sweep --delta` and the plots of approximate privacy (sweeps/, plotting.py), and
`audit --profile` (verifiers/audit/profile.py): exact delta axes, rows with the best
interactive protocol and its witness (one file per point), no pure closed form at
delta > 0, the plot's curves by gid, a stored sweep read back against delta, and the
privacy profile against closed forms and the claims."""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import pytest
from click.testing import CliRunner

import dpverify
from dpverify import api
from dpverify.cli import main
from dpverify.errors import OptionError
from dpverify.sweeps.axes import Variable, parse_levels
from dpverify.sweeps.points import plan_points
from dpverify.sweeps.run import run_sweep
from dpverify.verifiers.options import VerifyOptions

ROOT = Path(__file__).resolve().parents[1]
XOR = ROOT / "problems" / "approximate" / "xor-2-delta.toml"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_a_delta_axis_is_exact_and_for_multiparty_problems_only():
    problem = dpverify.load(XOR)
    points = plan_points(problem, level=parse_levels("0:0.3:4", Variable.DELTA))
    assert [p.problem.spec.deltas[0] for p in points] == [F(0), F(1, 10), F(1, 5), F(3, 10)]
    assert points[1].source.endswith("@delta=0.1")
    with pytest.raises(OptionError, match="--delta applies to multi-party"):
        plan_points(dpverify.load(ROOT / "problems" / "count" / "abs-10.toml"),
                    level=parse_levels("0,0.1", Variable.DELTA))
    with pytest.raises(OptionError, match="one privacy level at a time"):
        api.sweep(problem, epsilon="1", delta="0.1")


@pytest.fixture(scope="module")
def delta_sweep(tmp_path_factory):
    from dpverify.runner.executors.local import LocalPool

    folder = tmp_path_factory.mktemp("sweep")
    with LocalPool(2) as pool:
        return run_sweep(dpverify.load(XOR), VerifyOptions(witness_dir=str(folder / "w")),
                         level=parse_levels("0,1/10,1/5", Variable.DELTA), executor=pool)


def test_rows_carry_delta_the_best_protocol_and_one_witness_per_point(delta_sweep):
    rows = delta_sweep.rows()
    assert "best_value" in delta_sweep.columns and "witness" in delta_sweep.columns
    by_delta = {}
    for row in rows:
        by_delta.setdefault(row["delta"], []).append(row)
    assert sorted(by_delta) == [0.0, 0.1, 0.2]
    assert all(r["verdict"] == "optimal" for r in by_delta[0.0])
    assert all("closed_form" not in r for r in rows)  # Corollary 3.1 is for delta = 0
    witnesses = set()
    for delta in (0.1, 0.2):
        for r in by_delta[delta]:
            assert r["verdict"] == "interaction-helps"
            assert r["relaxed_optimum"] >= r["best_value"] > r["rr_value"]
            witnesses.add(r["witness"])
    assert len(witnesses) == 4 and all(Path(w).is_file() for w in witnesses)
    csv_header = delta_sweep.to_csv().splitlines()[0].split(",")
    assert csv_header[:5] == ["problem", "kind", "epsilon", "lambda", "delta"]


def test_the_plot_draws_the_best_protocol_between_rr_and_the_bound(delta_sweep, tmp_path):
    pytest.importorskip("matplotlib")
    figure = delta_sweep.plot(tmp_path / "d.png")
    assert (tmp_path / "d.png").read_bytes()[:8] == PNG_SIGNATURE
    lines = {line.get_gid(): line for ax in figure.axes for line in ax.get_lines()
             if line.get_gid()}
    best = lines["best|observer|average|"]
    bound = lines["bound|observer|average|"]
    rr = lines["rr|observer|average|"]
    assert list(best.get_xdata()) == [0.0, 0.1, 0.2]
    for b, u, r in zip(best.get_ydata(), bound.get_ydata(), rr.get_ydata(), strict=True):
        assert r - 1e-12 <= b <= u + 1e-12
    assert "approximate" in figure.axes[1].get_xlabel()  # the gap panel, below
    # the gap panel: what the best protocol gains over RR, and the room the bound leaves
    advantage, room = lines["advantage|observer|average|"], lines["room|observer|average|"]
    assert list(advantage.get_ydata()) == pytest.approx(
        [b - r for b, r in zip(best.get_ydata(), rr.get_ydata(), strict=True)])
    assert list(room.get_ydata()) == pytest.approx(
        [u - r for u, r in zip(bound.get_ydata(), rr.get_ydata(), strict=True)])
    assert advantage.get_ydata()[0] == 0 and advantage.get_ydata()[2] > 0.01


def test_a_stored_delta_sweep_is_drawn_against_delta(tmp_path):
    pytest.importorskip("matplotlib")
    store = tmp_path / "s.db"
    got = invoke("sweep", str(XOR), "--delta", "0,1/10", "--store", str(store),
                 "--witness-dir", str(tmp_path / "w"), "--jobs", "1", "-q")
    assert got.exit_code == 1, got.output  # interaction-helps at 1/10
    sweep = api.family(api.results(store=store))
    assert sweep.x == "delta"
    assert [r["delta"] for r in sweep.rows()] == [0.0, 0.0, 0.1, 0.1]
    figure = sweep.plot(tmp_path / "f.png")
    gids = {line.get_gid() for ax in figure.axes for line in ax.get_lines()}
    assert "best|observer|average|" in gids


# -- privacy profiles ---------------------------------------------------------------------
def rr_delta_protocol(write_toml) -> Path:
    text = ('[problem]\nkind = "protocol"\nname = "rr"\nparties = 1\nlambda = "3"\n'
            'delta = "1/10"\n[[round]]\nparty = 1\nmessages = 4\n'
            'kernel = [["1/10", "27/40", "9/40", 0], [0, "9/40", "27/40", "1/10"]]\n'
            '[observer]\nfunction = "bit:1"\n')
    return write_toml(text, "rr")


def test_the_profile_of_rr_delta_in_closed_form(write_toml):
    """RR(3, 1/10) at lambda' = e^eps <= 3 spends 1/10 + (9/10)(3 - lambda')/4 (the draft's
    closed form), and 1/10 from ln 3 on."""
    profile = api.privacy_profile(rr_delta_protocol(write_toml), epsilons="0,0.5,2")
    (row,) = profile.deltas
    assert row[0].lower == row[0].upper == F(1, 10) + F(9, 10) * F(2, 4)  # exact at 0
    import math

    expected = 0.1 + 0.9 * (3 - math.exp(0.5)) / 4
    assert float(row[1].lower) == pytest.approx(expected, abs=1e-15)
    assert row[1].upper - row[1].lower < F(1, 10**15)
    assert row[2].upper == F(1, 10)


def test_audit_profile_through_the_cli(write_toml, tmp_path):
    path = rr_delta_protocol(write_toml)
    got = invoke("audit", str(path), "--profile", "--epsilons", "0:1.5:4", "--json")
    assert got.exit_code == 0, got.output
    profile = json.loads(got.output)[0]["privacy_profile"]
    assert profile["epsilons"] == [0.0, 0.5, 1.0, 1.5]
    (party,) = profile["parties"]
    assert party["claimed_delta"] == "1/10" and party["deltas"][-1] == 0.1
    assert party["deltas"] == sorted(party["deltas"], reverse=True)
    shown = invoke("audit", str(path), "--profile")
    assert "privacy profile" in shown.output
    bad = invoke("audit", str(path), "--epsilons", "0:1:3")
    assert bad.exit_code == 2 and "--profile" in bad.output


def test_audit_plot_draws_every_party(write_toml, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "p.png"
    got = invoke("audit", str(rr_delta_protocol(write_toml)), "--plot", str(out), "-q")
    assert got.exit_code == 0, got.output
    assert out.read_bytes()[:8] == PNG_SIGNATURE
