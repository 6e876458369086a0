"""Issue 26, points 5 and 6: the `.dpverify/` folder is marked as a cache (`.gitignore`
with `*`, `CACHEDIR.TAG` with the standard signature) when dpverify makes it, `--no-store`
runs on a store in memory; and in a pipe, progress lines go to stderr for every command
while stdout carries the results alone (real subprocesses with separate pipes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from inline import InlineExecutor

from dpverify.cachedir import CACHEDIR_TAG, make_dirs
from dpverify.cli import main
from dpverify.runner import Store
from dpverify.runner.batch import run_batch
from dpverify.runner.store import MEMORY
from dpverify.verifiers.options import VerifyOptions

DPVERIFY = [sys.executable, "-m", "dpverify"]
SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"  # the specification's 43 bytes
XOR = """[problem]
name = "{name}"
parties = 2
epsilon = 1.0

[observer]
function = "xor"
gain = "indicator"
"""


def problems(folder: Path, n: int = 2) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"p{i}.toml").write_text(XOR.format(name=f"p{i}"))
    return folder


# -- the cache folder ------------------------------------------------------------------------
def test_the_store_folder_is_marked_as_a_cache(tmp_path: Path) -> None:
    with Store(tmp_path / ".dpverify" / "results.sqlite"):
        pass
    folder = tmp_path / ".dpverify"
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (folder / "CACHEDIR.TAG").read_bytes().startswith(SIGNATURE)
    assert CACHEDIR_TAG.encode()[:43] == SIGNATURE


def test_git_ignores_the_store(tmp_path: Path, monkeypatch) -> None:
    """The defect of issue 26: `git add -A` committed the results store."""
    git = ["git", "-C", str(tmp_path)]
    try:
        subprocess.run([*git, "init", "-q"], check=True)
    except FileNotFoundError:
        pytest.skip("git is not installed")
    monkeypatch.chdir(tmp_path)
    problems(tmp_path / "problems", 1)
    run = CliRunner().invoke(main, ["batch", "problems", "--jobs", "1", "--quiet"])
    assert run.exit_code == 0, run.output
    assert (tmp_path / ".dpverify" / "results.sqlite").is_file()
    subprocess.run([*git, "add", "-A"], check=True)
    staged = subprocess.run([*git, "diff", "--cached", "--name-only"], check=True,
                            capture_output=True, text=True).stdout.split()
    assert staged == ["problems/p0.toml"]


def test_only_dpverify_folders_are_marked_and_nothing_is_overwritten(tmp_path) -> None:
    with Store(tmp_path / "mine" / "results.sqlite"):
        pass
    assert not (tmp_path / "mine" / ".gitignore").exists()  # the user chose this folder
    folder = tmp_path / ".dpverify"
    folder.mkdir()
    (folder / ".gitignore").write_text("!keep\n")
    make_dirs(folder / "witnesses")  # the witness files' folder marks its .dpverify too
    assert (folder / ".gitignore").read_text() == "!keep\n"
    assert (folder / "CACHEDIR.TAG").read_bytes().startswith(SIGNATURE)
    assert not (folder / "witnesses" / ".gitignore").exists()


def test_an_in_memory_store_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    folder = problems(tmp_path / "p")
    before = sorted(tmp_path.rglob("*"))
    with Store.in_memory() as store:
        first = run_batch([folder], VerifyOptions(), store=store, executor=InlineExecutor())
        again = run_batch([folder], VerifyOptions(), store=store, executor=InlineExecutor())
        assert store.count() == 2
    assert first.skipped == 0 and again.skipped == 2  # a store, for the one run
    assert sorted(tmp_path.rglob("*")) == before
    assert not Path(MEMORY).exists()


def test_no_store_on_the_command_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    problems(tmp_path / "p")
    run = CliRunner().invoke(main, ["batch", "p", "--no-store", "--jobs", "1", "--quiet"])
    assert run.exit_code == 0, run.output
    assert not (tmp_path / ".dpverify").exists() and not (tmp_path / MEMORY).exists()
    check = CliRunner().invoke(main, ["check", "p", "--no-store", "--jobs", "1", "--quiet"])
    assert check.exit_code == 0 and not (tmp_path / ".dpverify").exists(), check.output
    both = CliRunner().invoke(main, ["batch", "p", "--no-store", "--store", "x.sqlite"])
    assert both.exit_code == 2 and "--store and --no-store contradict" in both.output


# -- streams ----------------------------------------------------------------------------------
def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*DPVERIFY, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=240)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return problems(tmp_path_factory.mktemp("streams") / "p", 3)


@pytest.mark.parametrize("command", ["batch", "check"])
def test_progress_on_stderr_results_on_stdout(folder: Path, command: str) -> None:
    """`batch dir > report.txt` holds the report and no progress line (issue 26)."""
    done = run(command, str(folder), "--no-store", "--jobs", "1", cwd=folder.parent)
    assert done.returncode == 0, (done.stdout, done.stderr)
    progress = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 3 and all("/3]" in line for line in progress)
    assert "3 problems; running on 1 worker" in done.stderr
    assert "[1/3]" not in done.stdout and "running on" not in done.stdout
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("3 problems: 3 optimal" if command == "batch" else "check ok: 3")


def test_json_lines_alone_on_stdout(folder: Path) -> None:
    done = run("batch", str(folder), "--no-store", "--jobs", "1", "--json", cwd=folder.parent)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["verdict"] for r in rows] == ["optimal"] * 3


def test_sweep_keeps_its_progress_on_stderr(folder: Path) -> None:
    done = run("sweep", str(folder / "p0.toml"), "--epsilon", "0.5,1", "--no-store",
               "--jobs", "1", "--csv", cwd=folder.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("problem,kind,epsilon,")  # CSV alone
    assert "[1/2]" in done.stderr and "[1/2]" not in done.stdout


def test_the_resume_hints_are_messages_not_results() -> None:
    """The hint of an interrupted batch, check or sweep is a line for stderr of its own
    (the commands print it there, whatever the format); the summary lines, which go to
    stdout, do not carry it."""
    from types import SimpleNamespace

    from dpverify.console.batch import resume_hint
    from dpverify.console.sweep import resume_hint as sweep_hint
    from dpverify.console.sweep import summary_line

    batch = SimpleNamespace(interrupted=True, items=[1, 2], total=5)
    assert resume_hint(batch, ".dpverify/results.sqlite") == (
        "interrupted: 2 of 5 problems finished and saved in .dpverify/results.sqlite; run "
        "the same command again to resume")
    assert resume_hint(batch, None) == "interrupted: 2 of 5 problems finished (not saved: " \
        "--no-store)"
    assert resume_hint(SimpleNamespace(interrupted=False), "s") is None
    sweep = SimpleNamespace(interrupted=True, points=[], skipped=0, workers=1, seconds=1.0,
                            counts=lambda: {})
    assert "interrupted" not in summary_line(sweep)
    assert sweep_hint(sweep).startswith("interrupted: the points that finished are stored")
