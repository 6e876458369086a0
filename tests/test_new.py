"""`dpverify new`: commented templates that load and verify as they are, never written over
an existing file."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.spec import load


@pytest.mark.parametrize("kind", ["multiparty", "count"])
def test_the_template_verifies_as_it_is(kind, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    run = runner.invoke(main, ["new", kind, "my-problem"])
    assert run.exit_code == 0, run.output
    path = tmp_path / "my-problem.toml"
    text = path.read_text()
    assert text.count("#") > 10  # it explains its keys
    spec = load(path)
    assert spec.name == "my-problem" and spec.kind == kind
    verified = runner.invoke(main, ["verify", "--quiet", str(path)])
    assert verified.exit_code == 0, verified.output
    assert "1 optimal" in verified.stdout


def test_an_existing_file_is_never_overwritten(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.toml").write_text("# my own work\n")
    run = CliRunner().invoke(main, ["new", "count", "mine.toml"])
    assert run.exit_code == 2
    assert "already exists" in run.stderr and "Traceback" not in run.output
    assert (tmp_path / "mine.toml").read_text() == "# my own work\n"


@pytest.mark.parametrize("args", [["new", "protocol", "x"], ["new", "count", "sub/x"],
                                  ["new", "count"]])
def test_bad_arguments_are_exit_2(args, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(main, args)
    assert run.exit_code == 2 and "Traceback" not in run.output
    assert list(tmp_path.iterdir()) == []
