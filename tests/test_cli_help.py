"""What the help texts promise (issue 17, D14): `--tol` is relative to the range of the
gains, in every command that has it; install hints work from a checkout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify.cli import main

ROOT = Path(__file__).resolve().parents[1]
WITH_TOL = sorted(name for name, command in main.commands.items()
                  if any("--tol" in p.opts for p in command.params))


def help_of(command: str) -> str:
    run = CliRunner().invoke(main, [command, "--help"])
    assert run.exit_code == 0, run.output
    return " ".join(run.output.split())


def test_the_verdict_commands_have_tol() -> None:
    assert {"verify", "batch", "check", "audit", "falsify", "survey", "sweep"} <= set(WITH_TOL)


@pytest.mark.parametrize("command", WITH_TOL)
def test_tol_is_relative_to_the_gains_range(command: str) -> None:
    text = help_of(command)
    tol = text[text.index("--tol"):]
    assert "(absolute)" not in tol
    if command != "derive":  # derive's --tol compares matrix entries (probabilities)
        assert "relative to the range of the agent's gains" in tol
        assert "tol x (max gain - min gain)" in tol


def sources() -> list[Path]:
    files = [*(ROOT / "dpverify").rglob("*.py"), *(ROOT / "docs").glob("*.md"),
             ROOT / "README.md"]
    assert len(files) > 40
    return files


def test_install_hints_work_from_a_checkout() -> None:
    """`pip install 'dpverify[plot]'` asks PyPI for a package that is not there; from the
    checkout the extra is `.venv/bin/pip install -e '.[plot]'` (as `make` installs it)."""
    wrong = re.compile(r"pip install ['\"]?dpverify\[")
    offenders = [str(p.relative_to(ROOT)) for p in sources()
                 if wrong.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
    from dpverify.plotting import INSTALL

    assert INSTALL == ".venv/bin/pip install -e '.[plot]'"


def test_the_hint_scan_finds_a_wrong_hint() -> None:
    """Negative control for the scan above."""
    assert re.search(r"pip install ['\"]?dpverify\[", "Needs pip install 'dpverify[plot]'.")
