"""Start-up (issue 19, point 4): `dpverify --help`, `--version` and a command's `--help`
import nothing heavy, so they answer in a blink; a command that works imports what it
needs (the control)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "scipy", "highspy", "cvxpy", "flint", "rich", "matplotlib", "tomlkit",
         "distributed", "dask")
PROBE = """
import json, sys
from click.testing import CliRunner
from dpverify.cli import main
result = CliRunner().invoke(main, json.loads(sys.argv[1]))
heavy = json.loads(sys.argv[2])
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & set(heavy))))
"""


def loaded(args: list[str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)],
                          capture_output=True, text=True, check=True, timeout=60)
    return json.loads(done.stdout)


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["verify", "--help"],
                                  ["batch", "--help"], ["audit", "--help"]])
def test_help_and_version_import_nothing_heavy(args):
    assert loaded(args) == []


def test_a_real_command_does_import_them(tmp_path):
    """Control: the probe sees the modules a real verification loads."""
    path = tmp_path / "xor.toml"
    path.write_text('[problem]\nparties = 2\nepsilon = 1\n[observer]\nfunction = "xor"\n')
    assert {"numpy", "rich"} <= set(loaded(["verify", str(path)]))


def test_a_small_verification_imports_no_scipy(tmp_path):
    """Issue 25 (start-up): the LP route of a one-party problem needs numpy and highspy,
    not scipy (lp/model.py keeps the matrix in its own compressed columns) nor cvxpy."""
    path = tmp_path / "bit.toml"
    path.write_text('[problem]\nparties = 1\nlambda = "3"\n[observer]\nfunction = "bit:1"\n')
    modules = set(loaded(["verify", str(path)]))
    assert {"numpy", "highspy"} <= modules
    assert not modules & {"scipy", "cvxpy", "matplotlib"}, modules


def test_a_route_that_needs_scipy_still_loads_it(tmp_path):
    """Control: the dense interior-point method (theory/worst_ipm.py) imports scipy's
    BLAS when it runs (a worst case without symmetry at an extreme level)."""
    path = tmp_path / "x.toml"
    path.write_text('[problem]\nparties = 3\nepsilon = [25, 0.5, 1.5]\naccuracy = "worst"\n'
                    '[observer]\nfunction = { table = [0, 1, 2, 0, 1, 1, 2, 0] }\n')
    assert "scipy" in set(loaded(["verify", str(path)]))
