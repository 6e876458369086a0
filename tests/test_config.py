"""A project's configuration (issue 26, point 4): `[tool.dpverify]` in the nearest
pyproject.toml, or dpverify.toml, sets the defaults of --tol, --expect-tol, --jobs, --store,
--method, --strict and --exclude; a flag overrides it; an unknown key or a bad value is
one line naming the file and the key, exit 2. And `check --diff`, which prints what
`--update` would write and changes nothing; and `--exclude`."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from dpverify.cli import every_command, main
from dpverify.cli.config import option_named
from dpverify.errors import SpecError
from dpverify.runner.config import APPLIES, KEYS, find_config, load_config

XOR3 = 0.5493430832841081
XOR = """[problem]
name = "xor-3"
parties = 3
epsilon = 1.0

[observer]
function = "xor"
gain = "indicator"
"""
EXPECTED = XOR + "\n[expect.observer]\naverage = 0.5493\nworst = {worst}\n"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    """A repository with problems/ and a sub-folder; the working directory is its top."""
    root = tmp_path / "paper"
    (root / ".git").mkdir(parents=True)
    (root / "problems" / "large").mkdir(parents=True)
    (root / "problems" / "xor-3.toml").write_text(EXPECTED.format(worst=XOR3))
    (root / "problems" / "large" / "big.toml").write_text(XOR.replace("xor-3", "big"))
    monkeypatch.chdir(root)
    return root


def pyproject(root: Path, table: str) -> Path:
    path = root / "pyproject.toml"
    path.write_text('[project]\nname = "paper"\n\n[tool.dpverify]\n' + table)
    return path


# -- reading ------------------------------------------------------------------------------
def test_every_key_is_the_option_of_its_name_on_its_commands() -> None:
    """The table of the configuration and the commands agree: each key's commands have
    the option `--key`, and every command with the shared option is listed (derive's
    --tol is a tolerance of its own)."""
    assert set(APPLIES) == set(KEYS)
    for key, commands in APPLIES.items():
        for name in commands:
            assert option_named(every_command()[name], f"--{key}") is not None, (key, name)
        having = {name for name, command in every_command().items()
                  if option_named(command, f"--{key}") is not None}
        assert having - set(commands) <= ({"derive"} if key == "tol" else set()), key


def test_the_nearest_configuration_wins_and_the_search_stops_at_git(project) -> None:
    sub = project / "problems" / "large"
    assert find_config(sub) is None  # a pyproject.toml without [tool.dpverify] is passed by
    (project / "pyproject.toml").write_text('[project]\nname = "paper"\n')
    assert find_config(sub) is None
    pyproject(project, "jobs = 2\n")
    assert find_config(sub) == project / "pyproject.toml"
    (project / "problems" / "dpverify.toml").write_text("jobs = 1\n")
    assert find_config(sub) == project / "problems" / "dpverify.toml"
    (project / "problems" / "dpverify.toml").unlink()
    above = project.parent / "pyproject.toml"  # above the repository: never read
    above.write_text("[tool.dpverify]\njobs = 3\n")
    (project / "pyproject.toml").unlink()
    assert find_config(sub) is None
    above.unlink()


def test_paths_are_relative_to_the_configuration(project, monkeypatch) -> None:
    pyproject(project, 'store = "cache/r.sqlite"\nexclude = ["problems/large", "*-draft.toml"]\n')
    monkeypatch.chdir(project / "problems")
    config = load_config()
    assert Path(config.values["store"]).resolve() == (project / "cache" / "r.sqlite").resolve()
    assert config.values["exclude"] == (str(project / "problems" / "large"), "*-draft.toml")


@pytest.mark.parametrize(("table", "key", "message"), [
    ("expect_tol = 0.1\n", "tool.dpverify.expect_tol", "unknown key; did you mean `expect-tol`?"),
    ("jobz = 2\n", "tool.dpverify.jobz", "unknown key; allowed here: tol, expect-tol"),
    ("Jobs = 2\n", "tool.dpverify.Jobs", "unknown key; did you mean `jobs`?"),
    ("jobs = 0\n", "tool.dpverify.jobs", "must be an integer >= 1"),
    ("jobs = true\n", "tool.dpverify.jobs", "must be an integer >= 1"),
    ("tol = -1\n", "tool.dpverify.tol", "must be a finite number >= 0"),
    ("method = \"fast\"\n", "tool.dpverify.method", "allowed: auto, lp, orbit, proof"),
    ("strict = \"yes\"\n", "tool.dpverify.strict", "must be true or false"),
    ("exclude = [1]\n", "tool.dpverify.exclude", "must be a list of glob patterns"),
])
def test_bad_configuration_names_file_and_key(project, table, key, message) -> None:
    pyproject(project, table)
    with pytest.raises(SpecError) as info:
        load_config()
    assert str(info.value).startswith(f"pyproject.toml: `{key}` = ")
    assert message in str(info.value)
    run = invoke("check", "problems/xor-3.toml")  # every command refuses it, before running
    assert run.exit_code == 2 and run.stderr.strip() == f"dpverify: {info.value}"
    assert "Traceback" not in run.output


def test_a_tool_table_in_dpverify_toml_is_told_where_its_keys_go(project) -> None:
    """dpverify.toml takes the keys at its top level; `[tool.dpverify]` copied from a
    pyproject.toml is told so (the control: an unknown key there gets no such hint)."""
    own = project / "dpverify.toml"
    own.write_text("[tool.dpverify]\njobs = 1\n")
    run = invoke("verify", "problems/xor-3.toml")
    assert run.exit_code == 2
    assert "`tool` = {'dpverify': {'jobs': 1}}: unknown key; in dpverify.toml the keys " \
        "stand at the top level, without [tool.dpverify]" in run.stderr, run.stderr
    own.write_text("tools = 1\n")
    other = invoke("verify", "problems/xor-3.toml")
    assert other.exit_code == 2 and "top level" not in other.stderr, other.stderr


def test_a_configuration_that_is_not_toml(project) -> None:
    (project / "dpverify.toml").write_text("jobs = \n")
    run = invoke("verify", "problems/xor-3.toml")
    assert run.exit_code == 2 and run.stderr.startswith("dpverify: dpverify.toml: TOML syntax")


# -- reaching the commands ------------------------------------------------------------------
def test_expect_tol_and_strict_from_the_configuration_and_flags_override(project) -> None:
    (project / "problems" / "xor-3.toml").write_text(EXPECTED.format(worst=0.55))
    store = ["--store", str(project / "s.sqlite"), "--jobs", "1", "--quiet"]
    assert invoke("check", "problems/xor-3.toml", *store).exit_code == 1  # 0.55 is off
    pyproject(project, "expect-tol = 0.01\n")
    held = invoke("check", "problems/xor-3.toml", *store)
    assert held.exit_code == 0, held.output
    overridden = invoke("check", "problems/xor-3.toml", *store, "--expect-tol", "1e-6")
    assert overridden.exit_code == 1  # the flag wins
    (project / "problems" / "plain.toml").write_text(XOR.replace("xor-3", "plain"))
    assert invoke("check", "problems/plain.toml", *store).exit_code == 0  # unchecked: fine
    pyproject(project, "strict = true\n")
    assert invoke("check", "problems/plain.toml", *store).exit_code == 1  # now a failure
    # and a flag turns it off again (a boolean set by the configuration needs its "no")
    relaxed = invoke("check", "problems/plain.toml", *store, "--no-strict")
    assert relaxed.exit_code == 0, relaxed.output


def test_store_jobs_method_and_tol_from_the_configuration(project, monkeypatch) -> None:
    pyproject(project, 'store = "cache/results.sqlite"\njobs = 1\nmethod = "lp"\n'
                       "tol = 1e-7\n")
    monkeypatch.chdir(project / "problems")  # a sub-folder: the store is the project's
    run = invoke("batch", "xor-3.toml")
    assert run.exit_code == 0, run.output
    assert (project / "cache" / "results.sqlite").is_file()
    assert not (project / "problems" / ".dpverify").exists()
    assert "running on 1 worker" in run.stderr
    verify = invoke("verify", "xor-3.toml", "--json")
    (result,) = json.loads(verify.stdout)
    assert {r["method"] for r in result["results"]} == {"lp"}
    verify = invoke("verify", "xor-3.toml", "--json", "--method", "proof")
    (result,) = json.loads(verify.stdout)
    assert {r["method"] for r in result["results"]} == {"proof"}
    # --help shows the configured defaults
    help_text = "".join(invoke("check", "--help").stdout.split())
    assert "[default:1e-07]" in help_text and "cache/results.sqlite]" in help_text


def test_exclude_from_the_configuration_and_the_flag(project) -> None:
    pyproject(project, 'exclude = ["problems/large"]\n')
    run = invoke("verify", "problems", "--quiet")
    assert run.exit_code == 0 and run.stdout.strip().startswith("1 problem:"), run.output
    named = invoke("verify", "problems/large/big.toml", "problems/xor-3.toml", "--quiet")
    assert "skipped problems/large/big.toml: excluded by the pattern" in named.stderr
    assert named.stdout.strip().startswith("1 problem:")
    flag = invoke("verify", "problems", "--quiet", "--exclude", "xor-*.toml")
    assert flag.exit_code == 0 and flag.stdout.strip().startswith("1 problem:"), flag.output
    both = invoke("verify", "problems", "--exclude", "xor-*.toml", "--exclude", "large")
    assert both.exit_code == 2 and "no *.toml problem files found" in both.stderr


# -- check --diff ----------------------------------------------------------------------------
def test_diff_prints_what_update_would_write_and_changes_nothing(project) -> None:
    path = project / "problems" / "xor-3.toml"
    text = EXPECTED.replace("0.5493", repr(XOR3)).format(worst=0.55)  # one value off
    path.write_text(text)
    store = ["--store", str(project / "s.sqlite"), "--jobs", "1", "--quiet"]
    run = invoke("check", "problems/xor-3.toml", "--diff", *store)
    assert run.exit_code == 1
    assert path.read_text() == text  # nothing written
    assert "--- a/problems/xor-3.toml\n+++ b/problems/xor-3.toml\n" in run.stdout
    assert "\n-worst = 0.55\n+worst = 0.5493430832841081\n" in run.stdout
    assert "would update [expect] in problems/xor-3.toml (1 value" in run.stdout
    update = invoke("check", "problems/xor-3.toml", "--update", *store)
    assert update.exit_code == 0 and "updated [expect] in problems/xor-3.toml" in update.stdout
    after = path.read_text()
    import difflib

    diff = "".join(difflib.unified_diff(text.splitlines(True), after.splitlines(True),
                                        "a/problems/xor-3.toml", "b/problems/xor-3.toml"))
    assert diff and diff in run.stdout  # --diff showed exactly what --update wrote
    again = invoke("check", "problems/xor-3.toml", "--diff", *store)
    assert again.exit_code == 0 and "---" not in again.stdout
    both = invoke("check", "problems/xor-3.toml", "--diff", "--update", *store)
    assert both.exit_code == 2 and "choose one" in both.output


@pytest.mark.parametrize("ending, last", [("\n", ""), ("\r\n", "\r\n"), ("\r\n", "")],
                         ids=["no-newline-at-end", "crlf", "crlf-no-newline-at-end"])
def test_diff_applies_with_git_as_update_writes(tmp_path: Path, monkeypatch, ending: str,
                                                last: str) -> None:
    """The printed --diff, piped to `git apply`, gives byte for byte the file --update
    writes, for a file whose last line has no newline (the diff marks it) and for a file
    with CRLF line endings (the diff keeps its carriage returns, and --update writes the
    lines it adds with CRLF too, not a mix)."""
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    # `average` is replaced, `worst` added (a line that tomlkit writes)
    text = (XOR + "\n[expect.observer]\naverage = 0.5\n").rstrip("\n").replace(
        "\n", ending) + last
    monkeypatch.chdir(tmp_path)
    subprocess.run([git, "init", "-q", "."], check=True)
    Path("xor-3.toml").write_bytes(text.encode())
    run = CliRunner().invoke(main, ["check", "xor-3.toml", "--diff", "--quiet",
                                    "--no-store"])
    assert run.exit_code == 1, run.output
    assert Path("xor-3.toml").read_bytes() == text.encode()  # --diff writes nothing
    patch = run.stdout_bytes.split(b"\nmismatches\n")[0] + b"\n"
    assert (b"\\ No newline at end of file\n" in patch) == (last == "")
    Path("change.patch").write_bytes(patch)
    applied = subprocess.run([git, "apply", "change.patch"], capture_output=True, text=True)
    assert applied.returncode == 0, (applied.stderr, patch)
    Path("updated.toml").write_bytes(text.encode())
    update = CliRunner().invoke(main, ["check", "updated.toml", "--update", "--quiet",
                                       "--no-store"])
    assert update.exit_code == 0, update.output
    written = Path("updated.toml").read_bytes()
    assert Path("xor-3.toml").read_bytes() == written
    if ending == "\r\n":  # every line ends with CRLF, the added ones too
        assert written.count(b"\n") == written.count(b"\r\n") > text.count("\n")


def test_the_edge_does_not_touch_click_declarations() -> None:
    """The defaults reach click by the context's default_map: the declared defaults of the
    options stay what they are (the project's values exist only in a run)."""
    check = every_command()["check"]
    jobs = option_named(check, "--jobs")
    assert isinstance(jobs, click.Option) and jobs.default is None
