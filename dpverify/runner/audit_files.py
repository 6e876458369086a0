"""Audit the protocol and mechanism files under some paths: the library behind
`dpverify audit`.

A path is a protocol file (`kind = "protocol"`), a mechanism file with a `[consumer]`
table, or a directory searched recursively for both (other TOML files there are skipped
with a reason). A file named explicitly that is neither is invalid (exit 2) and says
which command takes it. Every file gets a `FileResult`, as in `verify_paths`.
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from dpverify.errors import DpverifyError, SpecError
from dpverify.runner.files import (
    FileResult,
    FileStatus,
    SkippedFile,
    VerifyReport,
    _without_results,
    no_problem_files,
)
from dpverify.spec.loader import file_kind, loads
from dpverify.spec.model import Kind
from dpverify.spec.protocol_model import ProtocolSpec
from dpverify.spec.reader import read_data
from dpverify.verifiers.options import VerifyOptions

PROTOCOL = "protocol"
MECHANISM = "mechanism"


def _what(text: str) -> str:
    """`protocol`, `mechanism` (with a consumer), or why a file is neither ("" if it cannot
    be told: it is kept, and the loader names the problem)."""
    try:
        document = tomllib.loads(text.removeprefix("\ufeff"))
    except (tomllib.TOMLDecodeError, RecursionError):
        return ""
    kind = file_kind(document)
    if kind == "mechanism":
        return MECHANISM if "consumer" in document else \
            "a mechanism file without a [consumer] table: `dpverify derive` checks it"
    if kind == "problem":
        problem = document.get("problem")
        declared = problem.get("kind", "multiparty") if isinstance(problem, dict) else ""
        if declared == PROTOCOL:
            return PROTOCOL
        if declared in (k.value for k in Kind):
            return f"a {declared} problem, not a protocol: `dpverify verify` checks it"
        return ""
    if kind == "foreign":
        return "not a protocol or mechanism file"
    return ""


def find_audit_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[SkippedFile]]:
    """Files named as given; below directories, the protocol and mechanism files."""
    files: list[Path] = []
    skipped: list[SkippedFile] = []
    seen: set[Path] = set()
    for root in map(Path, paths):
        candidates = [root] if not root.is_dir() else \
            sorted(q for q in root.rglob("*.toml") if q.is_file())
        for path in candidates:
            if path.resolve() in seen:
                continue
            if root.is_dir():
                try:
                    what = _what(read_data(path)[1])
                except SpecError:
                    what = ""
                if what not in ("", PROTOCOL, MECHANISM):
                    skipped.append(SkippedFile(str(path), what))
                    continue
            seen.add(path.resolve())
            files.append(path)
    return files, skipped


def audit_source(text: str, source: str, options: VerifyOptions) -> FileResult:
    """Load one protocol or mechanism file and audit it; bad input gives an `invalid`
    FileResult, a refusal a `refused` one: neither raises."""
    from dpverify.spec.mechanism_audit import loads_mechanism_audit
    from dpverify.verifiers.audit.mechanism import audit_mechanism
    from dpverify.verifiers.audit.protocol import audit_protocol

    what = _what(text)
    spec = None
    try:
        if what == MECHANISM:
            audit = loads_mechanism_audit(text, source=source, default_name=Path(source).stem)
            return FileResult(source, FileStatus.DONE, audit_mechanism(audit, options))
        if what not in ("", PROTOCOL):
            raise SpecError(source, "", None, what)
        spec = loads(text, source=source, default_name=Path(source).stem)
        if not isinstance(spec, ProtocolSpec):  # cannot happen after _what; kept for safety
            raise SpecError(source, "problem.kind", spec.kind.value,
                            'dpverify audit takes kind = "protocol" files')
        return FileResult(source, FileStatus.DONE, audit_protocol(spec, options), spec)
    except SpecError as exc:
        return _without_results(source, FileStatus.INVALID, exc, None)
    except DpverifyError as exc:
        return _without_results(source, FileStatus.REFUSED, exc, spec)


def audit_paths(paths: Sequence[str | Path], options: VerifyOptions, *,
                on_start: Callable[[Path], None] | None = None,
                on_result: Callable[[FileResult], None] | None = None) -> VerifyReport:
    """Audit every protocol and mechanism file under `paths`, one after another."""
    start = time.perf_counter()
    files, skipped = find_audit_files(paths)
    if not files:
        raise no_problem_files(paths, skipped)
    report = VerifyReport(skipped=tuple(skipped))
    for path in files:
        if on_start is not None:
            on_start(path)
        try:
            _, text = read_data(path)
            outcome = audit_source(text, str(path), options)
        except SpecError as exc:
            outcome = _without_results(str(path), FileStatus.INVALID, exc, None)
        report.files.append(outcome)
        if on_result is not None:
            on_result(outcome)
    report.seconds = time.perf_counter() - start
    return report
