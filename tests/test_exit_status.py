"""One exit-status rule for every command (spec.md; issue 17, A6): 0 every verdict as
claimed, 1 a finding against the claim (`suboptimal` included), 2 bad input, 3 undecided,
4 an internal error; over many results the first of 4, 2, 3, 1, 0 wins."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import dpverify.console
import dpverify.spec.templates
from dpverify.cli import every_command, main
from dpverify.status import (
    EXIT_STATUS_RULE,
    ExitStatus,
    exit_status,
    verdict_status,
)

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"
PROTOCOLS = PROBLEMS / "protocols"


def flat(text: str) -> str:
    return " ".join(text.split())


def help_of(*command: str) -> str:
    run = CliRunner().invoke(main, [*command, "--help"])
    assert run.exit_code == 0, run.output
    return flat(run.output)


# -- the rule ---------------------------------------------------------------------------------
def test_precedence_is_4_2_3_1_0_and_130_over_all() -> None:
    assert exit_status() is ExitStatus.OK
    assert exit_status(failed=1) == 1
    assert exit_status(failed=1, undecided=1) == 3
    assert exit_status(failed=1, undecided=1, invalid=1) == 2
    assert exit_status(failed=1, undecided=1, invalid=1, internal=1) == 4
    assert exit_status(internal=1, interrupted=True) == 130
    assert ExitStatus.INTERNAL == 4 and ExitStatus.BROKEN_PIPE == 141


@pytest.mark.parametrize("verdict, status", [
    ("optimal", 0), ("gap", 1), ("suboptimal", 1), ("not-private", 1), ("contradiction", 1),
    ("interaction-helps", 1), ("open", 3), ("error", 3), ("invalid", 2), ("internal", 4)])
def test_each_verdict_has_one_status(verdict: str, status: int) -> None:
    assert verdict_status([verdict]) == status
    assert verdict_status(["optimal", verdict, "optimal"]) == status


def test_suboptimal_ranks_below_undecided_and_bad_input() -> None:
    assert verdict_status(["suboptimal", "error"]) == 3
    assert verdict_status(["suboptimal", "invalid", "open"]) == 2


# -- --help ----------------------------------------------------------------------------------
COMMANDS = sorted(every_command())


def test_every_command_is_covered() -> None:
    assert {"verify", "audit", "batch", "check", "certify", "check-cert", "derive", "release",
            "new", "falsify", "survey", "sweep", "results"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_commands_help_states_the_one_rule(command: str) -> None:
    text = help_of(command)
    assert flat(EXIT_STATUS_RULE) in text
    # nothing in a command's own text contradicts it
    assert not re.search(r"\b(exits?|status) 3\b[^.;]*internal", text), text
    assert not re.search(r"\b0\b[^;.]{0,60}\bsuboptimal\b", text.replace(
        flat(EXIT_STATUS_RULE), "")), text


def test_the_main_help_states_the_rule() -> None:
    text = flat(CliRunner().invoke(main, ["--help"]).output)
    assert flat(EXIT_STATUS_RULE).removeprefix("Exit status: ") in text


def test_the_rule_names_every_status() -> None:
    for status in ("0 every verdict as claimed", "1 a finding against the claim", "suboptimal",
                   "2 bad input", "3 undecided", "4 an internal error", "130 interrupted"):
        assert status in EXIT_STATUS_RULE


def test_require_optimal_is_documented_as_a_no_op() -> None:
    assert "--require-optimal Deprecated, no effect" in help_of("audit")


# -- suboptimal is a finding ------------------------------------------------------------------
def test_a_suboptimal_audit_exits_1_and_an_optimal_one_0() -> None:
    runner = CliRunner()
    sub = runner.invoke(main, ["audit", "--quiet", str(PROTOCOLS / "adaptive-xor-2.toml")])
    assert sub.exit_code == 1, sub.output
    assert "suboptimal" in sub.stdout
    rr = runner.invoke(main, ["audit", "--quiet", str(PROTOCOLS / "rr-and-3.toml")])
    assert rr.exit_code == 0, rr.output  # negative control: RR written as a protocol


# -- an internal error is 4 --------------------------------------------------------------------
def boom(*args, **kwargs):
    raise RuntimeError("boom: a bug")


def runs(tmp_path: Path) -> dict[str, list[str]]:
    store = str(tmp_path / "store.sqlite")
    xor = str(PROBLEMS / "xor-2.toml")
    return {
        "verify": ["verify", xor],
        "audit": ["audit", str(PROTOCOLS / "rr-and-3.toml")],
        "certify": ["certify", "-o", str(tmp_path / "certs"), xor],
        "derive": ["derive", str(ROOT / "examples" / "geometric-remap.toml")],
        "release": ["release", "--n", "3", "--alphas", "1/2", "--answer", "1", "--seed", "1"],
        "falsify": ["falsify", xor, "--protocols", "2", "--climb", "0",
                    "--counterexamples", str(tmp_path)],
        "survey": ["survey", "--alphabet", "3", "--parties", "1", "--epsilon", "1",
                   "--functions", "random:1", "-j", "1", "--save", str(tmp_path / "s")],
        "batch": ["batch", xor, "--store", store, "-j", "1"],
        "check": ["check", xor, "--store", store, "-j", "1"],
        "results": ["results", "--store", store],
        "sweep": ["sweep", xor, "--epsilon", "1", "--store", store, "-j", "1"],
    }


@pytest.mark.parametrize("command", sorted(runs(Path("."))))
def test_an_internal_error_exits_4(tmp_path: Path, monkeypatch, command: str) -> None:
    args = runs(tmp_path)[command]
    if command == "results":  # a store to list
        assert CliRunner().invoke(main, runs(tmp_path)["batch"]).exit_code == 0
    monkeypatch.delenv("DPVERIFY_DEBUG", raising=False)
    monkeypatch.setattr(dpverify.console, "make_console", boom)
    run = CliRunner().invoke(main, args)
    assert run.exit_code == 4, (run.exit_code, run.output)
    assert "internal error: RuntimeError: boom: a bug" in run.stderr
    assert "Traceback" not in run.output


def test_new_with_an_internal_error_exits_4(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(dpverify.spec.templates, "write_template", boom)
    run = CliRunner().invoke(main, ["new", "multiparty", "p"])
    assert run.exit_code == 4 and "internal error" in run.stderr


@pytest.mark.parametrize("command", ["verify", "certify", "derive"])
def test_without_the_bug_the_same_runs_succeed(tmp_path: Path, command: str) -> None:
    """Negative control: the runs above exit 0 when nothing raises."""
    run = CliRunner().invoke(main, runs(tmp_path)[command])
    assert run.exit_code == 0, run.output


@pytest.mark.parametrize("raised", [
    MemoryError(),
    # numpy's, for an array whose size does not fit an index (a size limit raised far)
    ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the "
               "maximum possible size."),
    ValueError("Maximum allowed size exceeded"),
])
def test_out_of_memory_is_undecided_not_a_bug(tmp_path: Path, monkeypatch, raised) -> None:
    def no_memory(*args, **kwargs):
        raise raised

    monkeypatch.setattr(dpverify.console, "make_console", no_memory)
    run = CliRunner().invoke(main, runs(tmp_path)["verify"])
    assert run.exit_code == 3 and "out of memory" in run.stderr


def test_another_value_error_is_still_a_bug(tmp_path: Path, monkeypatch) -> None:
    """The control: only numpy's messages about an array's size are out of memory."""
    def other(*args, **kwargs):
        raise ValueError("an array of the wrong shape")

    monkeypatch.setattr(dpverify.console, "make_console", other)
    run = CliRunner().invoke(main, runs(tmp_path)["verify"])
    assert run.exit_code == 4 and "internal error" in run.stderr


# -- an output the system cannot take is 2 -----------------------------------------------------
@pytest.mark.parametrize("command", sorted(runs(Path("."))))
def test_an_output_that_cannot_be_written_exits_2(tmp_path: Path, monkeypatch,
                                                   command: str) -> None:
    """No space left (or a quota, a file too large, an I/O error) while writing: one line
    naming the output and exit 2, as an unwritable `-o`; another OSError is still a bug
    (exit 4: the control that the rule is not a blanket catch)."""
    args = runs(tmp_path)[command]
    if command == "results":
        assert CliRunner().invoke(main, runs(tmp_path)["batch"]).exit_code == 0
    monkeypatch.delenv("DPVERIFY_DEBUG", raising=False)
    for code, status in ((errno.ENOSPC, 2), (errno.ENOTCONN, 4)):
        def full(*args, code=code, **kwargs):
            raise OSError(code, os.strerror(code))

        monkeypatch.setattr(dpverify.console, "make_console", full)
        run = CliRunner().invoke(main, args)
        assert run.exit_code == status, (code, run.exit_code, run.output)
        assert "Traceback" not in run.output and len(run.stderr.strip().splitlines()) == 1
        if status == 2:
            assert run.stderr == f"dpverify: the output: cannot write: {os.strerror(code)}\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("flags", [[], ["--json"]])
def test_verify_into_a_full_device_exits_2(flags: list[str]) -> None:
    command = [sys.executable, "-m", "dpverify", "verify", str(PROBLEMS / "xor-2.toml"), *flags]
    with open("/dev/full", "w") as full:
        done = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "dpverify: the output: cannot write: No space left on device\n"
    with open(os.devnull, "w") as null:  # the control: the same run into a sink that takes it
        assert subprocess.run(command, stdout=null, timeout=120).returncode == 0
