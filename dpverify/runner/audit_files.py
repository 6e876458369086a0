"""Audit the protocol and mechanism files under some paths: the library behind
`dpverify audit`.

A path is a protocol file (`kind = "protocol"`), a mechanism file with a `[consumer]`
table, or a directory searched for both as `verify` searches for problem files
(`files.toml_files`: recursively, hidden directories such as `.dpverify/` left out);
other TOML files there are skipped with a reason. A file named explicitly that is neither
is invalid (exit 2) and says which command takes it. Every file gets a `FileResult`, as in
`verify_paths`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from dpverify.errors import DpverifyError, SpecError
from dpverify.runner.deadline import TimedOut, deadline
from dpverify.runner.files import (
    FileResult,
    FileStatus,
    ProblemFiles,
    SkippedFile,
    VerifyReport,
    find_files,
    no_problem_files,
    read_document,
    run_files,
    timed_out,
    without_results,
)
from dpverify.spec.loader import file_kind, loads
from dpverify.spec.model import Kind
from dpverify.spec.protocol_model import ProtocolSpec
from dpverify.spec.reader import parse_toml, read_data
from dpverify.verifiers.options import VerifyOptions

PROTOCOL = "protocol"
MECHANISM = "mechanism"


def _what(document: dict[str, Any] | None) -> str:
    """`protocol`, `mechanism` (with a consumer), or why a file is neither ("" if it cannot
    be told: it is kept, and the loader names the problem)."""
    if document is None:
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


def _not_audited(path: Path) -> SkippedFile | None:
    """Why a TOML file found in a directory is not audited, or None when it may be."""
    what = _what(read_document(path))
    return None if what in ("", PROTOCOL, MECHANISM) else SkippedFile(str(path), what)


def find_audit_files(paths: Iterable[str | Path]) -> ProblemFiles:
    """Files named as given; below directories, the protocol and mechanism files."""
    return find_files(paths, _not_audited)


def audit_source(text: str, source: str, options: VerifyOptions, *,
                 timeout: float | None = None) -> FileResult:
    """Load one protocol or mechanism file and audit it within `timeout` seconds (None: no
    limit); bad input gives an `invalid` FileResult, a refusal (a limit, the time limit) a
    `refused` one: neither raises."""
    from dpverify.spec.mechanism_audit import loads_mechanism_audit
    from dpverify.verifiers.audit.mechanism import audit_mechanism
    from dpverify.verifiers.audit.protocol import audit_protocol

    spec = None
    try:
        what = _what(parse_toml(text, source))
        if what == MECHANISM:
            audit = loads_mechanism_audit(text, source=source, default_name=Path(source).stem)
            with deadline(timeout):
                return FileResult(source, FileStatus.DONE, audit_mechanism(audit, options))
        if what not in ("", PROTOCOL):
            raise SpecError(source, "", None, what)
        spec = loads(text, source=source, default_name=Path(source).stem)
        if not isinstance(spec, ProtocolSpec):  # cannot happen after _what; kept for safety
            raise SpecError(source, "problem.kind", spec.kind.value,
                            'dpverify audit takes kind = "protocol" files')
        with deadline(timeout):
            return FileResult(source, FileStatus.DONE, audit_protocol(spec, options), spec)
    except SpecError as exc:
        return without_results(source, FileStatus.INVALID, exc)
    except DpverifyError as exc:
        return without_results(source, FileStatus.REFUSED, exc, spec)
    except TimedOut:
        return timed_out(source, timeout, spec)


def audit_path(path: str | Path, options: VerifyOptions, *,
               timeout: float | None = None) -> FileResult:
    """Read and audit one file (see `audit_source`)."""
    try:
        _, text = read_data(path)
    except SpecError as exc:
        return without_results(str(path), FileStatus.INVALID, exc)
    return audit_source(text, str(path), options, timeout=timeout)


def audit_paths(paths: Sequence[str | Path], options: VerifyOptions, *,
                on_start: Callable[[Path], None] | None = None,
                on_result: Callable[[FileResult], None] | None = None,
                timeout: float | None = None) -> VerifyReport:
    """Audit every protocol and mechanism file under `paths`, one after another, each
    within `timeout` seconds (None: no limit), calling `on_start(path)` before and
    `on_result(file_result)` after each. Raises InputError (exit 2) when `paths` hold
    none."""
    start = time.perf_counter()
    found = find_audit_files(paths)
    if not found.files:
        raise no_problem_files(paths, found.skipped)
    report = run_files(found, lambda path: audit_path(path, options, timeout=timeout),
                       on_start=on_start, on_result=on_result)
    report.seconds = time.perf_counter() - start
    return report
