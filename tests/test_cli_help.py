"""What the help texts promise (issue 17, D14): `--tol` is relative to the range of the
gains, in every command that has it; install hints work from a checkout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify.cli import every_command, main

ROOT = Path(__file__).resolve().parents[1]
WITH_TOL = sorted(name for name, command in every_command().items()
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
    """In the checkout the extra is `.venv/bin/pip install -e '.[plot]'` (as `make`
    installs it): `pip install 'dpverify[plot]'` would look for dpverify on an index.
    Installed from a wheel, that form is the right one (pip sees dpverify installed and
    adds the extra's dependencies), so dpverify/install.py alone chooses between the two
    (issue 26); the docs name the wheel's form only beside the word "wheel"."""
    wrong = re.compile(r"pip install ['\"]?dpverify\[")
    offenders = []
    for path in sources():
        if path == ROOT / "dpverify" / "install.py":
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if wrong.search(line) and "wheel" not in line:
                offenders.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert offenders == []
    from dpverify.plotting import INSTALL

    assert INSTALL == ".venv/bin/pip install -e '.[plot]'"


def test_the_hint_scan_finds_a_wrong_hint() -> None:
    """Negative control for the scan above."""
    assert re.search(r"pip install ['\"]?dpverify\[", "Needs pip install 'dpverify[plot]'.")
