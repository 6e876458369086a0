"""dpverify as a user who installed a wheel has it (issue 26, points 1 and 7): the wheel's
metadata (licence, classifiers, keywords, licence file), the shipped problems inside it
(the repository's own files, through the links of dpverify/shipped/), `dpverify examples
DIR`, the install hints outside a checkout, every README example run from the installed
wheel, and CITATION.cff checked against the rules of CFF 1.2.0.

The wheel is built from a copy of the checkout (pip, no build isolation: the test extra
brings setuptools) and installed into a fresh virtual environment that sees this one's
dependencies through a .pth file but not its editable dpverify."""

from __future__ import annotations

import email.parser
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml

from dpverify.install import in_checkout, install_hint

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("pyproject.toml", "README.md", "LICENSE", "problems", "examples", "dpverify")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this checkout, built from a copy of it (the links kept as links)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    for name in COPIED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(ROOT / name, source / name)
    out = work / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--quiet", "--wheel-dir", str(out), str(source)], check=True,
                   capture_output=True, text=True, timeout=300)
    (built,) = out.glob("dpverify-*.whl")
    return built


def metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode("utf-8"))


def test_the_wheel_metadata_is_complete(wheel: Path) -> None:
    meta = metadata(wheel)
    assert meta["Name"] == "dpverify"
    assert meta["License-Expression"] == "BSD-3-Clause"
    assert meta.get_all("License-File") == ["LICENSE"]
    classifiers = meta.get_all("Classifier")
    for wanted in ("Intended Audience :: Science/Research", "Typing :: Typed",
                   "Topic :: Scientific/Engineering :: Mathematics",
                   "Programming Language :: Python :: 3.11"):
        assert wanted in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")]  # PEP 639: the expression
    keywords = meta["Keywords"].split(",")
    assert "differential privacy" in keywords and "randomized response" in keywords
    assert meta["Author"] == "The dpverify developers"
    # no address that leads nowhere: every Project-URL is absolute (there is none yet)
    for url in meta.get_all("Project-URL") or []:
        assert re.match(r"[^,]+, https://", url), url
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        licence = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
        assert z.read(licence) == (ROOT / "LICENSE").read_bytes()


def test_the_wheel_ships_the_repositorys_problems(wheel: Path) -> None:
    """Every problems/ and examples/ file, byte for byte, as package data: the files
    exist once in the repository (dpverify/shipped/ holds links to them)."""
    shipped = ROOT / "dpverify" / "shipped"
    assert (shipped / "problems").is_symlink() and (shipped / "examples").is_symlink()
    assert (shipped / "problems").resolve() == (ROOT / "problems").resolve()
    expected = {f"dpverify/shipped/{p.relative_to(ROOT).as_posix()}": p.read_bytes()
                for folder in ("problems", "examples")
                for p in sorted((ROOT / folder).rglob("*.toml"))}
    assert len(expected) > 40
    with zipfile.ZipFile(wheel) as z:
        got = {n: z.read(n) for n in z.namelist() if n.startswith("dpverify/shipped/")}
    assert got == expected


# -- a fresh environment with the wheel ----------------------------------------------------
@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory) -> Path:
    """A virtual environment holding the wheel; its dependencies are this environment's."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; "
                              "print(sysconfig.get_paths()['purelib'])"], check=True,
                             capture_output=True, text=True).stdout.strip()
    # this environment's packages, appended after the wheel's own (its .pth files, such as
    # the editable dpverify's, are not processed from there)
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                    "--quiet", "--no-deps", "--no-index", str(wheel)], check=True,
                   capture_output=True, text=True, timeout=300)
    return venv


def in_env(venv: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COLUMNS")}
    return subprocess.run([str(venv / "bin" / argv[0]), *argv[1:]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_examples_and_hints_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    where = in_env(installed, "python", "-c", "import dpverify, dpverify.install as i; "
                   "print(dpverify.__file__); print(i.in_checkout()); "
                   "print(i.install_hint('plot'))", cwd=tmp_path)
    origin, checkout, hint = where.stdout.splitlines()
    assert str(installed) in origin  # the wheel's dpverify, not the checkout's
    assert checkout == "False" and hint == "pip install 'dpverify[plot]'"
    help_text = " ".join(in_env(installed, "dpverify", "sweep", "--help", cwd=tmp_path)
                         .stdout.split())
    assert "pip install 'dpverify[plot]'" in help_text and ".venv/bin/pip" not in help_text
    made = in_env(installed, "dpverify", "examples", "work", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "work" / "problems" / "and-3.toml").read_bytes() == \
        (ROOT / "problems" / "and-3.toml").read_bytes()
    assert (tmp_path / "work" / "examples" / "geometric-remap.toml").is_file()
    run = in_env(installed, "dpverify", "verify", "problems/and-3.toml", "--quiet",
                 cwd=tmp_path / "work")
    assert run.returncode == 0 and run.stdout.startswith("1 problem: 1 optimal"), run.stderr
    again = in_env(installed, "dpverify", "examples", "work", cwd=tmp_path)
    assert again.returncode == 0 and "already there" in again.stdout  # idempotent
    (tmp_path / "work" / "problems" / "and-3.toml").write_text("# mine\n")
    clash = in_env(installed, "dpverify", "examples", "work", cwd=tmp_path)
    assert clash.returncode == 2 and "exists with other content" in clash.stderr
    assert (tmp_path / "work" / "problems" / "and-3.toml").read_text() == "# mine\n"


def test_every_readme_example_runs_from_the_wheel(installed: Path, tmp_path: Path,
                                                  monkeypatch) -> None:
    """The README's console examples, each run by the installed `dpverify` in a folder
    that `dpverify examples` filled, print what the page shows (the docs test's own
    reading and comparison)."""
    import test_docs

    sandbox = tmp_path / "work"
    assert in_env(installed, "dpverify", "examples", str(sandbox), cwd=tmp_path).returncode == 0
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TERM")}
    env["PYTHONUNBUFFERED"] = "1"  # stdout and stderr interleaved as written

    ran: list[list[str]] = []

    def run_installed(argv: list[str]) -> tuple[int, list[str]]:
        ran.append(argv)
        done = subprocess.run([str(installed / "bin" / "dpverify"), *argv[1:]], cwd=Path.cwd(),
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=300)
        return done.returncode, done.stdout.splitlines()

    monkeypatch.setattr(test_docs, "run_dpverify", run_installed)
    page = test_docs.Page(ROOT / "README.md", sandbox).run()
    assert not page.errors and not page.mismatches, test_docs.report(page)
    shown = sum(line.startswith("$ dpverify") for line in page.lines)
    assert len(ran) == shown >= 10  # every console example, by the installed command


# -- the hints in the checkout ---------------------------------------------------------------
def test_hints_in_the_checkout_and_outside(tmp_path: Path) -> None:
    assert in_checkout()  # the tests run from the checkout
    assert install_hint("plot") == ".venv/bin/pip install -e '.[plot]'"
    assert install_hint("dask", checkout=False) == "pip install 'dpverify[dask]'"
    fake = tmp_path / "site-packages" / "dpverify"
    fake.mkdir(parents=True)
    assert not in_checkout(fake)  # a package with no project beside it
    (tmp_path / "site-packages" / "pyproject.toml").write_text('[project]\nname = "other"\n')
    assert not in_checkout(fake)


# -- CITATION.cff --------------------------------------------------------------------------
# The rules of CFF 1.2.0 that the file uses, in our words: required keys, the keys allowed
# at each level, the types of the values, and the enumerations.
TOP = {"abstract", "authors", "cff-version", "commit", "contact", "date-released", "doi",
       "identifiers", "keywords", "license", "license-url", "message", "preferred-citation",
       "references", "repository", "repository-artifact", "repository-code", "title", "type",
       "url", "version"}
PERSON = {"address", "affiliation", "alias", "city", "country", "email", "family-names",
          "fax", "given-names", "name-particle", "name-suffix", "orcid", "post-code",
          "region", "tel", "website"}
ENTITY = {"address", "alias", "city", "country", "date-end", "date-start", "email", "fax",
          "location", "name", "orcid", "post-code", "region", "tel", "website"}
REFERENCE_TYPES = {"article", "book", "conference-paper", "conference", "proceedings",
                   "report", "software", "thesis", "generic", "manual", "unpublished"}
REFERENCE = {"abstract", "authors", "collection-doi", "collection-title", "collection-type",
             "conference", "doi", "edition", "editors", "end", "isbn", "issn", "issue",
             "journal", "keywords", "languages", "license", "month", "notes", "pages",
             "publisher", "start", "status", "title", "type", "url", "volume", "year"}


def cff_problems(data: object) -> list[str]:
    if not isinstance(data, dict):
        return ["the file is not a mapping"]
    problems = [f"unknown key {k}" for k in set(data) - TOP]
    problems += [f"missing {k}" for k in ("authors", "cff-version", "message", "title")
                 if k not in data]
    if data.get("cff-version") != "1.2.0":
        problems.append("cff-version must be the string 1.2.0")
    if data.get("type", "software") not in ("software", "dataset"):
        problems.append("type must be software or dataset")
    problems += [f"{key} must be a non-empty string" for key in ("message", "title", "abstract")
                 if key in data and not (isinstance(data[key], str) and data[key].strip())]
    problems += _authors(data.get("authors"), "authors")
    keywords = data.get("keywords", ["-"])
    if not (isinstance(keywords, list) and keywords and len(set(map(str, keywords)))
            == len(keywords) and all(isinstance(k, str) for k in keywords)):
        problems.append("keywords must be a list of distinct strings")
    if "date-released" in data and not re.fullmatch(r"\d{4}-\d\d-\d\d",
                                                    str(data["date-released"])):
        problems.append("date-released must be YYYY-MM-DD")
    references = data.get("references", [])
    if not isinstance(references, list) or not references:
        return [*problems, "references must be a non-empty list"]
    for i, ref in enumerate(references):
        problems += _reference(ref, f"references[{i}]")
    return problems


def _reference(ref: object, where: str) -> list[str]:
    if not isinstance(ref, dict):
        return [f"{where} is not a mapping"]
    problems = [f"{where}: unknown key {k}" for k in set(ref) - REFERENCE]
    problems += [f"{where}: missing {k}" for k in ("authors", "title", "type") if k not in ref]
    if ref.get("type") not in REFERENCE_TYPES:
        problems.append(f"{where}: type {ref.get('type')!r} is not a CFF reference type")
    problems += _authors(ref.get("authors"), f"{where}.authors")
    problems += [f"{where}.{key} must be an integer"
                 for key in ("year", "start", "end", "volume", "month")
                 if key in ref and (isinstance(ref[key], bool) or not isinstance(ref[key], int))]
    conference = ref.get("conference")
    if conference is not None and (not isinstance(conference, dict) or "name" not in conference
                                   or set(conference) - ENTITY):
        problems.append(f"{where}.conference must be an entity with a name")
    return problems


def _authors(authors: object, where: str) -> list[str]:
    if not isinstance(authors, list) or not authors:
        return [f"{where} must be a non-empty list"]
    problems = []
    for i, author in enumerate(authors):
        if not isinstance(author, dict) or not author:
            problems.append(f"{where}[{i}] is not a person or an entity")
        elif "name" in author:  # an entity
            problems += [f"{where}[{i}]: unknown key {k}" for k in set(author) - ENTITY]
        else:  # a person
            problems += [f"{where}[{i}]: unknown key {k}" for k in set(author) - PERSON]
    return problems


def test_citation_cff_follows_cff_1_2_0() -> None:
    data = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff_problems(data) == []
    assert data["license"] == "BSD-3-Clause" and data["title"].startswith("dpverify")
    titles = {r["title"]: r for r in data["references"]}
    kov = titles["Secure Multi-party Differential Privacy"]
    assert [a["family-names"] for a in kov["authors"]] == ["Kairouz", "Oh", "Viswanath"]
    assert kov["year"] == 2015 and "NeurIPS" in kov["collection-title"]
    gs = titles["Universally Optimal Privacy Mechanisms for Minimax Agents"]
    assert [a["family-names"] for a in gs["authors"]] == ["Gupte", "Sundararajan"]
    assert gs["year"] == 2010 and "PODS" in gs["collection-title"]
    # the version is the package's
    from dpverify.version import __version__

    assert str(data["version"]) == __version__


def test_the_cff_check_catches_what_it_claims() -> None:
    """Negative controls of the structural check."""
    good = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff_problems({**good, "cff-version": "1.1.0"})
    assert cff_problems({k: v for k, v in good.items() if k != "message"})
    assert cff_problems({**good, "licence": "BSD-3-Clause"})  # a misspelt key
    broken = [{**good["references"][0], "type": "paper"}]
    assert cff_problems({**good, "references": broken})
    assert cff_problems({**good, "authors": [{"surname": "x"}]})


def test_licence_and_changelog() -> None:
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("BSD 3-Clause License")
    assert "the dpverify developers" in licence
    assert "Neither the name of the copyright holder" in licence  # the third clause
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert changelog.startswith("# Changelog") and "## [Unreleased]" in changelog
