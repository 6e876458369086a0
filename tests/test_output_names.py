"""A problem's `name` never decides where a file is written (issue 17, A5): certificates,
witness files, counterexamples and survey instances are named after a sanitised stem, and
every output path stays directly inside the directory the user gave."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.errors import InputError
from dpverify.filenames import MAX_STEM_BYTES, file_stem, output_path

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ["../../x", "/abs", "/abs/dir/", "a/b", "..", ".", "", "nul\x00byte", "x" * 300,
           "é" * 200, "back\\slash", ".hidden", "  spaced name  ", "a:b", "~", "-"]
SAFE = ["xor-2", "max-3x2-gap", "and_3", "k=5".replace("=", "-"), "v1.2", "a+b"]

XOR = """[problem]
name = {name}
parties = 2
lambda = 3
[observer]
function = "xor"
"""


def problem_file(folder: Path, template: str, name: str) -> Path:
    path = folder / "problem.toml"
    # a JSON string is a TOML basic string (NUL becomes "\u0000")
    path.write_text(template.replace("{name}", json.dumps(name)), encoding="utf-8")
    return path


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_gives_one_plain_component(name: str) -> None:
    stem = file_stem(name)
    assert stem and "/" not in stem and "\\" not in stem and "\x00" not in stem
    assert not stem.startswith(".") and stem not in (".", "..")
    assert Path(stem).name == stem
    assert len(stem.encode("utf-8")) <= MAX_STEM_BYTES
    assert stem != name  # each of these is changed, and says so by its hash suffix


@pytest.mark.parametrize("name", SAFE)
def test_a_plain_name_is_kept_as_it_is(name: str) -> None:
    assert file_stem(name) == name


def test_different_names_never_share_a_file() -> None:
    names = HOSTILE + SAFE + ["a_b", "a/b", "a\\b", "x" * 301, "x" * 299]
    stems = [file_stem(n) for n in names]
    assert len(set(stems)) == len(set(names))


@pytest.mark.parametrize("bad", ["../x", "/abs", "a/b", "..", ".", "", "a\x00b"])
def test_output_path_refuses_anything_but_a_plain_file_name(tmp_path: Path, bad: str) -> None:
    with pytest.raises(InputError):
        output_path(tmp_path, bad)
    assert output_path(tmp_path, "ok.toml") == tmp_path / "ok.toml"  # negative control


def test_output_path_refuses_a_symlink_that_leads_out(tmp_path: Path) -> None:
    inside = tmp_path / "out"
    inside.mkdir()
    (inside / "link.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(InputError, match="outside"):
        output_path(inside, "link.json")


@pytest.mark.parametrize("name", HOSTILE)
def test_certify_writes_only_into_the_output_directory(tmp_path: Path, monkeypatch,
                                                       name: str) -> None:
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    spec = problem_file(work, XOR, name)
    run = CliRunner().invoke(main, ["certify", "-o", "certdir", "--quiet", str(spec)])
    assert run.exit_code == 0, run.output
    written = files_under(tmp_path) - {spec}
    assert len(written) == 2  # average and worst
    assert all(p.parent == work / "certdir" for p in written), written
    assert all(p.name.startswith(file_stem(name) + ".observer.") for p in written)
    # the certificate still names the problem as written, and checks against it
    check = CliRunner().invoke(main, ["check-cert", str(spec), *map(str, sorted(written))])
    assert check.exit_code == 0, check.output


@pytest.mark.parametrize("name", ["../../escaped", "/abs", "a/b", "..", "", "nul\x00byte",
                                  "x" * 300])
def test_witness_files_stay_in_the_witness_directory(tmp_path: Path, monkeypatch,
                                                     name: str) -> None:
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    text = (ROOT / "problems" / "multisymbol" / "max-3x2-gap.toml").read_text(encoding="utf-8")
    spec = problem_file(work, text.replace('"max-3x2-gap"', "{name}", 1), name)
    run = CliRunner().invoke(main, ["verify", "--witness-dir", "wd", "--json", str(spec)])
    assert run.exit_code == 1, run.output  # the shipped gap: a witness beats m-ary RR
    (obj,) = json.loads(run.stdout)
    assert obj["problem"] == name
    written = files_under(tmp_path) - {spec}
    assert [p.parent for p in written] == [work / "wd"], written
    assert obj["results"][0]["witness"] == os.path.join("wd", written.pop().name)


def test_the_unsanitised_join_would_escape(tmp_path: Path) -> None:
    """Negative control: the name, joined as it is, leaves the directory."""
    folder = tmp_path / "out"
    assert (folder / "../../escaped.cert.json").resolve().parent != folder.resolve()
    assert (folder / f"{file_stem('../../escaped')}.cert.json").resolve().parent == \
        folder.resolve()


@pytest.mark.parametrize("name", ["../../escaped", "/abs", "", "nul\x00byte"])
def test_falsify_counterexamples_stay_in_their_directory(tmp_path: Path, monkeypatch,
                                                         name: str) -> None:
    """A counterexample is named after the problem: with the bound tampered (as in
    test_falsify's negative control) RR beats it, and the file lands in the directory."""
    import dataclasses
    import tomllib

    import dpverify.research.falsify as module
    from dpverify.research.falsify import SearchOptions, falsify
    from dpverify.spec import load
    from dpverify.verifiers.options import VerifyOptions

    real = module.verify_agent
    monkeypatch.setattr(module, "verify_agent", lambda *a, **k: dataclasses.replace(
        real(*a, **k), bound=real(*a, **k).bound - 0.01))
    work = tmp_path / "a" / "b"
    (work / "cx").mkdir(parents=True)  # the command creates it
    path = problem_file(work, XOR, name)
    document = tomllib.loads(path.read_text(encoding="utf-8"))
    result = falsify(load(path), document, SearchOptions(5, 3, 2, 3, 0), VerifyOptions(),
                     counterexample_dir=work / "cx")
    assert len(result.counterexamples) == 2
    written = files_under(tmp_path) - {path}
    assert len(written) == 2 and all(p.parent == work / "cx" for p in written), written
