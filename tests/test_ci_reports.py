"""`check` for CI systems (issue 26, point 2): the JUnit XML report validated against a
JUnit schema (tests/data/junit.xsd) by a real XML Schema validator, the GitHub annotations
matched line by line at the line of each expectation, `--json` with the verdicts and the
line, invalid files counted as invalid, a verdict mismatch that reads as one, and the
lines of `[expect]` entries in every way TOML writes them."""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from click.testing import CliRunner
from inline import InlineExecutor

from dpverify.cli import main
from dpverify.runner import Store
from dpverify.runner.check import CaseKind, run_check
from dpverify.runner.reports import annotation, github_annotations, invalid_line, junit_xml
from dpverify.runner.toml_lines import expectation_line, key_lines
from dpverify.verifiers.options import VerifyOptions

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = xmlschema.XMLSchema(ROOT / "tests" / "data" / "junit.xsd")
XOR3 = 0.5493430832841081  # observer XOR of 3 bits at epsilon 1 (KOV Corollary 3.1)

XOR = """[problem]
name = "xor-3"
parties = 3
epsilon = 1.0

[observer]
function = "xor"
gain = "indicator"

[expect.observer]
average = {average}
worst = 0.5493430832841081
"""
PARITY_GAP = (ROOT / "problems" / "count" / "parity-gap-6.toml").read_text()
BAD = "[problem]\nparties = 3\nepsilon = -1\n\n[observer]\nfunction = \"xor\"\n"
UNCHECKED = XOR.split("[expect.observer]")[0]


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the first line of `text` that starts with `needle`."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(needle))


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A held file, a value mismatch, an expected verdict that does not come (the shipped
    gap with `verdict = "optimal"`), an invalid file and one without [expect]."""
    out = {"held": XOR.format(average=XOR3), "value": XOR.format(average=0.55),
           "verdict": PARITY_GAP.replace('verdict = "gap"', 'verdict = "optimal"'),
           "invalid": BAD, "unchecked": UNCHECKED}
    assert out["verdict"] != PARITY_GAP
    paths = {}
    for name, text in out.items():
        paths[name] = tmp_path / f"{name}.toml"
        paths[name].write_text(text)
    return paths


def check(paths, tmp_path: Path, **kw):
    with Store(tmp_path / "store.sqlite") as store:
        return run_check([str(p) for p in paths], VerifyOptions(), store=store,
                         executor=InlineExecutor(), **kw)


# -- the report --------------------------------------------------------------------------
def test_invalid_files_are_invalid_not_mismatches(files, tmp_path: Path) -> None:
    report = check(files.values(), tmp_path)
    assert [i.source for i in report.invalid] == [str(files["invalid"])]
    assert all(m.source != str(files["invalid"]) for m in report.mismatches)
    assert {m.source: m.kind for m in report.mismatches} == {
        str(files["value"]): CaseKind.VALUE, str(files["verdict"]): CaseKind.VERDICT}
    assert report.exit_status() == 2  # the invalid file wins, as spec.md's rule says
    assert [i.source for i in report.unchecked] == [str(files["unchecked"])]


def test_a_verdict_mismatch_reads_as_one(files, tmp_path: Path) -> None:
    """The shipped gap expected `optimal`: the row compares verdicts, not two equal numbers
    with a difference of +0 (the defect of issue 26)."""
    (case,) = check([files["verdict"]], tmp_path).mismatches
    assert case.kind is CaseKind.VERDICT
    assert (case.expected_verdict, case.got_verdict) == ("optimal", "gap")
    assert case.difference is None  # no "+0"
    assert case.message().startswith("count-parity-gap-6 consumer minimax: verdict mismatch: "
                                     "expected optimal, got gap")
    text = files["verdict"].read_text()
    assert case.line == line_of(text, 'verdict = "optimal"')


def test_value_mismatches_carry_the_line_of_their_expectation(files, tmp_path) -> None:
    report = check([files["value"], files["held"]], tmp_path)
    (case,) = report.mismatches
    assert case.kind is CaseKind.VALUE and case.expected == 0.55 and case.got == XOR3
    assert case.line == line_of(files["value"].read_text(), "average = 0.55")
    assert case.difference == pytest.approx(XOR3 - 0.55)
    held = {(c.source, c.accuracy): c.line for c in report.held}
    text = files["held"].read_text()
    assert held == {(str(files["held"]), "average"): line_of(text, "average ="),
                    (str(files["held"]), "worst"): line_of(text, "worst ="),
                    (str(files["value"]), "worst"): line_of(text, "worst =")}


# -- JUnit XML ---------------------------------------------------------------------------
def test_junit_is_valid_against_the_schema_and_counts_what_check_counts(files,
                                                                        tmp_path) -> None:
    report = check(files.values(), tmp_path)
    text = junit_xml(report)
    SCHEMA.validate(text)  # raises on any element, attribute or value out of place
    root = ET.fromstring(text)
    assert root.tag == "testsuites"
    cases = root.findall("testsuite/testcase")
    failures = [c for c in cases if c.find("failure") is not None]
    errors = [c for c in cases if c.find("error") is not None]
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert len(failures) == len(report.mismatches) == 2
    assert len(errors) == len(report.invalid) == 1
    assert len(skipped) == len(report.unchecked) == 1
    assert len(cases) == len(report.held) + len(report.mismatches) + 1 + 1
    assert (root.get("tests"), root.get("failures"), root.get("errors"),
            root.get("skipped")) == (str(len(cases)), "2", "1", "1")
    for suite in root.findall("testsuite"):  # each suite's counts are its own cases'
        mine = suite.findall("testcase")
        assert suite.get("tests") == str(len(mine))
        assert suite.get("failures") == str(sum(c.find("failure") is not None for c in mine))
    # one suite per file; one case per expectation, named "agent accuracy"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {str(p) for p in files.values()}
    held = [c.get("name") for c in suites[str(files["held"])].findall("testcase")]
    assert held == ["observer average", "observer worst"]
    (value,) = [c.find("failure") for c in suites[str(files["value"])].findall("testcase")
                if c.find("failure") is not None]
    assert value.get("type") == "value"
    assert "expected 0.55, got 0.549343083284" in value.get("message")
    line = line_of(files["value"].read_text(), "average = 0.55")
    assert f"at: {files['value']}:{line}" in value.text
    assert "got: verdict optimal, 0.5493430832841081" in value.text
    (verdict,) = [c.find("failure") for c in suites[str(files["verdict"])].findall("testcase")]
    assert verdict.get("type") == "verdict" and "expected optimal, got gap" in \
        verdict.get("message")
    (invalid,) = suites[str(files["invalid"])].findall("testcase/error")
    assert invalid.get("type") == "invalid" and "problem.epsilon" in invalid.get("message")


def test_the_schema_refuses_what_a_strict_reader_refuses() -> None:
    """Negative controls: the schema is not a pass-all."""
    good = ('<testsuites><testsuite name="s" tests="1"><testcase name="c">'
            '<failure message="m">x</failure></testcase></testsuite></testsuites>')
    SCHEMA.validate(good)
    for bad in (good.replace(' name="c"', ""),  # a test case without a name
                good.replace('tests="1"', 'tests="one"'),  # a count that is no integer
                good.replace("<testcase", '<testcase line="3"'),  # an unknown attribute
                good.replace("<failure", "<fail").replace("</failure>", "</fail>"),
                '<testsuites><failure message="m"/></testsuites>'):  # out of place
        assert not SCHEMA.is_valid(bad), bad


def test_junit_under_strict_fails_the_unchecked_problem(files, tmp_path) -> None:
    report = check([files["unchecked"]], tmp_path, strict=True)
    root = ET.fromstring(junit_xml(report))
    SCHEMA.validate(junit_xml(report))
    (failure,) = root.findall("testsuite/testcase/failure")
    assert failure.get("type") == "unchecked" and report.exit_status() == 1


# -- GitHub annotations ------------------------------------------------------------------
ANNOTATION = re.compile(r"^::(error|warning) (?P<props>[^:]*)::(?P<message>.*)$")


def test_github_annotations_one_per_mismatch_at_its_line(files, tmp_path) -> None:
    report = check(files.values(), tmp_path)
    lines = github_annotations(report)
    parsed = [ANNOTATION.match(line) for line in lines]
    assert all(parsed), lines
    props = [dict(p.split("=", 1) for p in m.group("props").split(",")) for m in parsed]
    errors = [(p["file"], p.get("line")) for m, p in zip(parsed, props, strict=True)
              if m.group(1) == "error"]
    value_line = line_of(files["value"].read_text(), "average = 0.55")
    verdict_line = line_of(files["verdict"].read_text(), 'verdict = "optimal"')
    invalid_line = str(line_of(BAD, "epsilon = -1"))  # the key its reason names
    assert sorted(errors) == sorted([(str(files["invalid"]), invalid_line),
                                     (str(files["value"]), str(value_line)),
                                     (str(files["verdict"]), str(verdict_line))])
    warnings = [p["file"] for m, p in zip(parsed, props, strict=True)
                if m.group(1) == "warning"]
    assert warnings == [str(files["unchecked"])]
    assert all("title" in p and "dpverify check%3A" in p["title"] for p in props)


def test_an_invalid_file_is_annotated_at_the_line_it_names(tmp_path) -> None:
    """A syntax error at its own line, a bad value at its key's line (an entry of a list at
    the list's), a missing key at its table's; a reason whose key the file does not hold
    anywhere has no line (the control: the pointer is found, not made up)."""
    texts = {
        "syntax": "[problem]\nparties = = 3\n",
        "value": "[problem]\nname = \"v\"\nparties = 2\n\nepsilon = [1, -1]\n"
                 "[observer]\nfunction = \"xor\"\n",
        "missing": "# no parties\n\n[problem]\nepsilon = 1\n[observer]\nfunction = \"xor\"\n",
        "agent": "[problem]\nparties = 2\nepsilon = 1\n[observer]\nfunction = \"xor\"\n"
                 "[expect.party.2]\naverage = 0.5\n",
    }
    paths = []
    for name, text in texts.items():
        paths.append(tmp_path / f"{name}.toml")
        paths[-1].write_text(text)
    report = check(paths, tmp_path)
    assert len(report.invalid) == len(texts)
    at = {}
    for line in github_annotations(report):
        props = dict(p.split("=", 1) for p in ANNOTATION.match(line).group("props").split(","))
        at[Path(props["file"]).stem] = props.get("line")
    assert at == {"syntax": "2", "value": "5", "missing": "3", "agent": "6"}, \
        [i.reason for i in report.invalid]
    item = report.invalid[0]
    stray = dataclasses.replace(item, result=dataclasses.replace(
        item.result, reason=f"{item.source}: `nowhere.key`: bad"))
    assert stray.reason.endswith("`nowhere.key`: bad") and invalid_line(stray) is None


def test_annotation_escaping() -> None:
    """GitHub's escapes: % CR LF in the message; also : and , in a property."""
    line = annotation("error", "50% off\nnext", file="a,b:c.toml", line=3, title="t: x")
    assert line == "::error file=a%2Cb%3Ac.toml,line=3,title=t%3A x::50%25 off%0Anext"


# -- the command line ---------------------------------------------------------------------
def invoke(*args: str, **kw):
    return CliRunner().invoke(main, list(args), **kw)


def test_cli_format_github_junit_and_json(files, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = str(tmp_path / "s.sqlite")
    names = [p.name for p in (files["value"], files["verdict"], files["held"])]
    run = invoke("check", *names, "--format", "github", "--junit", "report.xml",
                 "--store", store, "--jobs", "1", "--quiet")
    assert run.exit_code == 1, run.output
    out = run.stdout.splitlines()
    line = line_of(files["value"].read_text(), "average = 0.55")
    errors = [s for s in out if s.startswith("::error ")]
    assert len(errors) == 2
    assert [s for s in errors if "value.toml" in s][0].startswith(
        f"::error file=value.toml,line={line},title=dpverify check%3A value mismatch::"
        "xor-3 observer average: expected 0.55, got 0.549343083284")
    assert out[-1].startswith("check FAILED: 3 problems, 3 expectations held, 2 mismatches")
    SCHEMA.validate((tmp_path / "report.xml").read_text())

    run = invoke("check", *names, "--json", "--store", store, "--jobs", "1")
    data = json.loads(run.stdout)  # JSON only on stdout
    by_kind = {m["kind"]: m for m in data["mismatches"]}
    assert by_kind["verdict"]["expected_verdict"] == "optimal"
    assert by_kind["verdict"]["got_verdict"] == "gap"
    assert by_kind["value"]["line"] == line and by_kind["value"]["got"] == XOR3
    assert data["invalid"] == [] and data["exit_status"] == 1

    run = invoke("check", "invalid.toml", "held.toml", "--json", "--store", store,
                 "--jobs", "1")
    data = json.loads(run.stdout)
    assert run.exit_code == 2 and data["mismatches"] == []
    assert [i["source"] for i in data["invalid"]] == ["invalid.toml"]


def test_cli_table_shows_verdicts_and_the_line(files, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = invoke("check", "verdict.toml", "invalid.toml", "--store", str(tmp_path / "s"),
                 "--jobs", "1", "--quiet")
    assert run.exit_code == 2
    line = line_of(files["verdict"].read_text(), 'verdict = "optimal"')
    row = next(r for r in run.stdout.splitlines() if r.startswith("count-parity-gap-6"))
    cells = [c.strip() for c in re.split(r"[│┃]", row)]
    assert cells[1:7] == [f"verdict.toml:{line}", "consumer", "minimax", "optimal", "gap", "-"]
    assert "invalid (1):" in run.stdout and "0.333333333333 │ 0.333333333333" not in run.stdout
    assert re.fullmatch(r"check FAILED: 2 problems, 0 expectations held, 1 mismatch, "
                        r"1 invalid, 0 unchecked \(\d+\.\d\d s\)",
                        run.stdout.strip().splitlines()[-1])


def test_an_undecided_result_is_counted_apart_from_the_mismatches(files, tmp_path,
                                                                  monkeypatch) -> None:
    """A refused problem (the LP over --max-nonzeros) decided nothing: the summary counts it
    as undecided (exit 3), not as a mismatch; the control, a value that no longer holds,
    is a mismatch and nothing is undecided."""
    monkeypatch.chdir(tmp_path)
    refused = invoke("check", "held.toml", "--method", "lp", "--max-nonzeros", "10",
                     "--no-store", "--jobs", "1", "--quiet")
    assert refused.exit_code == 3, refused.output
    assert re.fullmatch(r"check FAILED: 1 problem, 0 expectations held, 0 mismatches, "
                        r"1 undecided, 0 unchecked \(\d+\.\d\d s\)",
                        refused.stdout.strip().splitlines()[-1]), refused.stdout
    value = invoke("check", "value.toml", "--no-store", "--jobs", "1", "--quiet")
    assert value.exit_code == 1 and "undecided" not in value.stdout
    assert ", 1 mismatch, 0 unchecked" in value.stdout.strip().splitlines()[-1]


def test_json_and_another_format_contradict(files, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = invoke("check", "held.toml", "--json", "--format", "github")
    assert run.exit_code == 2 and "contradict" in run.output


# -- where expectations are written ------------------------------------------------------
LINES = '''# a comment with [expect.observer] in it
[problem]
name = "x"
description = """a multi-line string
[expect.observer]
average = 3
"""
literal = \'\'\'one
[expect]\'\'\'
array = [1, [2,
  3], # [expect]
  { average = 1 }]

[expect.observer]
"average" = 0.5  # quoted key
worst = 1

[expect]
party.1.worst = 0.25
party.2 = { average = 0.75, verdict = "gap" }

[expect.consumer]
minimax = 0.1
'''


def test_key_lines_follow_toml_structure() -> None:
    tomllib.loads(LINES)  # valid TOML
    lines = key_lines(LINES)
    assert expectation_line(lines, "observer", "average") == 15  # not the string's line 6
    assert expectation_line(lines, "observer", "worst") == 16
    assert expectation_line(lines, "party:1", "worst") == 19
    assert expectation_line(lines, "party:2", "average") == 20
    assert expectation_line(lines, "party:2", "average", verdict=True) == 20
    assert expectation_line(lines, "consumer", "minimax") == 23
    assert expectation_line(lines, "consumer", "bayes") == 22  # its table's line
    assert ("average",) not in lines  # keys inside an array have no path of their own


def test_key_lines_of_every_shipped_problem() -> None:
    """Every scalar key of every shipped file is found, at a line that holds it."""
    for path in sorted((ROOT / "problems").rglob("*.toml")):
        text = path.read_text()
        lines = key_lines(text)
        rows = text.splitlines()

        def walk(table, prefix, rows=rows, lines=lines, path=path):
            for key, value in table.items():
                here = (*prefix, key)
                if isinstance(value, dict):
                    walk(value, here)
                elif not isinstance(value, list):
                    assert here in lines, (path, here)
                    assert key in rows[lines[here] - 1], (path, here)

        walk(tomllib.loads(text), ())


def test_key_lines_stop_quietly_on_what_they_do_not_follow() -> None:
    assert key_lines("[a]\nx = 1\n= broken\ny = 2\n") == {("a",): 1, ("a", "x"): 2}


class _CtrlC(InlineExecutor):
    """Runs the first task, then Ctrl-C: a run stopped half-way, as the runner sees it."""

    def _submit(self, task):
        if self.submitted:
            raise KeyboardInterrupt
        return super()._submit(task)


@pytest.mark.parametrize("stopped", [True, False], ids=["interrupted", "control"])
def test_an_interrupted_check_does_not_report_green(tmp_path: Path, stopped: bool) -> None:
    """Ctrl-C after the first of two problems whose expectations hold: the finished one's
    cases pass, so the JUnit report and the annotations must say that the run was
    interrupted (one error each, naming the problem not checked), and --json too; the
    control, the same run to the end, reports nothing of the kind."""
    paths = [tmp_path / f"x{i}.toml" for i in range(2)]
    for i, path in enumerate(paths):  # two contents (one file's twin would run once)
        path.write_text(XOR.format(average=XOR3).replace("xor-3", f"xor-3-{i}"))
    with Store(tmp_path / "store.sqlite") as store:
        report = run_check([str(p) for p in paths], VerifyOptions(), store=store,
                           executor=_CtrlC() if stopped else InlineExecutor())
    assert report.batch.interrupted is stopped and not report.mismatches
    assert len(report.batch.items) == (1 if stopped else 2)
    assert int(report.exit_status()) == (130 if stopped else 0)
    root = ET.fromstring(junit_xml(report))
    SCHEMA.validate(junit_xml(report))
    errors = root.findall(".//testcase/error")
    lines = github_annotations(report)
    assert report.to_dict()["interrupted"] is stopped
    if stopped:
        (error,) = errors
        assert error.get("type") == "interrupted" and "1 of 2 problems not checked" in \
            error.get("message", "")
        assert root.get("errors") == "1"
        assert lines == ["::error title=dpverify check%3A interrupted::the check was "
                         "interrupted: 1 of 2 problems not checked (run it again to finish)"]
    else:
        assert errors == [] and root.get("errors") == "0" and lines == []
