"""Protocol files through the other commands: `verify`, `batch`/`check` (verdict ranking,
exit statuses, `--update` with exact values) and the decision rules in JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from dpverify.cli import main
from dpverify.spec import load

ROOT = Path(__file__).resolve().parents[1]
PROTOCOLS = ROOT / "problems" / "protocols"


def test_verify_shows_a_protocol_with_its_own_columns():
    out = CliRunner().invoke(main, ["verify", str(PROTOCOLS / "repeated-xor-2.toml")])
    assert out.exit_code == 1, out.output  # suboptimal is a finding (spec.md)
    assert "at achieved levels" in out.stdout and "suboptimal" in out.stdout
    assert "1 problem: 0 optimal, 0 gap, 0 error, 1 suboptimal" in out.stdout


def test_verify_json_rules_of_a_protocol_name_the_transcripts():
    out = CliRunner().invoke(main, ["verify", str(PROTOCOLS / "repeated-xor-2.toml"), "--json",
                                    "--show-rules"])
    (obj,) = json.loads(out.stdout)
    rule = obj["results"][0]["rule"]
    assert rule["transcripts"][:2] == ["0,0,0", "0,0,1"] and len(rule["decision"]) == 8


def test_check_ranks_protocol_verdicts_and_updates_exact_values(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    shutil.copy(PROTOCOLS / "rr-and-3.toml", folder)
    target = folder / "repeated-xor-2.toml"
    text = (PROTOCOLS / "repeated-xor-2.toml").read_text(encoding="utf-8")
    target.write_text(text.replace('average = "7/12"', "average = 0.5", 1), encoding="utf-8")
    store = str(tmp_path / "s.sqlite")
    runner = CliRunner()
    res = runner.invoke(main, ["check", str(folder), "--store", store, "-j", "1"])
    assert res.exit_code == 1 and "repeated-xor-2" in res.output  # the wrong value
    res = runner.invoke(main, ["check", str(folder), "--store", store, "-j", "1", "--update"])
    assert res.exit_code == 0, res.output
    assert 'average = "7/12"' in target.read_text(encoding="utf-8")  # exact, as audited
    assert {e.verdict for e in load(target).expect} == {"suboptimal"}
    # a not-private protocol fails a batch (exit 1), as suboptimal does
    shutil.copy(PROTOCOLS / "claims-too-much.toml", folder)
    res = runner.invoke(main, ["batch", str(folder), "--store", store, "-j", "1"])
    assert res.exit_code == 1 and "1 not-private" in res.output and "1 suboptimal" in res.output
