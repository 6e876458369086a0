"""The survey under approximate privacy (research/survey.py; docs/theory.md 7.12): every
Boolean function of 2 bits at (epsilon, delta) levels, one per class of relabellings (the
counts agree with every function verified); the verdicts (RR(epsilon, delta) optimal for the
constants and dictators, interaction helps, closed, for the other ten); resumable from the
store (a second run reads every case, with a control that computes when the store is
empty); the heat maps; the command's options."""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.errors import OptionError
from dpverify.research.survey import SurveyPlan, parse_deltas, run_survey
from dpverify.runner.store import Store
from dpverify.spec import load
from dpverify.verifiers.options import VerifyOptions

OPTIONS = VerifyOptions()


def plan(**kw) -> SurveyPlan:
    base = dict(alphabet=2, parties=2, epsilons=(F(1),), accuracies=("worst",),
                deltas=(F(1, 10),))
    base.update(kw)
    return SurveyPlan(**base)


def test_every_function_of_two_bits_and_its_classes(tmp_path: Path) -> None:
    rows = []
    for symmetry in (True, False):
        report = run_survey(plan(symmetry=symmetry), OPTIONS, save_dir=tmp_path / str(symmetry))
        rows.append([{k: v for k, v in row.items() if k != "classes"} for row in report.rows()])
        assert report.classes == (4 if symmetry else 16)
    assert rows[0] == rows[1]
    (row,) = rows[0]
    assert row["delta"] == 0.1 and row["functions"] == 16
    # constants and dictators: RR(epsilon, delta) is optimal; AND-like and XOR-like: not
    assert row["optimal"] == 6 and row["interaction-helps"] == 10 and row["closed"] == 10
    assert row["open"] == row["error"] == 0
    # the largest gain is XOR's, 2 delta (1 - delta)(1 - p)^2 (docs/theory.md 7.5)
    import math

    p = math.e / (1 + math.e)
    assert row["largest_gap_function"] == "0110"
    assert row["largest_gap"] == pytest.approx(2 * 0.1 * 0.9 * (1 - p) ** 2, abs=1e-9)
    saved = sorted((tmp_path / "True").glob("*.toml"))
    assert saved and all(load(s).expect[0].verdict == "interaction-helps" for s in saved)
    assert all("-d0.1-" in s.name for s in saved)


def test_a_survey_resumes_from_the_store(tmp_path: Path) -> None:
    """The second run reads every case from the store and computes none, with the same
    rows; the first run (control) and a run on another, empty store compute every case."""
    path = tmp_path / "store.sqlite"
    with Store(path) as store:
        first = run_survey(plan(), OPTIONS, store=store, jobs=1)
    assert first.results and not any(r.stored for r in first.results)
    with Store(path) as store:
        again = run_survey(plan(), OPTIONS, store=store, jobs=1)
    assert all(r.stored for r in again.results)
    assert again.rows() == first.rows()
    with Store(tmp_path / "empty.sqlite") as store:
        fresh = run_survey(plan(), OPTIONS, store=store, jobs=1)
    assert not any(r.stored for r in fresh.results)


def test_deltas_and_alphabets_are_checked() -> None:
    assert parse_deltas("1/20, 0.1,1/20") == (F(1, 20), F(1, 10))
    for bad in ("0", "1", "-1/2", "x"):
        with pytest.raises(OptionError):
            parse_deltas(bad)
    with pytest.raises(OptionError, match="bits"):
        SurveyPlan(3, 2, (F(1),), deltas=(F(1, 10),))
    with pytest.raises(OptionError, match="give --delta"):
        SurveyPlan(2, 2, (F(1),))


def test_the_command_with_a_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    figure = tmp_path / "survey.svg"
    done = CliRunner().invoke(main, [
        "survey", "--alphabet", "2", "--parties", "2", "--epsilon", "0.5,1",
        "--delta", "1/20,1/10", "--accuracy", "worst", "-j", "1", "--no-store",
        "--save", str(tmp_path / "saved"), "--plot", str(figure), "--json"])
    assert done.exit_code == 1, done.output  # interaction helps: a finding
    report = json.loads(done.stdout)
    assert report["deltas"] == [0.05, 0.1]
    assert [(r["epsilon"], r["delta"]) for r in report["rows"]] == [
        (0.5, 0.05), (0.5, 0.1), (1.0, 0.05), (1.0, 0.1)]
    svg = figure.read_text(encoding="utf-8")
    assert svg.count('id="cell|indicator|worst|') == 4 and "10/16" in svg
    refused = CliRunner().invoke(main, ["survey", "--alphabet", "3", "--parties", "1",
                                        "--epsilon", "1", "--no-store",
                                        "--plot", str(tmp_path / "x.png")])
    assert refused.exit_code == 2 and "--delta" in refused.output
