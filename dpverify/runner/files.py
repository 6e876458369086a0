"""Verify the problem files under some paths: the library behind `dpverify verify`.

`verify_paths` finds the files (directories are searched recursively for `*.toml`, and
TOML files that are not problem files are skipped with a reason), loads and verifies each
one, and returns one typed `FileResult` per file: invalid files and refused problems
included, as result objects with verdict `error`, so that a caller only has to print.
The batch workers verify through `verify_source` too, so `verify` and `batch` report
every file the same way.

No printing and no click or rich here: a caller that shows progress passes `on_start`
and `on_result`.
"""

from __future__ import annotations

import enum
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpverify.errors import (
    DpverifyError,
    InputError,
    SizeLimitError,
    SolverError,
    SpecError,
    TimeLimitError,
)
from dpverify.notebook import Notebook
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.runner.deadline import TimedOut, deadline, timeout_reason
from dpverify.spec import Spec
from dpverify.spec.loader import file_kind, loads
from dpverify.spec.reader import parse_toml, read_data
from dpverify.spec.setting import Setting
from dpverify.status import ExitStatus, verdict_status
from dpverify.verdict import Category, category_of
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import ProblemResult, Verdict

if TYPE_CHECKING:
    from dpverify.runner.exclude import Exclusions
    from dpverify.runner.notes import Note

__all__ = ["FileResult", "FileStatus", "NoProblemFiles", "ProblemFiles", "SkippedFile", "Spec",
           "VerifyReport",
           "error_json", "find_files", "find_problem_files", "no_problem_files", "run_files",
           "timed_out", "toml_files", "verify_path", "verify_paths", "verify_source",
           "without_results"]


# -- finding the files ----------------------------------------------------------------------
@record
class SkippedFile:
    """A TOML file found in a directory that is not a problem file (or not one the command
    takes), and why. `kind` is what it is: `foreign` (no dpverify tables), `mechanism`, or
    a problem kind (`count`, `protocol`) that the command does not take."""

    source: str
    reason: str
    kind: str = "foreign"


@record
class ProblemFiles:
    """The problem files under some paths (each once, in order) and the files skipped."""

    files: tuple[Path, ...]
    skipped: tuple[SkippedFile, ...] = ()


_SKIP_REASONS = {
    "foreign": "not a problem file (no [problem] table)",
    "mechanism": "a mechanism file: check it with `dpverify derive`",
}


def read_document(path: Path) -> dict[str, Any] | None:
    """A TOML file's document, or None when it cannot be read or parsed (such a file is
    kept by the finders, so that the loader reports what is wrong with it)."""
    try:
        return parse_toml(read_data(path)[1], str(path))
    except SpecError:
        return None


def _not_a_problem(path: Path) -> SkippedFile | None:
    """Why a TOML file found in a directory is skipped when it is not a problem file
    (`foreign`, `mechanism`), or None when it may be one."""
    document = read_document(path)
    kind = file_kind(document) if document is not None else None
    if kind not in _SKIP_REASONS:
        return None
    return SkippedFile(str(path), _SKIP_REASONS[kind], kind)


def toml_files(root: Path, exclude: Exclusions | None = None) -> list[Path]:
    """The `*.toml` files below the directory `root`, sorted, except those in hidden
    directories (`.dpverify/` with the witness files dpverify writes, `.git/`, `.venv/`)
    and hidden files: those are never searched (name one explicitly to use it); and
    except what `exclude` leaves out (a folder it matches is not searched)."""
    found: list[Path] = []
    visited: set[Path] = set()
    top = root.resolve()
    for folder, dirs, names in os.walk(root, followlinks=True):
        real = Path(folder).resolve()
        if real in visited:  # a symbolic link back up the tree
            dirs.clear()
            continue
        visited.add(real)
        dirs[:] = [d for d in dirs if not d.startswith(".")
                   and not _link_within(Path(folder, d), top)
                   and not (exclude and exclude.matches(Path(folder, d)))]
        found += [Path(folder, n) for n in names
                  if n.endswith(".toml") and not n.startswith(".")
                  and Path(folder, n).is_file()
                  and not (exclude and exclude.matches(Path(folder, n)))]
    return sorted(found)


def _link_within(path: Path, top: Path) -> bool:
    """A symbolic link to a folder inside the tree being searched (the package's
    `dpverify/shipped/problems` in a checkout): searched by its own path, not twice, and
    files are named by their real place (`problems/...`)."""
    return path.is_symlink() and path.resolve().is_relative_to(top)


def find_files(paths: Iterable[str | Path],
               skip: Callable[[Path], SkippedFile | None], *,
               exclude: Exclusions | None = None, skip_named: bool = False) -> ProblemFiles:
    """The files named in `paths`, as given, and the `*.toml` files below each directory
    (`toml_files`: sorted, hidden directories and files left out), each file once. A file
    found in a directory is skipped when `skip(path)` says why; a file named explicitly
    is kept (its loader says what is wrong with it) unless `skip_named` (then it is
    skipped alike: `check` with the file names a pre-commit hook passes). What `exclude`
    leaves out is not searched, and a named file it matches is skipped with its reason."""
    files: list[Path] = []
    skipped: list[SkippedFile] = []
    seen: set[Path] = set()

    def add(path: Path) -> None:
        resolved = path.resolve()
        if resolved not in seen:
            seen.add(resolved)
            files.append(path)

    for root in map(Path, paths):
        if not root.is_dir():
            if exclude and exclude.matches(root):
                skipped.append(SkippedFile(str(root), exclude.reason(root), "excluded"))
                continue
            why = skip(root) if skip_named else None
            if why is None:
                add(root)
            elif root.resolve() not in seen:
                seen.add(root.resolve())
                skipped.append(why)
            continue
        for path in toml_files(root, exclude):
            if path.resolve() in seen:
                continue
            why = skip(path)
            if why is None:
                add(path)
            else:
                skipped.append(why)
    return ProblemFiles(tuple(files), tuple(skipped))


def find_problem_files(paths: Iterable[str | Path], *, exclude: Exclusions | None = None,
                       skip_named: bool = False) -> ProblemFiles:
    """The problem files under `paths` (`find_files`): a TOML file found in a directory
    that is not a problem file (a `pyproject.toml`, a mechanism file) is skipped, with
    the reason (a named one too with `skip_named`); what `exclude` matches is left out."""
    return find_files(paths, _not_a_problem, exclude=exclude, skip_named=skip_named)


class NoProblemFiles(InputError):
    """No problem file under the paths given (exit 2). `skipped` are the TOML files left
    out, and `only_named_files` says that every path was a file named explicitly (no
    folder): `check` then has nothing to check, which is no error."""

    def __init__(self, message: str, skipped: Sequence[SkippedFile],
                 only_named_files: bool) -> None:
        super().__init__(message)
        self.skipped = tuple(skipped)
        self.only_named_files = only_named_files


def no_problem_files(paths: Sequence[str | Path], skipped: Sequence[SkippedFile]
                     ) -> NoProblemFiles:
    """The error for paths that hold no problem file (exit 2)."""
    names = ", ".join(map(str, paths))
    extra = ""
    if skipped:
        extra = (f" ({len(skipped)} TOML file{'s' if len(skipped) != 1 else ''} skipped: "
                 + ("not problem files" if all(s.kind != "excluded" for s in skipped)
                    else "not problem files, or excluded") + ")")
    only_named = bool(paths) and not any(Path(p).is_dir() for p in paths)
    return NoProblemFiles(f"{names}: no *.toml problem files found{extra}", skipped,
                          only_named)


# -- one file ---------------------------------------------------------------------------------
class FileStatus(enum.StrEnum):
    DONE = "done"  # verified, whatever the verdict
    REFUSED = "refused"  # not decided before any result: a size limit, a solver failure
    INVALID = "invalid"  # not a valid problem file (bad input, exit 2)


def error_json(source: str, reason: str, *, problem: str | None = None, kind: str = "unknown",
               invalid: bool = False, code: ReasonCode | None = None) -> dict[str, Any]:
    """spec.md's result object for a file without results: verdict `error`, the `reason`
    and its `reason_code`, an empty `results`, and `"invalid": true` when the file is not
    a valid problem."""
    out: dict[str, Any] = {"problem": problem or Path(source).stem, "source": source,
                           "kind": kind, "verdict": Verdict.ERROR.value, "reason": reason,
                           "reason_code": (code or (ReasonCode.INVALID if invalid
                                                    else ReasonCode.INTERNAL)).value}
    if invalid:
        out["invalid"] = True
    out["results"] = []
    return out


@record(repr=False)
class FileResult(Notebook):
    """What became of one problem file: its result (with verdict `error` and a `reason`
    when it is invalid or was refused), and its spec when it loaded."""

    source: str
    status: FileStatus
    result: ProblemResult
    spec: Spec | None = None
    timed_out: bool = False  # refused because the run's time limit passed (--timeout)

    @property
    def invalid(self) -> bool:
        return self.status is FileStatus.INVALID

    @property
    def verdict(self) -> Verdict:
        return self.result.verdict

    @property
    def category(self) -> Category:
        """`invalid` for a file that is not a valid problem, else the verdict (the one
        category rule, dpverify/verdict.py)."""
        return category_of(self.verdict, invalid=self.invalid)

    @property
    def reason(self) -> str:
        return self.result.reason

    def notebook_table_columns(self) -> tuple[str, ...]:
        return self.result.notebook_table_columns()

    def to_dict(self) -> dict[str, Any]:
        return self.to_json()

    def to_json(self) -> dict[str, Any]:
        """spec.md's result object (the same for `verify --json` and `batch --json`)."""
        if self.status is FileStatus.DONE:
            return self.result.to_json()
        return error_json(self.source, self.reason, problem=self.result.problem,
                          kind=self.result.kind, invalid=self.invalid, code=self.result.code)


def without_results(source: str, status: FileStatus, exc: DpverifyError,
                    spec: Spec | None = None, *, timed_out: bool = False) -> FileResult:
    """The FileResult of a file that has no results: invalid (bad input) or refused."""
    problem = spec.name if spec is not None else Path(source).stem
    kind = spec.kind if spec is not None else "unknown"
    code = ReasonCode.TIMEOUT if timed_out else ERROR_CODES.get(type(exc), ReasonCode.REFUSED)
    result = ProblemResult(problem=problem, source=source, kind=kind, results=(),
                           reason=str(exc), setting=None if spec is None else spec.setting,
                           code=ReasonCode.INVALID if status is FileStatus.INVALID else code)
    return FileResult(source, status, result, spec, timed_out)


# The code of a refusal, by the exception that says it (errors.py).
ERROR_CODES: dict[type, ReasonCode] = {SizeLimitError: ReasonCode.SIZE_LIMIT,
                                       SolverError: ReasonCode.SOLVER_FAILED,
                                       TimeLimitError: ReasonCode.TIMEOUT,
                                       SpecError: ReasonCode.INVALID,
                                       InputError: ReasonCode.INVALID}


def verify_source(text: str, source: str, options: VerifyOptions, *,
                  default_name: str | None = None, timeout: float | None = None
                  ) -> FileResult:
    """Load the problem file `text` (read from `source`) and verify it within `timeout`
    seconds (None: no limit). Bad input gives an `invalid` FileResult, a refusal (size
    limit, solver failure, the time limit) a `refused` one: neither raises."""
    spec: Spec | None = None
    try:
        spec = loads(text, source=source, default_name=default_name or Path(source).stem)
        with deadline(timeout):
            result = verify_spec(spec, options)
        return FileResult(source, FileStatus.DONE, result, spec)
    except SpecError as exc:
        return without_results(source, FileStatus.INVALID, exc, None)
    except InputError as exc:  # other bad input (an output directory it cannot write)
        return without_results(source, FileStatus.INVALID, exc, spec)
    except DpverifyError as exc:  # a size limit or a solver failure: could not decide
        return without_results(source, FileStatus.REFUSED, exc, spec)
    except TimedOut:
        return timed_out(source, timeout, spec)


def timed_out(source: str, timeout: float | None, spec: Spec | None = None) -> FileResult:
    """The FileResult of a file whose run passed its time limit (refused, `timeout`)."""
    return without_results(source, FileStatus.REFUSED,
                           DpverifyError(f"{source}: {timeout_reason(timeout)}"), spec,
                           timed_out=True)


def verify_path(path: str | Path, options: VerifyOptions, *,
                timeout: float | None = None) -> FileResult:
    """Read and verify one problem file (see `verify_source`)."""
    try:
        _, text = read_data(path)
    except SpecError as exc:
        return without_results(str(path), FileStatus.INVALID, exc, None)
    return verify_source(text, str(path), options, timeout=timeout)


# -- many files -------------------------------------------------------------------------------
@dataclass(repr=False)
class VerifyReport(Notebook):
    """Every file's result, in the order the files were found, and the files skipped; in a
    notebook, one row per file, agent and accuracy."""

    notebook_columns = ("problem", "agent", "accuracy", "verdict", "method",
                        "reason")

    files: list[FileResult] = field(default_factory=list)
    skipped: tuple[SkippedFile, ...] = ()
    seconds: float = 0.0
    notes: tuple[Note, ...] = ()  # options that did not apply, files skipped (notes.py)

    def keys(self) -> list[tuple[str, tuple[str, Setting] | None]]:
        """Every file's source and (kind, setting) (None for a file that did not load)."""
        return [(f.source, None if f.result.setting is None
                 else (str(f.result.kind), f.result.setting)) for f in self.files]

    def with_notes(self, given: Mapping[str, object]) -> VerifyReport:
        """The report with the notes of the options `given` (API names) and of the files
        skipped (runner/notes.py; a note is about one of them: with none, no notes)."""
        if not given and not self.skipped:
            return self
        from dpverify.runner.notes import option_notes

        self.notes = tuple(option_notes(self.keys(), given,
                                        [(s.source, s.reason) for s in self.skipped]))
        return self

    def counts(self) -> Counter[str]:
        """How many files fall in each category: optimal, gap, error, invalid."""
        return Counter(f.category for f in self.files)

    def exit_status(self) -> ExitStatus:
        """spec.md: 2 an invalid file; else 3 could not decide; else 1 a gap; else 0."""
        return verdict_status(f.category for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        """The counts per category, the seconds, every file's result object (what
        `verify --json` prints, as `files`) and the files skipped."""
        return {"counts": dict(self.counts()), "seconds": round(self.seconds, 4),
                "files": [f.to_json() for f in self.files],
                "skipped": [{"source": s.source, "reason": s.reason, "kind": s.kind}
                            for s in self.skipped]}


def run_files(found: ProblemFiles, one: Callable[[Path], FileResult], *,
              on_start: Callable[[Path], None] | None = None,
              on_result: Callable[[FileResult], None] | None = None) -> VerifyReport:
    """`one(path)` for every file found, one after another, calling `on_start(path)`
    before and `on_result(file_result)` after each: the loop of `verify` and `audit`."""
    start = time.perf_counter()
    report = VerifyReport(skipped=found.skipped)
    for path in found.files:
        if on_start is not None:
            on_start(path)
        outcome = one(path)
        report.files.append(outcome)
        if on_result is not None:
            on_result(outcome)
    report.seconds = time.perf_counter() - start
    return report


def verify_paths(paths: Sequence[str | Path], options: VerifyOptions, *,
                 on_start: Callable[[Path], None] | None = None,
                 on_result: Callable[[FileResult], None] | None = None,
                 timeout: float | None = None,
                 exclude: Exclusions | None = None) -> VerifyReport:
    """Verify every problem file under `paths` (see `find_problem_files`; `exclude` leaves
    some out), one after another, each within `timeout` seconds (None: no limit), calling
    `on_start(path)` before and `on_result(file_result)` after each.

    Raises InputError (exit 2) when `paths` hold no problem file.
    """
    start = time.perf_counter()
    found = find_problem_files(paths, exclude=exclude)
    if not found.files:
        raise no_problem_files(paths, found.skipped)
    report = run_files(found, lambda path: verify_path(path, options, timeout=timeout),
                       on_start=on_start,
                       on_result=on_result)
    report.seconds = time.perf_counter() - start  # finding the files included
    return report
