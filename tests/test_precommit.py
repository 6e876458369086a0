"""The pre-commit hook (issue 26, point 3): `.pre-commit-hooks.yaml` defines `dpverify-check`,
and its `entry` is run on a temporary git repository as pre-commit runs it (the staged
files that match `files`, passed as arguments, from the repository's top), with a
`pyproject.toml` among them; and `check` skips a named file that is not a problem file with
a note, as `check .` does."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from dpverify.cli import main

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
XOR3 = 0.5493430832841081

XOR = f"""[problem]
name = "xor-3"
parties = 3
epsilon = 1.0

[observer]
function = "xor"
gain = "indicator"

[expect.observer]
average = {XOR3!r}
worst = {XOR3!r}
"""
PYPROJECT = '[project]\nname = "a-paper"\nversion = "1"\n'


def hook() -> dict:
    (definition,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return definition


def test_the_hook_definition() -> None:
    definition = hook()
    assert definition["id"] == "dpverify-check"
    assert definition["files"] == r"\.toml$"
    assert definition["language"] == "python"  # pre-commit installs the repository itself
    assert shlex.split(definition["entry"])[:2] == ["dpverify", "check"]
    assert definition.get("pass_filenames", True)  # the files are the arguments
    assert definition["require_serial"]  # one pool and one store per run
    assert re.search(definition["files"], "problems/a.toml")
    assert not re.search(definition["files"], "README.md")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def run_hook(repo: Path) -> subprocess.CompletedProcess:
    """What `pre-commit run dpverify-check` does with this definition: the staged files
    that `files` matches (and `exclude`, if any, does not), after the entry and its
    `args`, run from the repository's top (the entry's `dpverify` is this environment's)."""
    definition = hook()
    staged = git(repo, "diff", "--cached", "--name-only").split()
    chosen = [f for f in staged if re.search(definition["files"], f)
              and not re.search(definition.get("exclude", "^$"), f)]
    command, *rest = shlex.split(definition["entry"])
    argv = [str(BIN / command), *rest, *definition.get("args", []), *chosen]
    return subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=240)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "paper"
    (repo / "problems").mkdir(parents=True)
    (repo / "problems" / "xor-3.toml").write_text(XOR)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "README.md").write_text("a paper\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    return repo


def test_the_hook_passes_a_commit_with_a_pyproject(repo: Path) -> None:
    run = run_hook(repo)
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert "skipped pyproject.toml: not a problem file" in run.stderr
    assert run.stdout.strip().splitlines()[-1].startswith(
        "check ok: 1 problem, 2 expectations held, 0 mismatches")
    # the store the hook made is marked as a cache: git does not pick it up
    assert (repo / ".dpverify" / ".gitignore").read_text().splitlines()[-1] == "*"
    git(repo, "add", "-A")
    assert not [f for f in git(repo, "diff", "--cached", "--name-only").split()
                if f.startswith(".dpverify")]


def test_the_hook_fails_a_commit_that_breaks_a_bound(repo: Path) -> None:
    """Negative control: a wrong expectation staged makes the hook fail (exit 1), naming
    the file and the line."""
    path = repo / "problems" / "xor-3.toml"
    path.write_text(XOR.replace(f"average = {XOR3!r}", "average = 0.6"))
    git(repo, "add", "-A")
    run = run_hook(repo)
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert "problems/xor-3.toml:11" in run.stdout and "check FAILED" in run.stdout


def test_check_skips_a_named_non_problem_file_like_check_dot(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "xor-3.toml").write_text(XOR)
    store = str(tmp_path / "s.sqlite")
    named = CliRunner().invoke(main, ["check", "pyproject.toml", "xor-3.toml", "--quiet",
                                      "--jobs", "1", "--store", store])
    dot = CliRunner().invoke(main, ["check", ".", "--quiet", "--jobs", "1", "--store", store])
    for run in (named, dot):
        assert run.exit_code == 0, run.output
        assert "skipped pyproject.toml: not a problem file (no [problem] table)" in run.stderr
    alone = CliRunner().invoke(main, ["check", "pyproject.toml", "--store", store])
    assert alone.exit_code == 0, alone.output  # nothing to check is no error for a hook
    assert "check ok: 0 problems" in alone.stdout
    # but a folder without problem files is still an error (a CI job pointed at nothing)
    (tmp_path / "empty").mkdir()
    empty = CliRunner().invoke(main, ["check", "empty", "--store", store])
    assert empty.exit_code == 2 and "no *.toml problem files found" in empty.stderr
    # verify keeps refusing a named file that is not a problem (it was asked for)
    verify = CliRunner().invoke(main, ["verify", "pyproject.toml"])
    assert verify.exit_code == 2
