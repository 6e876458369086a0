"""`dpverify check`: compare batch results with the problems' `[expect]` tables, for CI.

An expectation `(agent, accuracy, value)` holds when the problem has a result for that
agent and accuracy whose `optimum` (the value `[expect]` entries are compared with: the
relaxed optimum of a multi-party result, the mechanism optimum of a count result) is
within the tolerance of `value`. The tolerance is the larger of `--tol` and half a unit in
the last digit written in the file: `average = 0.5493` asks for four decimals, so any
value that rounds to 0.5493 holds; `average = 0.549343083284` asks for twelve. Integers
are compared with `--tol` alone.

`update` writes the current values into the `[expect]` tables with tomlkit, keeping the
file's comments and order: `[expect.observer]` / `[expect.party.N]` (keys `average`,
`worst`) for multi-party problems, `[expect.consumer]` (key `minimax` or `bayes`) for count
problems. In general an agent name `a:b` is the table `[expect.a.b]`.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.items
from tomlkit.exceptions import TOMLKitError

from dpverify import __version__
from dpverify.errors import DpverifyError

from .runner import INTERRUPTED_EXIT, BatchItem, BatchReport
from .store import DONE, Store, StoredResult, options_key

DEFAULT_CHECK_TOL = 1e-6
UPDATE_DIGITS = 12  # significant digits written by --update


@dataclass(frozen=True)
class Mismatch:
    """A row of check's table: an expectation that does not hold, or a result that is not
    `optimal` (then `note` says why)."""

    problem: str
    source: str
    agent: str
    accuracy: str
    expected: float | None
    got: float | None
    note: str = ""

    @property
    def difference(self) -> float | None:
        if self.expected is None or self.got is None:
            return None
        return self.got - self.expected

    def to_json(self) -> dict[str, Any]:
        return {"problem": self.problem, "source": self.source, "agent": self.agent,
                "accuracy": self.accuracy, "expected": self.expected, "got": self.got,
                "difference": self.difference, "note": self.note}


@dataclass
class CheckReport:
    batch: BatchReport
    mismatches: list[Mismatch] = field(default_factory=list)
    unchecked: list[BatchItem] = field(default_factory=list)  # optimal, but no [expect]
    checked: int = 0  # expectations that held
    updated: list[str] = field(default_factory=list)  # files --update rewrote
    update_errors: list[str] = field(default_factory=list)
    tol: float = DEFAULT_CHECK_TOL
    strict: bool = False

    def exit_code(self) -> int:
        """spec.md: 2 bad input; 3 could not decide; 1 a gap or a mismatch (or, with
        --strict, a problem without expectations); else 0."""
        if self.batch.interrupted:
            return INTERRUPTED_EXIT
        categories = {item.category for item in self.batch.items}
        if "invalid" in categories or self.update_errors:
            return 2
        if "error" in categories:
            return 3
        # every gap that is not expected by its [expect] table is a mismatch
        if self.mismatches or (self.strict and self.unchecked):
            return 1
        return 0


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
def compare(item: BatchItem, tol: float, literals: dict[tuple[str, str], str] | None = None
            ) -> tuple[list[Mismatch], int]:
    """The mismatches of one problem, and how many expectations held."""
    literals = literals or {}
    mismatches: list[Mismatch] = []
    results = list(item.result.get("results", ()))
    verdicts = {(r.get("agent"), r.get("accuracy")): r for r in results}
    values = {(agent, accuracy): value for agent, accuracy, value in item.values}
    # (agent, accuracy) -> (expected value, expected verdict); older rows have no verdict
    expect = {(e[0], e[1]): (e[2], e[3] if len(e) > 3 else "optimal") for e in item.expect}

    def wanted(key) -> str:
        return expect.get(key, (None, "optimal"))[1]

    if item.invalid or not results:
        note = "invalid problem file" if item.invalid else item.verdict
        mismatches.append(Mismatch(item.problem, item.source, "-", "-", None, None,
                                   f"{note}: {item.reason}" if item.reason else note))
    for r in results:
        key = (r.get("agent"), r.get("accuracy"))
        if r.get("verdict") == wanted(key):
            continue
        reason = f": {str(r['reason']).splitlines()[0]}" if r.get("reason") else ""
        note = f"{r.get('verdict')}{reason}"
        if wanted(key) != "optimal":
            note = f"expected verdict {wanted(key)}, got {note}"
        mismatches.append(Mismatch(item.problem, item.source, str(key[0]), str(key[1]),
                                   expect.get(key, (None,))[0], values.get(key), note))

    held = 0
    for (agent, accuracy), (expected, verdict) in expect.items():
        key = (agent, accuracy)
        result = verdicts.get(key)
        if result is None:
            if results:  # else the problem is listed already
                mismatches.append(Mismatch(item.problem, item.source, agent, accuracy,
                                           expected, None,
                                           "no such result (is that accuracy computed?)"))
            continue
        if result.get("verdict") != verdict:
            continue  # listed above as a result without the expected verdict
        got = values.get(key)
        allowed = max(tol, written_tolerance(literals.get(key, "")))
        if got is None or not math.isfinite(got) or abs(got - expected) > allowed:
            mismatches.append(Mismatch(item.problem, item.source, agent, accuracy, expected, got,
                                       f"tolerance {allowed:.1g}"))
        else:
            held += 1
    return mismatches, held


def check_report(batch: BatchReport, *, tol: float = DEFAULT_CHECK_TOL,
                 strict: bool = False) -> CheckReport:
    report = CheckReport(batch=batch, tol=tol, strict=strict)
    for item in batch.items:
        literals = _literals(item) if item.expect else {}
        mismatches, held = compare(item, tol, literals)
        report.mismatches.extend(mismatches)
        report.checked += held
        if not item.expect and item.verdict == "optimal":
            report.unchecked.append(item)
    return report


def _literals(item: BatchItem) -> dict[tuple[str, str], str]:
    try:
        raw = Path(item.source).read_bytes()
    except OSError:
        return {}
    if hashlib.sha256(raw).hexdigest() != item.content_hash:
        return {}  # changed since the run: fall back to --tol alone
    return expectation_literals(raw.decode("utf-8", errors="replace"))


# -- updating ------------------------------------------------------------------------------
def _rounded(value: float) -> float:
    return float(f"{value:.{UPDATE_DIGITS}g}")


def updated_text(text: str, values: Iterable[tuple[str, str, float]]) -> str:
    """`text` with `[expect]` entries set to `values` ((agent, accuracy, value)), keeping
    comments, order and every other entry. Raises TOMLKitError on a TOML syntax error."""
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
        container[accuracy] = _rounded(value)
    return tomlkit.dumps(doc)


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


def update_expectations(report: CheckReport, *, store: Store | None, options: Any) -> None:
    """Write each problem's current `optimal` values into its `[expect]` tables, then
    compare again. Results that are not `optimal` are left as they are (and stay listed).
    The new text must load as a valid problem with exactly those expectations, or the
    file is left alone and the failure reported. The store learns the new file's hash,
    so the next check does not recompute it (the result does not depend on `[expect]`)."""
    from dpverify.spec import loads

    done_sources: set[str] = set()
    items: list[BatchItem] = []
    okey = options_key(options.key())
    for item in report.batch.items:
        verdicts = {(r.get("agent"), r.get("accuracy")): r.get("verdict")
                    for r in item.result.get("results", ())}
        new_values = [(a, c, v) for a, c, v in item.values
                      if v is not None and math.isfinite(v) and verdicts.get((a, c)) == "optimal"]
        if not new_values or item.source in done_sources:
            items.append(item)
            continue
        done_sources.add(item.source)
        path = Path(item.source)
        try:
            raw = path.read_bytes()
            if hashlib.sha256(raw).hexdigest() != item.content_hash:
                raise ValueError("the file changed during the check")
            text = raw.decode("utf-8")
            new_text = updated_text(text, new_values)
            spec = loads(new_text, source=item.source, default_name=path.stem)
            expect = tuple((e.agent, e.accuracy, float(e.value), e.verdict)
                           for e in spec.expect)
            wanted = {(a, c): _rounded(v) for a, c, v in new_values}
            got = {(e[0], e[1]): e[2] for e in expect}
            if any(got.get(key) != value for key, value in wanted.items()):
                raise ValueError("the rewritten [expect] table does not read back the same")
        except (OSError, ValueError, TOMLKitError, DpverifyError) as exc:
            report.update_errors.append(f"{item.source}: cannot update [expect]: {exc}")
            items.append(item)
            continue
        if new_text != text:
            _write_atomically(path, new_text)
            report.updated.append(item.source)
        new_hash = hashlib.sha256(new_text.encode("utf-8")).hexdigest()
        item = replace(item, content_hash=new_hash, expect=expect)
        if store is not None and item.status == DONE:
            store.put(StoredResult(
                content_hash=new_hash, options_key=okey, version=__version__,
                source=item.source, problem=item.problem,
                kind=str(item.result.get("kind", "unknown")), status=item.status,
                verdict=item.verdict, reason=item.reason, result=item.result,
                values=item.values, expect=expect, seconds=item.seconds, worker="check --update"))
        items.append(item)
    report.batch.items = items
    fresh = check_report(report.batch, tol=report.tol, strict=report.strict)
    report.mismatches, report.unchecked, report.checked = (fresh.mismatches, fresh.unchecked,
                                                           fresh.checked)


def run_check(paths, options, *, store: Store | None, tol: float = DEFAULT_CHECK_TOL,
              strict: bool = False, update: bool = False, **batch_kw: Any) -> CheckReport:
    """Run the problems like `batch` (through the store) and compare with `[expect]`."""
    from .runner import run_batch

    batch = run_batch(paths, options, store=store, **batch_kw)
    report = check_report(batch, tol=tol, strict=strict)
    if update and not batch.interrupted:
        update_expectations(report, store=store, options=options)
    return report
