"""`dpverify check`: compare batch results with the problems' `[expect]` tables, for CI.

An expectation `(agent, accuracy, value)` holds when the problem has a result for that
agent and accuracy whose `optimum` (the value `[expect]` entries are compared with: the
relaxed optimum of a multi-party result, the mechanism optimum of a count result) is
within the tolerance of `value`: `|got - value| <= T * max(1, |value|)` for the expectation
tolerance T (`--expect-tol`, default 1e-6), absolute near 0 and relative for large values.
Only with `digits` (`--digits`) may the digits written widen it, to half a unit in the
last digit: then `average = 0.5493` holds for any value that rounds to 0.5493. By default
`average = 0.5` does not accept 0.5018.

`update` writes into the `[expect]` tables, with tomlkit, keeping the file's comments and
order, only the values that do not hold (or are missing): the float's full `repr`, or the
exact rational "p/q" when a proof gives one. A file whose expectations all hold is left
byte for byte as it is. The tables are `[expect.observer]` / `[expect.party.N]` (keys
`average`, `worst`) for multi-party problems, `[expect.consumer]` (key `minimax` or
`bayes`) for count problems; in general an agent name `a:b` is the table `[expect.a.b]`.
`diff` (`--diff`) computes the same rewrite, checked the same way, and writes nothing.

The comparison gives one typed `Case` per expectation (and per result that is not as
claimed), with its `CaseKind`, the expected and got values and verdicts, and the line of
the expectation in the file (`toml_lines`): what the table, `--json`, the JUnit report
and the GitHub annotations (`runner/reports.py`) show. A file that is not a valid problem
is listed apart (`report.invalid`), not as a mismatch.
"""

from __future__ import annotations

import difflib
import enum
import hashlib
import math
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import tomlkit
import tomlkit.items
from tomlkit.exceptions import TOMLKitError

from dpverify.defaults import Method
from dpverify.errors import DpverifyError
from dpverify.notebook import Notebook
from dpverify.records import record
from dpverify.runner.batch import BatchItem, BatchReport
from dpverify.runner.fingerprint import build_id
from dpverify.runner.store import DONE, Store, StoredResult, options_key
from dpverify.runner.toml_lines import KeyPath, expectation_line, key_lines
from dpverify.status import ExitStatus, exit_status

DEFAULT_CHECK_TOL = 1e-6  # the expectation tolerance, absolute and relative


class CaseKind(enum.StrEnum):
    """What became of one expectation (or of a result that none covers): `held`, or why it
    is a mismatch."""

    HELD = "held"  # the expected verdict, and the value within the tolerance
    VALUE = "value"  # the expected verdict, but a value outside the tolerance
    VERDICT = "verdict"  # another verdict than expected (`optimal` unless [expect] says)
    MISSING = "missing"  # an expectation without a result (an accuracy not computed)
    UNDECIDED = "undecided"  # no verdict to compare: refused, a timeout, a crash, `error`


UNDECIDED_VERDICTS = ("error",)  # a result that decided nothing (exit 3 beside the mismatch)


@record(repr=False)
class Case(Notebook):
    """One row of `check`: an expectation `(agent, accuracy)` of a problem file, or a
    result that is not as claimed, with what was expected and what came (`expected`,
    `got`: the values; `expected_verdict`, `got_verdict`: the verdicts) and the `line` of
    the expectation in the file (its `verdict` key for a verdict mismatch; None when the
    file has no `[expect]` entry for it). `kind` says whether it held, and why not."""

    problem: str
    source: str
    agent: str
    accuracy: str
    expected: float | None
    got: float | None
    note: str = ""
    kind: CaseKind = CaseKind.VALUE
    expected_verdict: str | None = None
    got_verdict: str | None = None
    line: int | None = None
    allowed: float | None = None  # the tolerance the value was held to
    reason: str = ""  # the result's own one-line reason (a verdict's or a refusal's)

    notebook_columns: ClassVar[tuple[str, ...]] = (
        "problem", "agent", "accuracy", "kind", "expected", "got", "difference", "line", "note")

    @property
    def held(self) -> bool:
        return self.kind is CaseKind.HELD

    @property
    def difference(self) -> float | None:
        """got - expected, when both are values of the expected verdict (a verdict
        mismatch compares verdicts, not numbers)."""
        if self.kind not in (CaseKind.HELD, CaseKind.VALUE) or self.expected is None \
                or self.got is None:
            return None
        return self.got - self.expected

    @property
    def where(self) -> str:
        """`source:line`, or the source alone when the line is not known."""
        return self.source if self.line is None else f"{self.source}:{self.line}"

    def message(self) -> str:
        """One sentence for a CI annotation or a test report: what was expected and what
        came, in the words of the kind of mismatch."""
        what = f"{self.problem} {self.agent} {self.accuracy}" if self.agent != "-" \
            else self.problem
        if self.kind is CaseKind.VERDICT:  # a finding's reason says what was found
            found = self.reason and self.got_verdict != "optimal"
            return (f"{what}: verdict mismatch: expected {self.expected_verdict}, got "
                    f"{self.got_verdict}" + (f" ({self.reason})" if found else ""))
        if self.kind is CaseKind.VALUE:
            return (f"{what}: expected {_number(self.expected)}, got {_number(self.got)} "
                    f"(difference {self.difference:+.3g}, tolerance {self.allowed:.1g})"
                    if self.difference is not None and self.allowed is not None
                    else f"{what}: expected {_number(self.expected)}, got {_number(self.got)}")
        if self.kind is CaseKind.HELD:
            return f"{what}: {_number(self.got)} as expected"
        return f"{what}: {self.note}"

    def to_json(self) -> dict[str, Any]:
        return {"problem": self.problem, "source": self.source, "agent": self.agent,
                "accuracy": self.accuracy, "kind": self.kind.value, "line": self.line,
                "expected": self.expected, "got": self.got,
                "expected_verdict": self.expected_verdict, "got_verdict": self.got_verdict,
                "difference": self.difference, "note": self.note}


Mismatch = Case  # a case that does not hold (the rows of check's table of mismatches)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.12g}"


@dataclass(repr=False)
class CheckReport(Notebook):
    """What `check` found: the batch, the expectations that do not hold (`mismatches`) and
    those that held, invalid files, the results without expectations, what --update wrote
    or --diff would write; in a notebook, the mismatches."""

    notebook_columns: ClassVar[tuple[str, ...]] = Case.notebook_columns

    batch: BatchReport
    mismatches: list[Case] = field(default_factory=list)  # the cases that do not hold
    unchecked: list[BatchItem] = field(default_factory=list)  # optimal, but no [expect]
    checked: int = 0  # expectations that held (not counting those --update just wrote)
    written: int = 0  # expectation values --update wrote (new or replacing a mismatch)
    updated: list[str] = field(default_factory=list)  # files --update rewrote
    update_errors: list[str] = field(default_factory=list)
    tol: float = DEFAULT_CHECK_TOL
    strict: bool = False
    digits: bool = False
    held: list[Case] = field(default_factory=list)  # the expectations that held
    invalid: list[BatchItem] = field(default_factory=list)  # not valid problem files
    diffs: list[FileDiff] = field(default_factory=list)  # --diff: what --update would write

    @property
    def cases(self) -> list[Case]:
        """Every case, held or not, in the order of the problems, then of the lines of
        their expectations (those without a line last)."""
        order = {item.source: i for i, item in enumerate(self.batch.items)}
        return sorted([*self.held, *self.mismatches],
                      key=lambda c: (order.get(c.source, len(order)),
                                     c.line if c.line is not None else 1 << 62))

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `check --json` (docs/format.md): counts, the mismatches
        (`Case.to_json`), invalid files, problems without expectations, what --update
        wrote, --diff's diffs, whether the run was interrupted (its problems not all
        checked), and the exit status."""
        return {"problems": len(self.batch.items), "checked": self.checked,
                "written": self.written,
                "mismatches": [m.to_json() for m in self.mismatches],
                "invalid": [{"problem": i.problem, "source": i.source, "reason": i.reason}
                            for i in self.invalid],
                "unchecked": [i.source for i in self.unchecked],
                "updated": list(self.updated), "update_errors": list(self.update_errors),
                "diffs": [{"source": d.source, "values": d.values, "diff": d.unified()}
                          for d in self.diffs],
                "interrupted": self.batch.interrupted,
                "exit_status": int(self.exit_status())}

    def notebook_title(self) -> str:
        return (f"CheckReport: {self.checked} expectations held, {len(self.mismatches)} "
                f"mismatches, {len(self.invalid)} invalid")

    def exit_status(self) -> ExitStatus:
        """spec.md: 2 bad input; 3 could not decide; 1 a gap or a mismatch (or, with
        --strict, a problem without expectations); else 0. Every gap that its [expect]
        table does not expect is a mismatch."""
        counts = self.batch.counts()
        return exit_status(internal=counts["internal"],
                           invalid=counts["invalid"] + len(self.update_errors),
                           undecided=counts["error"],
                           failed=len(self.mismatches) + (len(self.unchecked) * self.strict),
                           interrupted=self.batch.interrupted)


# -- tolerance from the written digits -----------------------------------------------------
def written_tolerance(literal: str) -> float:
    """Half a unit in the last digit of a TOML float literal (0.0 for integers and for
    anything not a plain decimal: inf, nan, hexadecimal)."""
    text = literal.strip().replace("_", "").lower().lstrip("+-")
    if not text or text.startswith(("0x", "0o", "0b")) or text in ("inf", "nan"):
        return 0.0
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa and not exponent:
        return 0.0  # an integer: exact
    try:
        exp = int(exponent) if exponent else 0
    except ValueError:
        return 0.0
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (exp - decimals)


def expectation_literals(text: str) -> dict[tuple[str, str], str]:
    """The `[expect]` values of a problem file as written: {(agent, accuracy): literal}."""
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError:
        return {}
    expect = doc.get("expect")
    out: dict[tuple[str, str], str] = {}

    def walk(container: Any, path: list[str]) -> None:
        for key, value in container.items():
            if isinstance(value, dict):
                walk(value, [*path, str(key)])
            elif path and isinstance(value, tomlkit.items.Item):
                out[(":".join(path), str(key))] = value.as_string().strip()

    if isinstance(expect, dict):
        walk(expect, [])
    return out


# -- comparing -----------------------------------------------------------------------------
def allowed_difference(expected: float, tol: float, literal: str = "",
                       digits: bool = False) -> float:
    """How far a value may be from `expected`: `tol * max(1, |expected|)`, or with `digits`
    at least half a unit in the last digit of the `literal` written in the file."""
    allowed = tol * max(1.0, abs(expected))
    return max(allowed, written_tolerance(literal)) if digits else allowed


def holds(expected: float, got: float | None, allowed: float) -> bool:
    return got is not None and math.isfinite(got) and abs(got - expected) <= allowed


def compare(item: BatchItem, tol: float, literals: dict[tuple[str, str], str] | None = None,
            *, digits: bool = False, lines: dict[KeyPath, int] | None = None
            ) -> tuple[list[Case], list[Case]]:
    """(the mismatches, the expectations that held) of one problem that loaded (an invalid
    file has neither: `check_report` lists it as invalid). `lines` (`toml_lines.key_lines`
    of the file) gives each case the line of its expectation."""
    literals = literals or {}
    lines = lines or {}
    mismatches: list[Case] = []
    results = item.result.results
    verdicts = {(r.agent, r.accuracy): r for r in results}
    values = {(agent, accuracy): value for agent, accuracy, value in item.values}
    # (agent, accuracy) -> (expected value, expected verdict); older rows have no verdict
    expect = {(e[0], e[1]): (e[2], e[3] if len(e) > 3 else "optimal") for e in item.expect}

    def wanted(key) -> str:
        return expect.get(key, (None, "optimal"))[1]

    def line(key, verdict: bool = False) -> int | None:
        if key not in expect:
            return None
        return expectation_line(lines, str(key[0]), str(key[1]), verdict=verdict)

    if not results:  # refused before any result: a size limit, a timeout, a crash
        mismatches.append(Case(item.problem, item.source, "-", "-", None, None,
                               f"{item.verdict}: {item.reason}" if item.reason
                               else str(item.verdict), CaseKind.UNDECIDED,
                               got_verdict=str(item.verdict), reason=item.reason))
    for r in results:
        key = (r.agent, r.accuracy)
        got_verdict = str(r.verdict)
        if got_verdict == wanted(key):
            continue
        reason = r.reason.splitlines()[0] if r.reason else ""
        kind = CaseKind.UNDECIDED if got_verdict in UNDECIDED_VERDICTS else CaseKind.VERDICT
        note = f"expected verdict {wanted(key)}, got {got_verdict}" + \
            (f": {reason}" if reason else "")
        mismatches.append(Case(item.problem, item.source, str(key[0]), str(key[1]),
                               expect.get(key, (None,))[0], values.get(key), note, kind,
                               expected_verdict=wanted(key), got_verdict=got_verdict,
                               line=line(key, verdict=True),
                               reason=reason))

    held: list[Case] = []
    for key, (expected, verdict) in expect.items():
        agent, accuracy = key
        result = verdicts.get(key)
        if result is None:
            if results:  # else the problem is listed already
                mismatches.append(Case(item.problem, item.source, agent, accuracy,
                                       expected, None,
                                       "no such result (is that accuracy computed?)",
                                       CaseKind.MISSING, expected_verdict=verdict,
                                       line=line(key)))
            continue
        if result.verdict != verdict:
            continue  # listed above as a result without the expected verdict
        got = values.get(key)
        allowed = allowed_difference(expected, tol, literals.get(key, ""), digits)
        case = Case(item.problem, item.source, agent, accuracy, expected, got,
                    expected_verdict=verdict, got_verdict=verdict, line=line(key),
                    allowed=allowed)
        if holds(expected, got, allowed):
            held.append(replace(case, kind=CaseKind.HELD))
        else:
            mismatches.append(replace(case, note=f"tolerance {allowed:.1g}"))
    return mismatches, held


def check_report(batch: BatchReport, *, tol: float = DEFAULT_CHECK_TOL,
                 strict: bool = False, digits: bool = False) -> CheckReport:
    report = CheckReport(batch=batch, tol=tol, strict=strict, digits=digits)
    for item in batch.items:
        if item.invalid:
            report.invalid.append(item)
            continue
        text = _text(item) if item.expect else None
        literals = expectation_literals(text) if text is not None and digits else {}
        lines = key_lines(text) if text is not None else {}
        mismatches, held = compare(item, tol, literals, digits=digits, lines=lines)
        report.mismatches.extend(mismatches)
        report.held.extend(held)
        report.checked += len(held)
        if not item.expect and item.verdict == "optimal":
            report.unchecked.append(item)
    return report


def _text(item: BatchItem) -> str | None:
    """The file's text as it was checked (None when it changed since, or is gone)."""
    try:
        raw = Path(item.source).read_bytes()
    except OSError:
        return None
    if hashlib.sha256(raw).hexdigest() != item.content_hash:
        return None  # changed since the run: fall back to --tol alone, and no lines
    return raw.decode("utf-8", errors="replace")


def _literals(item: BatchItem) -> dict[tuple[str, str], str]:
    text = _text(item)
    return {} if text is None else expectation_literals(text)


# -- updating ------------------------------------------------------------------------------
Written = float | str  # a value --update writes: a float (its repr) or an exact "p/q"


def updated_text(text: str, values: Iterable[tuple[str, str, Written]]) -> str:
    """`text` with `[expect]` entries set to `values` ((agent, accuracy, value)), keeping
    comments, order and every other entry. A float is written in full (its `repr`), a
    string as an exact rational "p/q". Raises TOMLKitError on a TOML syntax error."""
    doc = tomlkit.parse(text)
    for agent, accuracy, value in values:
        path = ["expect", *agent.split(":")]
        container: Any = doc
        for depth, part in enumerate(path):
            if part not in container:
                leaf = depth == len(path) - 1
                if isinstance(container, tomlkit.items.InlineTable):
                    container[part] = tomlkit.inline_table()
                else:
                    container[part] = tomlkit.table(is_super_table=not leaf)
            container = container[part]
        container[accuracy] = value
    return _newlines_like(text, tomlkit.dumps(doc))


def _newlines_like(text: str, new_text: str) -> str:
    """`new_text` with the line endings of `text`: tomlkit writes the lines it adds with
    "\n", which in a file whose every line ends with "\r\n" would mix the two."""
    if "\r\n" not in text or text.count("\n") != text.count("\r\n"):
        return new_text
    return new_text.replace("\r\n", "\n").replace("\n", "\r\n")


def _write_atomically(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def exact_values(result: dict[str, Any]) -> dict[tuple[str, str], str]:
    """Exact optima a result carries: a proof with status `proved-optimal` and an exact
    `value` "p/q" (from `--certify`, when the verifier records it), an audited
    protocol's exact accuracy (`protocol_value_exact`), or with delta > 0 the exact
    bound (`relaxed_optimum_exact`, the value `[expect]` compares)."""
    out: dict[tuple[str, str], str] = {}
    for r in result.get("results", ()):
        if isinstance(r.get("protocol_value_exact"), str):
            out[(str(r.get("agent")), str(r.get("accuracy")))] = r["protocol_value_exact"]
        if r.get("method") in (Method.FOUR_RAY, Method.ENVELOPE) and \
                isinstance(r.get("relaxed_optimum_exact"), str):  # delta > 0: the bound
            out[(str(r.get("agent")), str(r.get("accuracy")))] = r["relaxed_optimum_exact"]
        proof = r.get("proof")
        if isinstance(proof, dict) and proof.get("status") == "proved-optimal" \
                and isinstance(proof.get("value"), str):
            out[(str(r.get("agent")), str(r.get("accuracy")))] = proof["value"]
    return out


def values_to_write(item: BatchItem, report: CheckReport) -> list[tuple[str, str, Written]]:
    """The current values of `item`'s results that have their expected verdict (`optimal`
    unless the table says otherwise, such as `suboptimal` for an audited protocol) and
    whose expectation is missing or does not hold; those that hold are not rewritten (not
    even to more digits)."""
    verdicts = {(r.agent, r.accuracy): str(r.verdict) for r in item.result.results}
    expected = {(e[0], e[1]): e[2] for e in item.expect}
    wanted = {(e[0], e[1]): (e[3] if len(e) > 3 else "optimal") for e in item.expect}
    literals = _literals(item) if report.digits else {}
    exact = exact_values(item.to_dict())
    out: list[tuple[str, str, Written]] = []
    for agent, accuracy, value in item.values:
        key = (agent, accuracy)
        if value is None or not math.isfinite(value) or \
                verdicts.get(key) != wanted.get(key, "optimal"):
            continue
        old = expected.get(key)
        if old is not None and holds(old, value, allowed_difference(
                old, report.tol, literals.get(key, ""), report.digits)):
            continue
        out.append((agent, accuracy, exact.get(key, value)))
    return out


def _rewrite(item: BatchItem, values: list[tuple[str, str, Written]]
             ) -> tuple[str, str, tuple[tuple[str, str, float, str], ...]]:
    """(old text, new text, the new text's expectations): the new text must load as a
    valid problem whose expectations read back exactly as written, else ValueError (or a
    DpverifyError, an OSError, a TOMLKitError)."""
    from dpverify.spec import loads

    path = Path(item.source)
    raw = path.read_bytes()
    if hashlib.sha256(raw).hexdigest() != item.content_hash:
        raise ValueError("the file changed during the check")
    text = raw.decode("utf-8")
    new_text = updated_text(text, values)
    spec = loads(new_text, source=item.source, default_name=path.stem)
    expect = tuple((e.agent, e.accuracy, float(e.value), e.verdict) for e in spec.expect)
    got = {(e[0], e[1]): e[2] for e in expect}
    for agent, accuracy, value in values:
        if got.get((agent, accuracy)) != float(Fraction(value)):
            raise ValueError("the rewritten [expect] table does not read back the same")
    return text, new_text, expect


def update_expectations(report: CheckReport, *, store: Store | None, options: Any) -> None:
    """Write into each problem's `[expect]` tables the current `optimal` values whose
    expectation is missing or does not hold, then compare again. Results that are not
    `optimal` are left as they are (and stay listed). The new text must load as a valid
    problem with exactly those expectations, or the file is left alone and the failure
    reported. The store learns the new file's hash, so the next check does not recompute
    it (the result does not depend on `[expect]`)."""
    done_sources: set[str] = set()
    items: list[BatchItem] = []
    okey = options_key(options.key())
    for item in report.batch.items:
        values = values_to_write(item, report)
        if not values or item.source in done_sources:
            items.append(item)
            continue
        done_sources.add(item.source)
        try:
            text, new_text, expect = _rewrite(item, values)
        except (OSError, ValueError, TOMLKitError, DpverifyError) as exc:
            report.update_errors.append(f"{item.source}: cannot update [expect]: {exc}")
            items.append(item)
            continue
        report.written += len(values)
        if new_text != text:
            _write_atomically(Path(item.source), new_text)
            report.updated.append(item.source)
        item = replace(item, content_hash=hashlib.sha256(new_text.encode()).hexdigest(),
                       expect=expect)
        if store is not None and item.status == DONE:
            store.put(_stored(item, okey))
        items.append(item)
    report.batch.items = items
    fresh = check_report(report.batch, tol=report.tol, strict=report.strict,
                         digits=report.digits)
    report.mismatches, report.unchecked = fresh.mismatches, fresh.unchecked
    report.held, report.invalid = fresh.held, fresh.invalid
    report.checked = fresh.checked - report.written  # what it wrote holds, but was not checked


@record
class FileDiff:
    """What `--update` would write into one file (`check --diff`): its text before and
    after, and how many expectation values change or are added."""

    source: str
    old: str
    new: str
    values: int

    def unified(self) -> str:
        """A unified diff (`--- a/FILE`, `+++ b/FILE`, as `git apply` and `patch -p1`
        read it): the lines keep their endings ("\r\n" too), and a last line without
        one is marked `\\ No newline at end of file`, as diff marks it."""
        lines = difflib.unified_diff(
            self.old.splitlines(keepends=True), self.new.splitlines(keepends=True),
            fromfile=f"a/{self.source}", tofile=f"b/{self.source}")
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end "
                       "of file\n" for line in lines)


def diff_expectations(report: CheckReport) -> None:
    """`check --diff`: what `update_expectations` would write, as one `FileDiff` per file
    that would change, checked as `--update` checks it (the new text must load with
    exactly those expectations, else the failure is reported); nothing is written and the
    comparison stands as it is."""
    done_sources: set[str] = set()
    for item in report.batch.items:
        values = values_to_write(item, report)
        if not values or item.source in done_sources:
            continue
        done_sources.add(item.source)
        try:
            text, new_text, _ = _rewrite(item, values)
        except (OSError, ValueError, TOMLKitError, DpverifyError) as exc:
            report.update_errors.append(f"{item.source}: cannot update [expect]: {exc}")
            continue
        if new_text != text:
            report.diffs.append(FileDiff(item.source, text, new_text, len(values)))


def _stored(item: BatchItem, okey: str) -> StoredResult:
    return StoredResult(
        content_hash=item.content_hash, options_key=okey, version=item.build or build_id(),
        source=item.source, problem=item.problem, kind=item.result.kind,
        status=item.status, verdict=str(item.verdict), reason=item.reason,
        result=item.to_dict(),
        values=item.values, expect=item.expect, seconds=item.seconds,
        worker="check --update")


def run_check(paths: Any, options: Any, *, store: Store | None,
              tol: float = DEFAULT_CHECK_TOL, digits: bool = False, strict: bool = False,
              update: bool = False, diff: bool = False, **batch_kw: Any) -> CheckReport:
    """Run the problems like `batch` (through the store) and compare with `[expect]`:
    `tol` is the expectation tolerance (absolute and relative), `digits` lets the digits
    written widen it; `update` rewrites the expectations that do not hold, `diff` only
    says how (`report.diffs`). A file named in `paths` that is not a problem file (a
    `pyproject.toml` handed over by a pre-commit hook) is skipped with a reason, as one
    found in a directory is; when every path is such a file there is nothing to check
    (an empty report, exit 0)."""
    from dpverify.runner.batch import run_batch
    from dpverify.runner.files import NoProblemFiles

    try:
        batch = run_batch(paths, options, store=store, skip_named=True, **batch_kw)
    except NoProblemFiles as exc:
        if not exc.only_named_files:
            raise
        return CheckReport(batch=BatchReport(not_problems=exc.skipped), tol=tol,
                           strict=strict, digits=digits)
    report = check_report(batch, tol=tol, strict=strict, digits=digits)
    if batch.interrupted:
        return report
    if diff:
        diff_expectations(report)
    elif update:
        update_expectations(report, store=store, options=options)
    return report
