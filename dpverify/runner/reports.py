"""`check`'s reports for CI systems: JUnit XML (`--junit FILE`) and GitHub Actions
annotations (`--format github`). Both are built from a `CheckReport` and nothing else.

**JUnit XML**, the test report that GitLab, Jenkins, Azure Pipelines and GitHub's test
reporters read (the element and attribute names of the Ant/Jenkins schema, and nothing
beyond them, so that a strict reader accepts it):

* `<testsuites>`, with the totals, holds one `<testsuite>` per problem file (`name` its
  path as given), in the order the problems finished; its `<properties>` name the
  problem, its kind and its verdict.
* One `<testcase>` per expectation (`name` "agent accuracy", `classname` the file):
  nothing inside when it holds; a `<failure>` carrying expected and got (and the line of
  the expectation) when it does not, or when a result has another verdict than
  expected, or an expectation has no result; an `<error>` when nothing was decided (a
  refusal, a timeout, a result with verdict `error`).
* A file that is not a valid problem is one `<testcase name="load">` with an `<error>`
  naming the file and the key: invalid, not a mismatch.
* A problem without `[expect]` is one `<testcase name="[expect]">`: `<skipped>`, or a
  `<failure>` under `--strict`.
* An interrupted run adds a `<testsuite name="dpverify check">` whose one case,
  `interrupted`, is an `<error>` saying how many problems were not checked: the cases of
  those that finished alone would pass where the run did not.

**GitHub annotations** are workflow commands, one line each on stdout:
`::error file=F,line=L,title=T::message` for every mismatch (at the line of its
expectation in the file), every invalid file (at the line of its syntax error or of the
key its reason names, when found) and every refusal; `::warning` for a
problem without `[expect]` (an `::error` under `--strict`); an interrupted run ends with
an `::error` that says so. GitHub shows them on the lines of the pull request's files.
"""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

from dpverify.records import record
from dpverify.runner.batch import BatchItem
from dpverify.runner.check import Case, CaseKind, CheckReport
from dpverify.runner.toml_lines import key_lines
from dpverify.verifiers.result import ProblemResult

FAILED_KINDS = (CaseKind.VALUE, CaseKind.VERDICT, CaseKind.MISSING)
UNCHECKED = "no [expect] table: its values are not under regression"


# -- JUnit XML ---------------------------------------------------------------------------
@record
class _Row:
    """One testcase: its name, its time, and at most one of failure, error or skipped."""

    name: str
    seconds: float = 0.0
    outcome: str = ""  # "", "failure", "error" or "skipped"
    kind: str = ""
    message: str = ""
    details: str = ""


def junit_xml(report: CheckReport, *, name: str = "dpverify check") -> str:
    """The JUnit XML text of `report` (UTF-8, with its declaration)."""
    by_source: dict[str, list[Case]] = {}
    for case in report.cases:
        by_source.setdefault(case.source, []).append(case)
    suites = [_suite(item, _rows(item, by_source.get(item.source, []), report))
              for item in _unique(report.batch.items)]
    if report.update_errors:
        suites.append(_update_suite(report.update_errors))
    if report.batch.interrupted:
        suites.append(_interrupted_suite(report))
    root = ET.Element("testsuites", {"name": name})
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for suite in suites:
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        root.append(suite)
    seconds = report.batch.seconds
    root.attrib.update({"tests": str(totals["tests"]), "failures": str(totals["failures"]),
                        "errors": str(totals["errors"]), "skipped": str(totals["skipped"]),
                        "time": _seconds(seconds)})
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=False).join(
        ('<?xml version="1.0" encoding="utf-8"?>\n', "\n"))


def _unique(items: list[BatchItem]) -> list[BatchItem]:
    """Each source once (a file named twice is run and reported once)."""
    seen: set[str] = set()
    out = []
    for item in items:
        if item.source not in seen:
            seen.add(item.source)
            out.append(item)
    return out


def _rows(item: BatchItem, cases: list[Case], report: CheckReport) -> list[_Row]:
    if item.invalid:
        return [_Row("load", item.seconds, "error", "invalid", _reason(item),
                     f"{item.source}: not a valid problem file\n{_reason(item)}")]
    seconds = _result_seconds(item.result)
    rows = [_case_row(case, seconds.get((case.agent, case.accuracy), 0.0)) for case in cases]
    if item in report.unchecked:
        outcome = "failure" if report.strict else "skipped"
        message = UNCHECKED + (" (a failure with --strict)" if report.strict else "")
        rows.append(_Row("[expect]", 0.0, outcome, "unchecked", f"{item.problem}: {message}",
                         f"{item.source}: {message}"))
    return rows


def _case_row(case: Case, seconds: float) -> _Row:
    name = f"{case.agent} {case.accuracy}" if case.agent != "-" else "verify"
    if case.held:
        return _Row(name, seconds)
    outcome = "failure" if case.kind in FAILED_KINDS else "error"
    details = [f"at: {case.where}",
               f"expected: {_value(case.expected_verdict, case.expected)}",
               f"got: {_value(case.got_verdict, case.got)}"]
    if case.difference is not None:
        details.append(f"difference: {case.difference:+.6g} (tolerance {case.allowed:.3g})")
    if case.note and case.kind is not CaseKind.VALUE:  # a value's note is its tolerance
        details.append(f"note: {case.note}")
    return _Row(name, seconds, outcome, case.kind.value, case.message(), "\n".join(details))


def _value(verdict: str | None, value: float | None) -> str:
    parts = [] if verdict is None else [f"verdict {verdict}"]
    if value is not None:
        parts.append(repr(value))
    return ", ".join(parts) or "-"


def _result_seconds(result: ProblemResult) -> dict[tuple[str, str], float]:
    return {(r.agent, r.accuracy): float(r.seconds) for r in result.results}


def _suite(item: BatchItem, rows: list[_Row]) -> ET.Element:
    counts = {"failure": 0, "error": 0, "skipped": 0}
    for row in rows:
        if row.outcome:
            counts[row.outcome] += 1
    suite = ET.Element("testsuite", {
        "name": item.source, "tests": str(len(rows)), "failures": str(counts["failure"]),
        "errors": str(counts["error"]), "skipped": str(counts["skipped"]),
        "time": _seconds(item.seconds), "timestamp": _timestamp(),
        "hostname": socket.gethostname() or "localhost"})
    properties = ET.SubElement(suite, "properties")
    for key, value in (("problem", item.problem), ("kind", item.result.kind),
                       ("verdict", item.category), ("cached", str(item.cached).lower())):
        ET.SubElement(properties, "property", {"name": key, "value": value})
    for row in rows:
        case = ET.SubElement(suite, "testcase", {"name": row.name, "classname": item.source,
                                                 "time": _seconds(row.seconds)})
        if row.outcome == "skipped":
            ET.SubElement(case, "skipped", {"message": row.message})
        elif row.outcome:
            element = ET.SubElement(case, row.outcome, {"message": row.message,
                                                        "type": row.kind})
            element.text = row.details
    return suite


def _update_suite(errors: list[str]) -> ET.Element:
    suite = ET.Element("testsuite", {
        "name": "check --update", "tests": str(len(errors)), "failures": "0",
        "errors": str(len(errors)), "skipped": "0", "time": "0",
        "timestamp": _timestamp(), "hostname": socket.gethostname() or "localhost"})
    for message in errors:
        source = message.partition(": ")[0]
        case = ET.SubElement(suite, "testcase", {"name": "update [expect]", "classname": source,
                                                 "time": "0"})
        ET.SubElement(case, "error", {"message": message, "type": "update"}).text = message
    return suite


def interrupted_message(report: CheckReport) -> str:
    """What an interrupted check did not do, for its reports: a report of the problems that
    finished alone would pass where the run did not."""
    done, total = len(report.batch.items), report.batch.total
    return (f"the check was interrupted: {total - done} of {total} problems not checked "
            "(run it again to finish)")


def _interrupted_suite(report: CheckReport) -> ET.Element:
    """One `<error>` case: the problems that did not finish are not checked."""
    suite = ET.Element("testsuite", {
        "name": "dpverify check", "tests": "1", "failures": "0", "errors": "1",
        "skipped": "0", "time": "0", "timestamp": _timestamp(),
        "hostname": socket.gethostname() or "localhost"})
    case = ET.SubElement(suite, "testcase", {"name": "interrupted",
                                             "classname": "dpverify check", "time": "0"})
    message = interrupted_message(report)
    ET.SubElement(case, "error", {"message": message, "type": "interrupted"}).text = message
    return suite


def _reason(item: BatchItem) -> str:
    return item.reason or "invalid problem file"


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def _timestamp() -> str:
    """The schema's timestamp: ISO 8601 without a time zone (the time in UTC)."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0).isoformat()


# -- GitHub annotations -------------------------------------------------------------------
def _data(text: str) -> str:
    """A workflow command's message, escaped as GitHub's toolkit escapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A workflow command's property value (`file`, `title`): ':' and ',' escaped too."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, *, file: str | None = None,
               line: int | None = None, title: str | None = None) -> str:
    """One workflow command: `::error file=F,line=L,title=T::message`."""
    props = []
    if file is not None:
        props.append(f"file={_property(file)}")
    if line is not None:
        props.append(f"line={line}")
    if title is not None:
        props.append(f"title={_property(title)}")
    return f"::{level}{' ' + ','.join(props) if props else ''}::{_data(message)}"


_SYNTAX_LINE = re.compile(r"\(at line (\d+), column \d+\)")
_KEY = re.compile(r"`([^`]+)`")


def invalid_line(item: BatchItem) -> int | None:
    """The line an invalid file's reason points at, for its annotation: a TOML syntax
    error's own `at line L`, else the line of the key the reason names first
    (`problem.epsilon`, `consumer.prior[0]`: its table or key, by toml_lines); None when
    neither is found (a pointer for a person, as every line of these reports)."""
    reason = _reason(item)
    syntax = _SYNTAX_LINE.search(reason)
    if syntax:
        return int(syntax.group(1))
    key = _KEY.search(reason.removeprefix(f"{item.source}: "))
    if key is None:
        return None
    try:
        lines = key_lines(Path(item.source).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError):
        return None
    path = tuple(re.sub(r"\[\d+\]$", "", part) for part in key.group(1).split("."))
    for end in range(len(path), 0, -1):  # the key, else the nearest table above it
        if path[:end] in lines:
            return lines[path[:end]]
    return None


def github_annotations(report: CheckReport) -> list[str]:
    """One annotation per mismatch (at the line of its expectation), per invalid file,
    per refusal and per problem without `[expect]`; an update that failed too."""
    lines = []
    for item in _unique(report.invalid):
        reason = _reason(item).removeprefix(f"{item.source}: ")
        lines.append(annotation("error", reason, file=item.source, line=invalid_line(item),
                                title="dpverify check: invalid problem file"))
    for case in report.mismatches:
        title = ("dpverify check: undecided" if case.kind is CaseKind.UNDECIDED
                 else f"dpverify check: {case.kind.value} mismatch")
        lines.append(annotation("error", case.message(), file=case.source, line=case.line,
                                title=title))
    for item in report.unchecked:
        lines.append(annotation("error" if report.strict else "warning",
                                f"{item.problem}: {UNCHECKED}", file=item.source,
                                title="dpverify check: unchecked"))
    for message in report.update_errors:
        source = message.partition(": ")[0]
        lines.append(annotation("error", message, file=source,
                                title="dpverify check: cannot update"))
    if report.batch.interrupted:
        lines.append(annotation("error", interrupted_message(report),
                                title="dpverify check: interrupted"))
    return lines
