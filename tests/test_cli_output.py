"""What the command line prints, whatever the terminal: help without arguments, command
summaries that are not cut, tables that never cut a number, a spinner only on a terminal,
and a closed stdout that ends a command quietly."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from dpverify.cli import every_command, main
from dpverify.console.numbers import fmt
from dpverify.console.verify import VerifyView, print_problem, problem_table
from dpverify.spec import loads
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.options import VerifyOptions

ROOT = Path(__file__).resolve().parent.parent
AND3 = (ROOT / "problems" / "and-3.toml").read_text()  # exact lambdas 3/2, 2, 5/2
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


# -- help ---------------------------------------------------------------------------------------
def test_no_arguments_prints_help_and_succeeds() -> None:
    run = invoke()
    assert run.exit_code == 0, run.output
    assert run.stdout.startswith("Usage: ") and "Commands:" in run.stdout
    assert invoke("no-such-command").exit_code == 2  # negative control: still bad input


def test_the_command_list_is_not_cut() -> None:
    run = invoke("--help")
    commands = run.stdout.split("Commands:", 1)[1]
    assert "..." not in commands
    for name, command in every_command().items():
        summary = command.get_short_help_str(limit=1000)
        assert " ".join(summary.split()) in " ".join(commands.split()), name


# -- tables ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def and3_result():
    options = VerifyOptions(grid=2, certify=True)
    return verify_spec(loads(AND3, source="problems/and-3.toml"), options)  # 4 results


def _terminal(width: int) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=width, force_terminal=True, no_color=True,
                   markup=False, highlight=False), buffer


@pytest.mark.parametrize("width", [80, 60])
def test_a_narrow_terminal_never_cuts_a_number(and3_result, width) -> None:
    options = {"show_proof": True, "show_grid": True}
    # Negative control: rich alone squeezes this table into `width` with ellipses.
    plain, raw = _terminal(width)
    plain.print(problem_table(and3_result, **options))
    assert "…" in raw.getvalue()
    console, buffer = _terminal(width)
    print_problem(console, and3_result, **options)
    out = ANSI.sub("", buffer.getvalue())
    assert "…" not in out
    for r in and3_result.results:
        for value in (r.relaxed_optimum, r.rr_value):
            assert fmt(value) in out  # every digit, e.g. 0.563265306122
    assert "seconds" not in out  # the first column to go


WIDTH_CASES = ["multisymbol/one-party-122.toml", "multisymbol/max-3x2-gap.toml",
               "count/parity-gap-6.toml", "counts-score-6.toml", "parties-and-observer-4.toml"]


@pytest.fixture(scope="module")
def shipped_results(tmp_path_factory):
    witnesses = tmp_path_factory.mktemp("witnesses")
    options = VerifyOptions(witness_dir=str(witnesses))
    return {name: verify_spec(loads((ROOT / "problems" / name).read_text(), source=name),
                              options) for name in WIDTH_CASES}


@pytest.mark.parametrize("name", WIDTH_CASES)
def test_tables_fit_80_columns_with_every_digit(shipped_results, name) -> None:
    """Issue 17, D15: multi-symbol tables were 97 columns wide, count and multi-party ones
    81 to 85; at 80 columns every table fits, and every number keeps its 12 digits."""
    result = shipped_results[name]
    console, buffer = _terminal(80)
    print_problem(console, result)
    out = ANSI.sub("", buffer.getvalue())
    table = [line for line in out.splitlines() if "┃" in line or "│" in line]
    assert table and max(len(line) for line in table) <= 80, out
    assert "…" not in out
    for r in result.results:
        for value in (getattr(r, "relaxed_optimum", None), getattr(r, "rr_value", None),
                      getattr(r, "mechanism_optimum", None)):
            if value is not None:
                assert fmt(value) in out
    if result.kind == "multiparty" and "method" not in table[0]:
        assert f"  method: {result.results[0].method} (every result)" in out


def test_the_multisymbol_table_needs_the_compact_variants(shipped_results) -> None:
    """Negative control: the uncompacted variants of a multi-symbol table are wider than
    80 columns, so the test above does test the compact ones."""
    from dpverify.console.tables import natural_width
    from dpverify.console.verify import problem_tables

    console, _ = _terminal(80)
    tables = problem_tables(shipped_results["multisymbol/max-3x2-gap.toml"])
    assert all(natural_width(console, t) > 80 for t in tables[:3])
    assert natural_width(console, tables[-1]) <= 80


def test_a_wide_terminal_keeps_every_column(and3_result) -> None:
    console, buffer = _terminal(200)
    print_problem(console, and3_result, show_proof=True, show_grid=True)
    assert "seconds" in buffer.getvalue() and "…" not in buffer.getvalue()


def test_a_pipe_gets_full_width_plain_text(tmp_path) -> None:
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 6)
    deep.mkdir(parents=True)
    path = deep / "and-3.toml"
    path.write_text(AND3)
    run = invoke("verify", "--grid", "2", "--certify", str(path))
    assert run.exit_code == 0, run.output
    assert "…" not in run.stdout and "\x1b[" not in run.stdout
    assert str(path) in run.stdout  # the title, whole
    assert max(len(line) for line in run.stdout.splitlines()) > 160
    assert fmt(0.5632653061224488) in run.stdout


# -- the spinner ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("terminal", "flags", "spins"), [
    (True, {}, True),
    (True, {"as_json": True}, False),
    (True, {"quiet": True}, False),
    (False, {}, False),
])
def test_a_spinner_only_on_a_terminal(terminal, flags, spins) -> None:
    out = Console(file=io.StringIO(), force_terminal=terminal, width=100)
    err = Console(file=io.StringIO(), force_terminal=terminal)
    with VerifyView(out, err, **flags) as view:
        view.started(Path("x.toml"))
        assert view.activity.running is spins
    assert not view.activity.running  # taken down on the way out


def test_no_spinner_in_a_pipe(tmp_path) -> None:
    path = tmp_path / "and-3.toml"
    path.write_text(AND3)
    run = invoke("verify", str(path))
    assert run.exit_code == 0 and "verifying" not in run.output


# -- a closed stdout ------------------------------------------------------------------------------
def _closed_stdout(*args: str, cwd: Path | None = None) -> tuple[int, str]:
    """Run dpverify with a stdout whose reader is gone (as `| head -1` leaves it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.Popen([sys.executable, "-m", "dpverify", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=cwd)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


@pytest.mark.parametrize("args", [
    ["verify", "--json", str(ROOT / "problems" / "xor-2.toml")],
    ["verify", str(ROOT / "problems" / "xor-2.toml")],
    ["derive", str(ROOT / "examples" / "geometric-remap.toml")],
    ["--help"],
])
def test_a_closed_stdout_ends_quietly(args) -> None:
    status, err = _closed_stdout(*args)
    assert status == 141, err  # 128 + SIGPIPE, as Unix tools end
    assert err == "", err  # no "internal error", no traceback, no "Exception ignored"


# -- one exit status for every command ---------------------------------------------------------
def test_exit_status_precedence() -> None:
    from dpverify.status import ExitStatus, exit_status, verdict_status

    assert exit_status() == ExitStatus.OK == 0
    assert exit_status(failed=2) == 1
    assert exit_status(failed=1, undecided=1) == 3  # could not decide outranks a gap
    assert exit_status(failed=1, undecided=1, invalid=1) == 2  # bad input outranks both
    assert exit_status(invalid=1, interrupted=True) == 130
    assert verdict_status(["optimal", "gap", "optimal"]) == 1
    assert verdict_status(["gap", "error"]) == 3 and verdict_status(["invalid", "error"]) == 2


def test_ctrl_c_exits_130_in_every_command(monkeypatch):
    """Ctrl-C during `verify` is exit 130 (interrupted) with one line, never click's
    `Aborted!` with exit 1, which would read as a gap."""
    import dpverify.runner.files as paths

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(paths, "verify_paths", interrupted)
    xor = Path(__file__).resolve().parents[1] / "problems" / "xor-2.toml"
    result = CliRunner().invoke(main, ["verify", str(xor)])
    assert result.exit_code == 130, result.output
    assert "interrupted" in result.output and "Aborted" not in result.output
