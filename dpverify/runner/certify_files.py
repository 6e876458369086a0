"""Certificates for the problem files under some paths: the library behind `dpverify
certify` (write them) and `dpverify check-cert` (check them).

The certificates themselves come from `dpverify.verifiers.multiparty.certify` (`certify_agent`,
exact,
checked before it returns) and are checked by the independent `dpverify.checker`. This
module loops over files, agents and accuracies, writes the files, and returns typed
records; it prints nothing (a caller that streams output passes callbacks).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpverify.errors import DpverifyError, SpecError
from dpverify.filenames import make_directory, output_path, write_output
from dpverify.notebook import Notebook
from dpverify.records import record
from dpverify.runner.deadline import TimedOut, deadline
from dpverify.runner.files import (
    SkippedFile,
    find_problem_files,
    no_problem_files,
    timeout_reason,
)
from dpverify.runner.notes import Note, certify_notes
from dpverify.spec import load
from dpverify.spec.model import MultipartySpec
from dpverify.spec.numbers import rational_text
from dpverify.spec.setting import Setting
from dpverify.status import ExitStatus, exit_status
from dpverify.theory.certificates.format import UNPROVED
from dpverify.verifiers.certifiers import (
    certifiable,
    certificate,
    certificate_filename,
    dump_certificate,
)
from dpverify.verifiers.options import VerifyOptions

__all__ = ["CertificateCheck", "CertificateChecks", "CertificateRecord", "Certification",
           "CertifyReport",
           "certify_paths", "certify_spec", "check_certificates"]


@record(repr=False)
class CertificateRecord(Notebook):
    """One certificate written: where, for what, and what it proves. `value` is the exact
    accuracy of randomized response with the certificate's decision rule (a lower bound),
    `bound` the exact upper bound over every protocol."""

    path: Path | None  # None when it was not written (the Python API without out_dir)
    problem: str
    agent: str
    accuracy: str
    status: str  # proved-optimal | bracket | unproved
    value: Fraction
    bound: Fraction
    notes: tuple[str, ...] = ()
    certificate: dict = field(default_factory=dict, repr=False)  # the certificate itself

    notebook_columns = ("agent", "accuracy", "status", "value", "bound", "width", "path")

    @property
    def width(self) -> Fraction:
        return self.bound - self.value

    @property
    def approximate(self) -> bool:
        """Whether it is a certificate of approximate privacy (delta > 0): the envelope
        bound's, or the four-ray bound's of earlier versions."""
        from dpverify.checker import DELTA_FORMAT, ENVELOPE_FORMAT

        return self.certificate.get("format") in (DELTA_FORMAT, ENVELOPE_FORMAT)

    def to_dict(self) -> dict:
        """`certify --json`'s object: exact `value` and `bound` as "p/q" strings."""
        return {"path": None if self.path is None else str(self.path),
                "problem": self.problem, "agent": self.agent, "accuracy": self.accuracy,
                "status": self.status, "value": rational_text(self.value),
                "bound": rational_text(self.bound), "width": float(self.width)}


@dataclass(repr=False)
class CertifyReport(Notebook):
    """Everything `certify_paths` did. `messages` are the one-line reasons for files that
    were invalid, skipped, or could not be certified, in order; `skipped` the files found
    that are not multi-party problems (count problems, protocol files, other TOML files)."""

    certificates: list[CertificateRecord] = field(default_factory=list)
    invalid: int = 0  # problem files that did not load
    errors: int = 0  # certificates that could not be built (a size limit, a solver failure)
    problems: int = 0  # multi-party problems certified
    messages: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    keys: list[tuple[str, tuple[str, Setting]]] = field(default_factory=list)  # certified
    notes: tuple[Note, ...] = ()  # options that chose nothing for some problems (notes.py)

    def with_notes(self, given: Mapping[str, object]) -> CertifyReport:
        """The report with the notes of the options `given` (API names)."""
        self.notes = tuple(certify_notes(self.keys, given))
        return self

    notebook_columns = ("problem", *CertificateRecord.notebook_columns)

    def to_dict(self) -> dict:
        """Every certificate (`certify --json`'s objects), the counts and the messages."""
        return {"problems": self.problems, "invalid": self.invalid, "errors": self.errors,
                "unproved": self.unproved,
                "certificates": [c.to_dict() for c in self.certificates],
                "messages": list(self.messages)}

    @property
    def unproved(self) -> int:
        return sum(c.status == UNPROVED for c in self.certificates)

    def exit_status(self) -> ExitStatus:
        """0 all proved or bracketed; 1 one unproved; 2 bad input; 3 could not decide."""
        return exit_status(invalid=self.invalid, undecided=self.errors, failed=self.unproved)


@record(eq=False, repr=False)
class Certification(Notebook):
    """The certificates of one problem (what `dpverify.certify` returns), and the messages
    of those that could not be built (`errors` of them)."""

    problem: str
    source: str
    certificates: tuple[CertificateRecord, ...]
    messages: tuple[str, ...] = ()
    errors: int = 0

    notebook_columns = CertificateRecord.notebook_columns

    @property
    def verdict(self) -> str:
        """`error` when a certificate could not be built, else the worst status:
        `unproved`, `bracket` or `proved-optimal`."""
        if self.errors:
            return "error"
        statuses = {c.status for c in self.certificates}
        for status in (UNPROVED, "bracket"):
            if status in statuses:
                return status
        return "proved-optimal"

    def to_dict(self) -> dict:
        """`certify --json`'s objects, under the problem and the verdict."""
        return {"problem": self.problem, "source": self.source, "verdict": self.verdict,
                "certificates": [c.to_dict() for c in self.certificates],
                "messages": list(self.messages)}


def _output_folder(out_dir: str | Path) -> Path:
    return make_directory(out_dir)


def _record(spec: MultipartySpec, cert: Any, target: Path | None) -> CertificateRecord:
    """The record of a typed certificate (its numbers as built, never read back from its
    JSON), with its JSON object."""
    return CertificateRecord(
        path=target, problem=spec.name, agent=cert.agent, accuracy=str(cert.accuracy),
        status=str(cert.status), value=cert.value, bound=cert.bound,
        notes=tuple(cert.notes), certificate=cert.to_json(spec.name))


def _certify_spec(spec: MultipartySpec, folder: Path | None, options: VerifyOptions,
                  report: CertifyReport, on_certificate: Callable[[CertificateRecord], None],
                  on_message: Callable[[str], None], timeout: float | None = None) -> None:
    """Every certificate of `spec` within `timeout` seconds (None: no limit): what is built
    before the limit is kept; the run past it is one error (exit 3)."""
    try:
        with deadline(timeout):
            _certify_agents(spec, folder, options, report, on_certificate, on_message)
    except TimedOut:
        message = f"{spec.source}: {timeout_reason(timeout)}"
        report.errors += 1
        report.messages.append(message)
        on_message(message)


def _certify_agents(spec: MultipartySpec, folder: Path | None, options: VerifyOptions,
                    report: CertifyReport,
                    on_certificate: Callable[[CertificateRecord], None],
                    on_message: Callable[[str], None]) -> None:
    for agent in spec.agents:
        for accuracy in spec.accuracies:
            try:
                cert = certificate(spec, agent, accuracy, options)
            except DpverifyError as exc:
                report.errors += 1
                report.messages.append(str(exc))
                on_message(str(exc))
                continue
            target = None
            if folder is not None:
                target = output_path(folder, certificate_filename(spec.name, agent.name,
                                                                  accuracy.value))
            record = _record(spec, cert, target)
            if target is not None:
                write_output(target, dump_certificate(record.certificate))
            report.certificates.append(record)
            on_certificate(record)


def certify_spec(spec: MultipartySpec, out_dir: str | Path | None = None,
                 options: VerifyOptions | None = None, *,
                 on_certificate: Callable[[CertificateRecord], None] | None = None,
                 on_message: Callable[[str], None] | None = None,
                 timeout: float | None = None) -> CertifyReport:
    """Certificates for every agent and accuracy of one multi-party problem, written into
    `out_dir` when it is given (as `certify_paths` writes them), within `timeout`
    seconds."""
    report = CertifyReport(problems=1)
    folder = _output_folder(out_dir) if out_dir is not None else None
    _certify_spec(spec, folder, options or VerifyOptions(), report,
                  on_certificate or (lambda record: None),
                  on_message or (lambda message: None), timeout)
    return report


def certify_paths(paths: Sequence[str | Path], out_dir: str | Path,
                  options: VerifyOptions | None = None, *,
                  on_certificate: Callable[[CertificateRecord], None] | None = None,
                  on_message: Callable[[str], None] | None = None,
                  timeout: float | None = None) -> CertifyReport:
    """Write `<problem>.<agent>.<accuracy>.cert.json` into `out_dir` (created if missing)
    for every agent and accuracy of every multi-party problem under `paths`, each problem
    within `timeout` seconds (None: no limit; past it, one error, exit 3).

    Invalid files are reported through `on_message` (and counted), files that are not
    multi-party problems collected in `skipped` (a caller sums them up);
    `on_certificate` hears of each certificate as it is written. Raises InputError when
    `paths` hold no multi-party problem, or a file cannot be written.
    """
    options = options or VerifyOptions()
    on_certificate = on_certificate or (lambda record: None)
    on_message = on_message or (lambda message: None)
    found = find_problem_files(paths)
    if not found.files:
        raise no_problem_files(paths, found.skipped)
    folder = _output_folder(out_dir)
    report = CertifyReport(skipped=list(found.skipped))
    for path in found.files:
        try:
            spec = load(path)
        except SpecError as exc:
            report.invalid += 1
            report.messages.append(str(exc))
            on_message(str(exc))
            continue
        if certifiable(spec):
            assert isinstance(spec, MultipartySpec)
            report.problems += 1
            report.keys.append((spec.name, (spec.kind.value, spec.setting)))
            _certify_spec(spec, folder, options, report, on_certificate, on_message, timeout)
            continue
        kind = str(spec.kind)  # a StrEnum: its value, "count" or "protocol"
        reason = f"a {kind} problem: certificates cover multi-party problems only"
        report.skipped.append(SkippedFile(str(path), reason, kind))
        report.messages.append(f"{path}: skipped: {reason}")
    if not report.problems and not report.invalid:
        raise SpecError(", ".join(map(str, paths)), "", None,
                        "no multi-party problem files found")
    return report


# -- checking -----------------------------------------------------------------------------------
@record(repr=False)
class CertificateCheck(Notebook):
    """The independent checker's verdict on one certificate file. `malformed` when the
    file is not a certificate at all (bad input); `value` and `bound` are the proved
    bracket (equal when proved optimal), None when the check failed."""

    path: str
    ok: bool
    message: str
    value: Fraction | None = None
    bound: Fraction | None = None
    malformed: bool = False
    timed_out: bool = False  # not checked within --timeout (undecided, exit 3)

    notebook_columns = ("path", "ok", "value", "bound", "message")

    def to_dict(self) -> dict:
        """The check as JSON: exact `value` and `bound` as "p/q" strings (None when the
        check failed)."""
        return {"path": self.path, "ok": self.ok, "message": self.message,
                "value": None if self.value is None else rational_text(self.value),
                "bound": None if self.bound is None else rational_text(self.bound),
                "malformed": self.malformed}


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def check_certificate_file(spec: MultipartySpec, path: str | Path,
                           timeout: float | None = None) -> CertificateCheck:
    """Check one certificate file of `spec` with dpverify.checker (exact arithmetic), within
    `timeout` seconds (None: no limit)."""
    from dpverify.checker import CertificateFormatError, check_certificate, read_certificate

    try:
        with open(path, encoding="utf-8") as handle:
            cert = read_certificate(handle.read())
        with deadline(timeout):
            result = check_certificate(spec, cert)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, CertificateFormatError) as exc:
        return CertificateCheck(str(path), False, f"not a certificate: {_one_line(exc)}",
                                malformed=True)
    except TimedOut:
        return CertificateCheck(str(path), False, f"not checked: {timeout_reason(timeout)}",
                                timed_out=True)
    if not result.ok:
        return CertificateCheck(str(path), False, result.message)
    value, bound = result.bracket if result.bracket is not None else (result.value,
                                                                      result.value)
    return CertificateCheck(str(path), True, result.message, value, bound)


@record(repr=False)
class CertificateChecks(Sequence[CertificateCheck], Notebook):
    """The checks of `check-cert`, one per certificate file, in order."""

    checks: tuple[CertificateCheck, ...]

    notebook_columns = CertificateCheck.notebook_columns

    def to_dict(self) -> dict:
        return {"ok": all(c.ok for c in self.checks),
                "checks": [c.to_dict() for c in self.checks]}

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        return self.checks[index]

    def __len__(self) -> int:
        return len(self.checks)

    def exit_status(self) -> ExitStatus:
        """0 all OK; 1 one failed; 2 one is not a certificate; 3 one not checked in time."""
        return checks_status(self.checks)


def check_certificates(spec_path: str | Path, paths: Sequence[str | Path], *,
                       timeout: float | None = None) -> CertificateChecks:
    """Check certificate files against the problem at `spec_path` (SpecError when it is
    invalid or not a multi-party problem), each within `timeout` seconds."""
    spec = load(spec_path)
    if not isinstance(spec, MultipartySpec):
        raise SpecError(str(spec_path), "problem.kind", spec.kind,
                        "certificates cover multi-party problems only")
    return CertificateChecks(tuple(check_certificate_file(spec, path, timeout)
                                   for path in paths))


def checks_status(checks: Sequence[CertificateCheck]) -> ExitStatus:
    """0 all OK; 1 one failed; 2 one is not a certificate; 3 one not checked in time."""
    return exit_status(invalid=sum(c.malformed for c in checks),
                       undecided=sum(c.timed_out for c in checks),
                       failed=sum(not c.ok and not c.malformed and not c.timed_out
                                  for c in checks))
