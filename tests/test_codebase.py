"""The codebase's own rules (docs/architecture.md), checked so that they stay true:
small modules, click only at the command line, rich only in the console, the maths and the
independent checker free of I/O and solver code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpverify"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_LINES = 500


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_the_package_was_found():
    assert len(MODULES) > 40


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_exceeds_500_lines(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layers(path):
    relative = path.relative_to(PACKAGE).as_posix()
    used = imports(path)
    if not relative.startswith("cli/"):
        assert not any(m == "click" or m.startswith("click.") for m in used), relative
    if not relative.startswith("console/"):
        assert not any(m == "rich" or m.startswith("rich.") for m in used), relative
    if relative.startswith(("theory/", "spec/")):  # pure maths and data: no solvers, no CLI
        banned = ("dpverify.verify", "dpverify.batch", "dpverify.cli", "dpverify.console",
                  "dpverify.lp", "highspy", "cvxpy")
        assert not any(m.startswith(banned) for m in used), (relative, used)


def test_the_checker_shares_no_code_with_the_construction():
    used = imports(PACKAGE / "checker.py")
    banned = ("dpverify.theory", "dpverify.verify", "dpverify.lp", "highspy", "cvxpy",
              "scipy", "numpy")
    assert not any(m.startswith(banned) for m in used), used


def test_the_import_scan_sees_what_it_claims(tmp_path):
    """Negative control: the scan finds plain, dotted, relative-free and nested imports."""
    module = tmp_path / "m.py"
    module.write_text("import click\nfrom rich.table import Table\n"
                      "def f():\n    import highspy\n", encoding="utf-8")
    assert {"click", "rich.table", "highspy"} <= imports(module)
