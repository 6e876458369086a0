"""Progress on a terminal (issue 19, point 3): the verifiers report each stage (problem,
agent, accuracy, method) to a listener, `verify`, `audit` and `certify` draw them with
the elapsed seconds on a terminal, and nothing of it reaches a pipe, --json or CliRunner."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from dpverify import api
from dpverify.cli import main
from dpverify.console.progress import Activity
from dpverify.console.verify import VerifyView
from dpverify.verifiers.progress import Stage, listening, stage

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = ROOT / "problems"


def test_every_agent_accuracy_and_method_is_reported_as_it_starts() -> None:
    events: list[Stage] = []
    paths = [PROBLEMS / "and-3.toml", PROBLEMS / "count" / "abs-10.toml",
             PROBLEMS / "multisymbol" / "xor-3x2.toml",
             PROBLEMS / "approximate" / "xor-2-delta.toml"]
    report = api.verify_paths(paths, on_stage=events.append)
    expected = []
    for f in report.files:
        assert f.result is not None and f.result.results, f.reason
        for r in f.result.results:
            accuracy = str(getattr(r, "accuracy", "") or getattr(r, "model", ""))
            expected.append((f.result.problem, str(r.agent), accuracy, str(r.method)))
    seen = [(e.problem, e.agent, e.accuracy, e.method) for e in events]
    assert seen == expected  # in order, one per result, with the method that decided it
    assert {e.method for e in events} >= {"proof", "lp", "rays", "envelope"}


def test_a_route_that_does_not_decide_and_the_cross_check_are_stages_too() -> None:
    events: list[Stage] = []
    api.verify_paths([PROBLEMS / "xor-2.toml"], on_stage=events.append, cross_check=True)
    methods = [e.method for e in events if e.agent == "observer" and e.accuracy == "worst"]
    assert len(methods) == 2 and methods[1].endswith("(cross-check)")
    assert methods[0] != methods[1].split()[0]  # the other route


def test_certify_and_audit_report_stages(tmp_path) -> None:
    certified: list[Stage] = []
    report = api.certify_paths([PROBLEMS / "xor-2.toml"], tmp_path, on_stage=certified.append)
    assert [(e.agent, e.accuracy) for e in certified] == [
        (c.agent, c.accuracy) for c in report.certificates]
    assert {e.method for e in certified} == {"proof"}  # the route certify takes
    audited: list[Stage] = []
    protocol = next((PROBLEMS / "protocols").glob("*.toml"))
    api.audit_paths([protocol], on_stage=audited.append)
    assert audited and all(e.method == "audit" for e in audited)


def test_no_listener_no_events_and_the_listener_ends_with_its_block() -> None:
    heard: list[Stage] = []
    stage("p", "observer", "worst", "lp")  # nobody listening: nothing happens
    with listening(heard.append):
        stage("p", "observer", "worst", "lp")
    stage("p", "observer", "worst", "proof")  # after the block: not heard
    assert heard == [Stage("p", "observer", "worst", "lp")]
    api.verify_paths([PROBLEMS / "and-3.toml"])  # no on_stage: runs as before
    assert len(heard) == 1


def test_the_line_on_a_terminal_shows_the_file_the_stage_and_the_seconds() -> None:
    buffer = io.StringIO()
    out = Console(file=buffer, force_terminal=True, width=120, no_color=True)
    with VerifyView(out, Console(file=io.StringIO())) as view:
        view.started(Path("x.toml"))
        view.stage(Stage("x", "party:2", "average", "orbit"))
        line = view.activity.text()
        assert view.activity.running
    assert not view.activity.running  # taken down on the way out
    assert line.split() == ["0", "s", "party:2", "average,", "method", "orbit",
                            "(verifying", "x.toml)"]
    assert "verifying x.toml" in buffer.getvalue()  # drawn on the terminal


@pytest.mark.parametrize("flags", [{"as_json": True}, {"quiet": True}])
def test_no_line_with_json_or_quiet_even_on_a_terminal(flags) -> None:
    buffer = io.StringIO()
    out = Console(file=buffer, force_terminal=True, width=120)
    with VerifyView(out, Console(file=io.StringIO()), **flags) as view:
        view.started(Path("x.toml"))
        view.stage(Stage("x", "observer", "worst", "lp"))
        assert not view.activity.running
    assert buffer.getvalue() == ""


def test_an_activity_that_is_not_enabled_draws_nothing() -> None:
    buffer = io.StringIO()
    with Activity(Console(file=buffer, force_terminal=True), enabled=False) as activity:
        activity.start("certifying x")
        activity.stage(Stage("x", "observer", "worst", "certificate"))
        assert not activity.running
    assert buffer.getvalue() == ""


@pytest.mark.parametrize("command", [
    ["verify", str(PROBLEMS / "and-3.toml")],
    ["audit", str(PROBLEMS / "protocols" / "adaptive-xor-2.toml")],
])
def test_clirunner_output_has_no_progress(command) -> None:
    run = CliRunner().invoke(main, command)
    assert run.exit_code in (0, 1), run.output
    assert "verifying" not in run.output and "auditing" not in run.output
    assert "\r" not in run.output and "\x1b" not in run.output


def test_certify_in_clirunner_and_json_have_no_progress(tmp_path) -> None:
    plain = CliRunner().invoke(main, ["certify", str(PROBLEMS / "xor-2.toml"), "-o",
                                      str(tmp_path)])
    assert plain.exit_code == 0, plain.output
    assert "certifying" not in plain.output and "\r" not in plain.output
    as_json = CliRunner().invoke(main, ["certify", str(PROBLEMS / "xor-2.toml"), "-o",
                                        str(tmp_path), "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)


def test_a_piped_verify_prints_no_progress() -> None:
    """A real process whose stdout is a pipe: the tables, no spinner, no control codes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "dpverify", "verify",
                           str(PROBLEMS / "and-3.toml")], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "verifying" not in done.stdout and "\r" not in done.stdout
    assert "\x1b" not in done.stdout and done.stderr == ""
