"""Typed results end to end (issue 24 point 4): the result JSON of every kind and setting
reads back into its typed result and writes the same JSON again; every reason has its code
beside it; verdicts, categories and their styles come from one place (dpverify/verdict.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.console import CATEGORY_STYLE, VERDICT_STYLE
from dpverify.reasons import ReasonCode
from dpverify.spec.setting import Setting
from dpverify.status import FAILED_CATEGORIES, UNDECIDED_CATEGORIES, ExitStatus, verdict_status
from dpverify.verdict import Category, ExitClass, Verdict, category_of, worst_verdict
from dpverify.verifiers.dispatch import RESULT_TYPES, read_result
from dpverify.verifiers.result import ProblemResult

ROOT = Path(__file__).resolve().parents[1]

# One run per (kind, setting) that has a result type, on shipped files (small ones).
RUNS: list[tuple[tuple[str, Setting], tuple[str, ...]]] = [
    (("multiparty", Setting.BITS), ("verify", "problems/xor-2.toml", "--certify")),
    (("multiparty", Setting.BITS), ("verify", "problems/parties-and-observer-4.toml",
                                    "--cross-check", "--grid", "2")),
    (("multiparty", Setting.SYMBOLS), ("verify", "problems/multisymbol/max-3x2-gap.toml")),
    (("multiparty", Setting.DELTA), ("verify", "problems/approximate/bit-1-delta.toml",
                                     "problems/approximate/xor-2-delta.toml",
                                     "problems/approximate/and-2-party-delta.toml")),
    (("count", Setting.PURE), ("verify", "problems/count/parity-gap-6.toml")),
    (("count", Setting.DELTA), ("verify", "problems/approximate/count-indicator-1-delta.toml")),
    (("protocol", Setting.BITS), ("audit", "problems/protocols/claims-too-much.toml")),
    (("mechanism", Setting.PURE), ("audit", "examples/remap-audit.toml")),
]


def _json(args: tuple[str, ...], *extra: str) -> list[dict[str, Any]]:
    got = CliRunner().invoke(main, [*args, *extra, "--json"], catch_exceptions=False)
    data = json.loads(got.stdout)
    return data if isinstance(data, list) else [data]


def _reasons(value: Any, where: str = "") -> list[tuple[str, Any]]:
    """Every (place, reason_code) of a dict holding a `reason` (a proof's own reason, why
    its construction fell back, is part of the proof and has none)."""
    found: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        if "reason" in value and not where.endswith("proof"):
            found.append((where, value.get("reason_code", "missing")))
        for key, item in value.items():
            found += _reasons(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _reasons(item, f"{where}[{i}]")
    return found


@pytest.fixture(scope="module")
def outputs() -> list[tuple[tuple[str, Setting], dict[str, Any]]]:
    return [(key, data) for key, args in RUNS for data in _json(args)]


def test_every_result_reads_back_into_its_type_and_writes_the_same_json(outputs):
    for key, data in outputs:
        result = read_result(data)
        assert (result.kind, result.setting) == key, data["source"]
        assert result.to_json() == data, data["source"]
        assert result.results and all(isinstance(r, RESULT_TYPES[key]())  # type: ignore[misc]
                                      for r in result.results)
        assert result.verdict is Verdict(data["verdict"])
        assert [r.code for r in result.results] == [
            None if r.get("reason_code") is None else ReasonCode(r["reason_code"])
            for r in data["results"]]


def test_the_runs_cover_every_kind_and_setting_with_a_shipped_example(outputs):
    covered = {key for key, _ in outputs}
    typed = {key for key, found in RESULT_TYPES.items() if found is not None}
    # protocol audits with more symbols or with delta: no shipped file (tests build them)
    assert typed - covered == {("protocol", Setting.SYMBOLS), ("protocol", Setting.DELTA),
                               ("mechanism", Setting.DELTA)}


def test_every_reason_has_a_code_beside_it(outputs):
    for _, data in outputs:
        for where, code in _reasons(data):
            assert code in ReasonCode._value2member_map_, (data["source"], where, code)


def test_a_negative_control_a_reason_without_its_code_is_found():
    data = {"results": [{"reason": "x"}, {"reason": "y", "reason_code": "proved"}],
            "proof": {"reason": "fell back"}}
    assert _reasons(data) == [(".results[0]", "missing"), (".results[1]", "proved")]


def test_results_read_back_carry_their_codes_and_attempts():
    data = _json(("verify", "problems/xor-2.toml"))[0]
    assert {r["reason_code"] for r in data["results"]} == {"bracketed"}
    old = {**data, "results": [{k: v for k, v in r.items() if k != "reason_code"}
                               for r in data["results"]]}
    assert all(r.code is None for r in read_result(old).results)  # stored by older builds


def test_a_refused_file_has_a_code(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[problem]\nparties = 2\nepsilon = -1\n[observer]\nfunction = "xor"\n')
    (data,) = _json(("verify", str(bad)))
    assert data["reason_code"] == ReasonCode.INVALID and data["invalid"] is True
    assert read_result(data).code is ReasonCode.INVALID


def test_verdicts_rank_and_exit_classes():
    ranked = sorted(Verdict, key=lambda v: v.rank)
    assert [v.value for v in ranked] == ["optimal", "suboptimal", "gap", "interaction-helps",
                                         "not-private", "contradiction", "open", "error"]
    assert worst_verdict([]) is Verdict.OPTIMAL
    assert worst_verdict([Verdict.GAP, Verdict.OPEN, Verdict.OPTIMAL]) is Verdict.OPEN
    assert {v for v in Verdict if v.exit_class is ExitClass.UNDECIDED} == {Verdict.ERROR,
                                                                          Verdict.OPEN}
    assert [v for v in Verdict if v.always_counted] == [Verdict.OPTIMAL, Verdict.GAP,
                                                        Verdict.ERROR]
    assert Verdict.of("no such verdict") is Verdict.ERROR


def test_the_categories_and_the_exit_status_come_from_the_verdicts():
    assert category_of("gap") is Category.GAP
    assert category_of("optimal", invalid=True) is Category.INVALID
    assert category_of("optimal", internal=True) is Category.INTERNAL
    assert category_of("garbled") is Category.ERROR
    for v in Verdict:
        status = verdict_status([Category(v.value)])
        assert status == {ExitClass.AS_CLAIMED: ExitStatus.OK,
                          ExitClass.FINDING: ExitStatus.FAILED,
                          ExitClass.UNDECIDED: ExitStatus.UNDECIDED}[v.exit_class], v
        assert (Category(v.value) in FAILED_CATEGORIES) == (v.exit_class is ExitClass.FINDING)
        assert (Category(v.value) in UNDECIDED_CATEGORIES) == (
            v.exit_class is ExitClass.UNDECIDED)
    assert verdict_status([Category.INVALID, Category.GAP]) == ExitStatus.BAD_INPUT
    assert verdict_status([Category.INTERNAL, Category.GAP]) == ExitStatus.INTERNAL


def test_every_verdict_and_category_has_a_style():
    assert set(VERDICT_STYLE) == {v.value for v in Verdict}
    assert set(CATEGORY_STYLE) == set(Category)


def test_a_problem_result_without_results_is_an_error_with_its_reason():
    result = ProblemResult("p", "p.toml", "multiparty", (), reason="too big",
                           code=ReasonCode.SIZE_LIMIT)
    data = result.to_json()
    assert data["verdict"] == "error" and data["reason_code"] == "size-limit"
    assert read_result(data).code is ReasonCode.SIZE_LIMIT


def test_a_result_relabelled_for_another_path_swaps_the_leading_path_only():
    """batch verifies identical bytes once and relabels the result for each path: the
    reason's leading `path: ` moves to the new path, the same words elsewhere stay."""
    result = ProblemResult("a", "d/a.toml", "unknown", (),
                           reason="d/a.toml: `problem.epsilon`: see d/a.toml.bak",
                           code=ReasonCode.INVALID, invalid=True)
    moved = result.relabelled("e/b.toml", "b")
    assert (moved.source, moved.problem) == ("e/b.toml", "b")
    assert moved.reason == "e/b.toml: `problem.epsilon`: see d/a.toml.bak"
    assert moved.code is ReasonCode.INVALID and moved.invalid
    other = ProblemResult("a", "d/a.toml", "unknown", (), reason="timeout",
                          code=ReasonCode.TIMEOUT)
    assert other.relabelled("e/b.toml", "b").reason == "timeout"  # control: no prefix
    assert other.named("p", "multiparty").kind == "multiparty"


def test_batch_items_hold_typed_results(tmp_path):
    from inline import InlineExecutor

    from dpverify.runner import run_batch
    from dpverify.runner.batch import BatchItem
    from dpverify.verifiers.options import VerifyOptions

    (tmp_path / "x.toml").write_text((ROOT / "problems" / "xor-2.toml").read_text())
    (tmp_path / "bad.toml").write_text("[problem]\nname = 1\n")
    report = run_batch([tmp_path], VerifyOptions(), store=None, executor=InlineExecutor())
    for item in report.items:
        assert isinstance(item.result, ProblemResult)
        assert read_result(item.to_dict()).to_json() == item.to_dict()
        again = BatchItem(item.source, item.content_hash, item.status, item.to_dict())
        assert again.result.to_json() == item.result.to_json()  # read from its JSON
    by_name = {Path(i.source).name: i for i in report.items}
    assert by_name["x.toml"].verdict is Verdict.OPTIMAL and by_name["x.toml"].key == (
        "multiparty", Setting.BITS)
    assert by_name["bad.toml"].key is None and by_name["bad.toml"].result.invalid
