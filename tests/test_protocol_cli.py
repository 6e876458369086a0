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


# -- the audit's tables at 80 columns (issue 17, item 15) ------------------------------------
RR_2_4 = """[problem]
kind = "protocol"
name = "rr-2-4"
parties = 2
lambda = ["2", "4"]

[[round]]
party = 1
messages = 2
kernel = [["2/3", "1/3"], ["1/3", "2/3"]]

[[round]]
party = 2
messages = 2
kernel = [["4/5", "1/5"], ["1/5", "4/5"]]

[observer]
function = "majority"
gain = "-abs"

[[party]]
index = 1
function = "majority"
gain = "-abs"
"""


def _printed(result, width: int) -> str:
    import io
    import re

    from rich.console import Console

    from dpverify.console.audit import print_protocol

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=True, no_color=True,
                      markup=False, highlight=False)
    print_protocol(console, result)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buffer.getvalue())


def test_the_audit_table_fits_80_columns_without_cutting_a_number():
    from dpverify.console.numbers import fmt
    from dpverify.spec import loads
    from dpverify.verifiers.audit.protocol import audit_protocol
    from dpverify.verifiers.options import VerifyOptions

    result = audit_protocol(loads(RR_2_4, source="rr-2-4.toml"), VerifyOptions())
    narrow = _printed(result, 80)
    assert max(len(line) for line in narrow.splitlines()) <= 80, narrow
    assert "…" not in narrow
    for r in result.results:  # every digit of every number, e.g. -0.233333333333
        for value in (r.protocol_value, r.relaxed_optimum, r.relaxed_optimum_achieved,
                      r.rr_value):
            assert fmt(value) in narrow
    assert "-0.233333333333" in narrow and "verdict" in narrow
    # the control: one table, as before, on a wide terminal (too wide for 80 columns)
    wide = _printed(result, 200)
    assert "seconds" in wide and max(len(line) for line in wide.splitlines()) > 80
