"""The Python API: what the command line does, as functions with typed results.

    import dpverify
    problem = dpverify.load("problems/xor-4.toml")
    result = dpverify.verify(problem)             # a ProblemResult
    result.verdict, result.to_dict()              # "optimal", spec.md's result object
    sweep = dpverify.sweep(problem, epsilon="0.1:4:40", jobs=2)
    sweep.plot("xor-4.png")

The command line and this module are one front end: every command of `dpverify` calls the
function of its name here (`verify_paths`, `certify_paths`, `check_cert`, `audit_paths`,
`batch`, `results`, `check`, `sweep`, `derive`, `release`, `new`, `falsify`, `survey`), and
the command line only parses, prints and exits. A function for one problem (`verify`,
`certify`, `audit`) and one for what a command does with a list of files and directories
(`verify_paths`, ...) exist side by side.

Every function takes the command line's options by their names (`tol`, `backend`,
`max_nonzeros`, `lp_form`, `method`, `max_orbit_work`, `cross_check`, `grid`, `samples`,
`seed`, `certify`, `restarts`, `witness_dir`), takes callbacks (or a `listener`) where the
command line prints progress, and raises one family of exceptions,
`dpverify.DpverifyError`: a `SpecError` for a problem that is not valid (the one line the
command line prints after `dpverify: `), an `OptionError` for a bad option, a
`SizeLimitError` or `SolverError` when a problem cannot be decided. Each has `exit_code`,
the command line's exit status. Heavy modules (the solvers, matplotlib) are imported when
a function first needs them.

`batch`, `check` and `sweep` run worker processes that import dpverify only, never the
caller's script (dpverify/runner/executors/spawn.py), so a script may call them at its top
level, without an `if __name__ == "__main__":` guard, and so may `python - <<EOF`. The
exception is `scheduler="local"`: Dask starts those workers, and they run the script again,
so there the call belongs under the guard (without it, an InputError says so; a script read
from standard input is refused).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from dpverify.defaults import (
    DEFAULT_CHECK_TOL,
    DEFAULT_RESTARTS,
    DEFAULT_STORE,
    DEFAULT_TIMEOUT,
    DEFAULT_TOL,
)
from dpverify.errors import OptionError
from dpverify.notebook import Notebook
from dpverify.records import record
from dpverify.status import ExitStatus, exit_status
from dpverify.version import __version__

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from dpverify.configuration import Config
    from dpverify.problem import Problem
    from dpverify.research.falsify import Campaign
    from dpverify.research.survey import CaseResult, SurveyReport
    from dpverify.runner.batch import BatchResult, Listener
    from dpverify.runner.certify_files import (
        CertificateChecks,
        CertificateRecord,
        Certification,
        CertifyReport,
    )
    from dpverify.runner.check import CheckReport
    from dpverify.runner.examples import WrittenExamples
    from dpverify.runner.exclude import Exclusions
    from dpverify.runner.files import FileResult, VerifyReport
    from dpverify.runner.store import Store, StoredResult
    from dpverify.spec.count_model import MechanismSpec
    from dpverify.spec.setting import Setting
    from dpverify.sweeps.run import Sweep
    from dpverify.theory.count.geometric import Derivation
    from dpverify.verifiers.audit.profile import PrivacyProfile
    from dpverify.verifiers.count.approximate import DeltaDerivation
    from dpverify.verifiers.count.release import Release
    from dpverify.verifiers.options import Option, VerifyOptions
    from dpverify.verifiers.progress import Stage
    from dpverify.verifiers.result import ProblemResult

__all__ = ["MechanismDerivation", "VerifyKwargs", "__version__", "audit", "audit_paths",
           "batch", "build_id", "certify", "certify_paths", "check", "check_cert",
           "check_figsize", "check_plot", "check_scheduler", "configuration", "derive",
           "examples", "falsify", "family", "github_annotations", "install_hint", "junit_xml",
           "load", "make_options", "new", "open_store", "option_descriptions",
           "option_problem", "plot", "plot_profile",
           "privacy_profile", "release",
           "results", "survey", "survey_epsilons", "sweep", "verify", "verify_paths"]

Levels = str | Iterable[float | int | str]
PathLike = str | os.PathLike[str]
Paths = PathLike | Sequence[PathLike]


class VerifyKwargs(TypedDict, total=False):
    """The options of `verify` (and every command that verifies), named as on the
    command line."""

    tol: float  # verdict tolerance, relative to the range of the gains; default 1e-9
    backend: Literal["highs", "cvxpy"]
    max_nonzeros: int | None  # size guard: larger LPs are refused (SizeLimitError); unset
    # (None), each kind's own guard (policy.py, COUNT_MAX_BYTES)
    lp_form: Literal["auto", "chain", "dense"]  # defaults.LpForm: auto (dense for small
    # problems, else chain), chain, dense
    grid: int  # interior rank-one points on an m-point grid (0: off, else >= 2)
    samples: int  # random interior rank-one points
    seed: int
    certify: bool  # build and check exact certificates
    time_limit: float | None  # seconds per LP solve
    threads: int | None  # HiGHS threads
    method: Literal["auto", "lp", "orbit", "proof"]  # defaults.Method: how problems on bits
    # are verified
    cross_check: bool  # bits: verify by the exact proof and by the LP, compare the two
    max_orbit_work: int  # size guard of the orbit method
    restarts: int  # inputs with more than two symbols: random starts of the protocol search
    witness_dir: str  # where witness protocol files are written ("": the default)


# -- options ----------------------------------------------------------------------------------
def make_options(**options: Unpack[VerifyKwargs]) -> VerifyOptions:
    """VerifyOptions from the command line's option names (OptionError for a bad one)."""
    from dpverify.verifiers.options import make_options as build

    return build(**options)


def option_descriptions() -> dict[str, tuple[Option, Any]]:
    """Every option of `verify` by its name, with its description (flag, help, values,
    whether it enters the store's key) and its default: what the command line's shared
    options are made from (dpverify.verifiers.options, VerifyOptions' field metadata, and
    the run's time limit `timeout`, taken beside the options)."""
    from dpverify.verifiers.options import RUN_LIMITS, described_options

    return {**described_options(), **RUN_LIMITS}


def option_problem(name: str, value: object) -> str | None:
    """Why `value` is not valid for the option `name` (None when it is): the one check of
    an option's value, for the API and the command line's callbacks alike."""
    from dpverify.verifiers.options import option_problem as problem

    return problem(name, value)


# -- problems ---------------------------------------------------------------------------------
def load(path_or_text: PathLike, *, source: str | None = None) -> Problem:
    """Read and validate one problem file; a `str` holding a newline, or starting with
    `[`, is taken as the text of a problem file (named `source` in messages), anything
    else as a path. Raises SpecError with the command line's one-line message."""
    from dpverify.problem import Problem

    if isinstance(path_or_text, str) and _is_text(path_or_text):
        return Problem.loads(path_or_text, source=source or "<string>")
    return Problem.load(path_or_text)


def new(kind: str, name: str, folder: PathLike = ".") -> Path:
    """Write `folder/NAME.toml`, a commented `kind` problem file (`multiparty` or `count`)
    that verifies as it is, as `dpverify new` does; never over an existing file
    (InputError)."""
    from dpverify.spec.templates import write_template

    return write_template(kind, name, _paths(folder)[0])


def _is_text(text: str) -> bool:
    """Whether a `str` is the text of a file rather than a path: it holds a newline, or
    starts with `[` and names no file (a file named `[x].toml` is a path)."""
    return "\n" in text or (text.lstrip("\ufeff \t").startswith("[")
                             and not os.path.exists(text))


def _problem(problem: Any) -> Problem:
    from dpverify.problem import Problem

    if isinstance(problem, Problem):
        return problem
    if isinstance(problem, str | os.PathLike):
        return load(problem)
    raise OptionError(f"not a problem: {problem!r} (give a dpverify.Problem, a path or the "
                      "text of a problem file)")


# -- verify -----------------------------------------------------------------------------------
def verify(problem: Problem | PathLike, *, timeout: float | None = None,
           **options: Unpack[VerifyKwargs]) -> ProblemResult:
    """Verify one problem (a Problem, a path or the text of a problem file), as
    `dpverify verify` does: `result.verdict` is `optimal`, `gap` or `error`, and
    `result.to_dict()` is the object `dpverify verify --json` prints. With `timeout`
    (seconds, in the main thread), a problem still running then has verdict `error` and
    reason `timeout`.

    Raises SpecError (bad input), SizeLimitError (refused before any result; the command
    line shows it as a result with verdict `error` and this `reason`)."""
    from dpverify.runner.deadline import TimedOut, deadline
    from dpverify.runner.files import timeout_reason
    from dpverify.verifiers.dispatch import verify_spec
    from dpverify.verifiers.result import ProblemResult as Result

    chosen = make_options(**options)
    spec = _problem(problem).spec
    try:
        with deadline(timeout):
            return verify_spec(spec, chosen)
    except TimedOut:
        return Result(problem=spec.name, source=spec.source, kind=spec.kind.value,
                      results=(), reason=timeout_reason(timeout))


def verify_paths(paths: Paths, *, on_start: Callable[[Path], None] | None = None,
                 on_result: Callable[[FileResult], None] | None = None,
                 on_stage: Callable[[Stage], None] | None = None,
                 timeout: float | None = None, exclude: Sequence[str] = (),
                 **options: Unpack[VerifyKwargs]) -> VerifyReport:
    """What `dpverify verify PATHS` does: every problem file under `paths` (directories
    searched for *.toml, hidden ones left out) verified one after another, with
    `on_start(path)` before and `on_result(file_result)` after each, and `on_stage(stage)`
    as each agent, accuracy and method starts (dpverify.verifiers.progress.Stage). Invalid
    files and refused problems are results too (`report.files`); `report.exit_status()` is
    the command's; a problem still running after `timeout` seconds has verdict `error`,
    reason `timeout`. `exclude`: glob patterns of paths to leave out (`--exclude`).
    InputError when `paths` hold no problem file."""
    from dpverify.runner.files import verify_paths as run
    from dpverify.verifiers.progress import listening

    with listening(on_stage):
        report = run(_paths(paths), make_options(**options), on_start=on_start,
                     on_result=on_result, timeout=timeout, exclude=_exclusions(exclude))
    return report.with_notes(options)


# -- certificates -----------------------------------------------------------------------------
def certify(problem: Problem | PathLike, out_dir: PathLike | None = None, *,
            on_certificate: Callable[[CertificateRecord], None] | None = None,
            timeout: float | None = None,
            **options: Unpack[VerifyKwargs]) -> Certification:
    """Exact certificates for every agent and accuracy of a multi-party problem, as
    `dpverify certify` builds them (written into `out_dir` when it is given), with the
    options of `verify` (`method` chooses the all-input or the orbit certificate,
    `max_orbit_work` bounds the latter), within `timeout` seconds (None: no limit). Each
    certificate's `status` is `proved-optimal`, `bracket` or `unproved`; `.verdict` is the
    worst of them (`error` when one could not be built, or the time ran out)."""
    from dpverify.runner.certify_files import Certification, certify_spec
    from dpverify.spec.model import MultipartySpec
    from dpverify.verifiers.certifiers import certifiable

    loaded = _problem(problem)
    if not certifiable(loaded.spec):
        from dpverify.errors import SpecError

        raise SpecError(loaded.source, "problem.kind", loaded.kind,
                        "certificates cover multi-party problems only")
    assert isinstance(loaded.spec, MultipartySpec)  # the certifiable kind
    report = certify_spec(loaded.spec, None if out_dir is None else Path(out_dir),
                          make_options(**options), on_certificate=on_certificate,
                          timeout=timeout)
    return Certification(loaded.name, loaded.source, tuple(report.certificates),
                         tuple(report.messages), report.errors)


def certify_paths(paths: Paths, out_dir: PathLike = ".", *,
                  on_certificate: Callable[[CertificateRecord], None] | None = None,
                  on_message: Callable[[str], None] | None = None,
                  on_stage: Callable[[Stage], None] | None = None,
                  timeout: float | None = None,
                  **options: Unpack[VerifyKwargs]) -> CertifyReport:
    """What `dpverify certify PATHS` does: a certificate file per agent and accuracy of
    every multi-party problem under `paths`, written into `out_dir`, each problem within
    `timeout` seconds (None: no limit); `on_certificate` hears of each as it is written,
    `on_message` of each file or certificate that fails, `on_stage` of each certificate as
    it starts. `report.exit_status()` is the command's."""
    from dpverify.runner.certify_files import certify_paths as run
    from dpverify.verifiers.progress import listening

    with listening(on_stage):
        report = run(_paths(paths), _paths(out_dir)[0], make_options(**options),
                     on_certificate=on_certificate, on_message=on_message, timeout=timeout)
    return report.with_notes(options)


def check_cert(problem: PathLike, certificates: Paths, *,
               timeout: float | None = None) -> CertificateChecks:
    """What `dpverify check-cert PROBLEM CERT...` does: each certificate file checked
    against the problem by the independent exact checker (dpverify.checker), each within
    `timeout` seconds (None: no limit; past it a check with `timed_out` set). SpecError
    when the problem is invalid or not a multi-party problem; a file that is not a
    certificate is a check with `malformed` set. `.exit_status()` is the command's."""
    from dpverify.runner.certify_files import check_certificates

    return check_certificates(_paths(problem)[0], _paths(certificates), timeout=timeout)


# -- audit ------------------------------------------------------------------------------------
def audit(protocol: Problem | PathLike, *, timeout: float | None = None,
          **options: Unpack[VerifyKwargs]) -> ProblemResult:
    """Audit one explicit protocol (`kind = "protocol"`) or mechanism file with a
    `[consumer]` table, as `dpverify audit` does: the privacy levels it achieves, each
    agent's accuracy against the bound; `verdict` is `optimal`, `suboptimal`,
    `not-private`, `contradiction` or `error` (docs/format.md). Raises SpecError for a
    file that is neither, with the command line's message; past `timeout` seconds (None:
    no limit), TimeLimitError."""
    from dpverify.errors import DpverifyError, SpecError, TimeLimitError
    from dpverify.problem import Problem
    from dpverify.runner.audit_files import audit_source
    from dpverify.runner.files import FileStatus
    from dpverify.spec.reader import read_data

    chosen = make_options(**options)
    if isinstance(protocol, Problem):
        text, source = protocol.text, protocol.source
    elif isinstance(protocol, str) and _is_text(protocol):
        text, source = protocol, "<string>"
    else:
        text, source = read_data(protocol)[1], str(protocol)
    outcome = audit_source(text, source, chosen, timeout=timeout)
    if outcome.timed_out:
        raise TimeLimitError(outcome.reason)
    if outcome.status is FileStatus.INVALID:  # the loader's one line, raised as it was
        raise SpecError(source, "", None, outcome.reason.removeprefix(f"{source}: "))
    if outcome.status is FileStatus.REFUSED:
        raise DpverifyError(outcome.reason)
    return outcome.result


def audit_paths(paths: Paths, *, on_start: Callable[[Path], None] | None = None,
                on_result: Callable[[FileResult], None] | None = None,
                on_stage: Callable[[Stage], None] | None = None,
                timeout: float | None = None,
                **options: Unpack[VerifyKwargs]) -> VerifyReport:
    """What `dpverify audit PATHS` does: every protocol and mechanism file under `paths`
    (directories searched as `verify_paths` searches them), each within `timeout` seconds,
    with the callbacks of `verify_paths`; `report.exit_status()` is the command's."""
    from dpverify.runner.audit_files import audit_paths as run
    from dpverify.verifiers.progress import listening

    with listening(on_stage):
        report = run(_paths(paths), make_options(**options), on_start=on_start,
                     on_result=on_result, timeout=timeout)
    return report.with_notes(options)


def privacy_profile(protocol: Problem | PathLike, *, epsilons: Levels | None = None
                    ) -> PrivacyProfile:
    """The privacy profile delta_i(epsilon) of every party of a protocol file, as
    `dpverify audit --profile` prints it: the achieved delta at e^epsilon on a grid of
    `epsilons` (`"start:stop:count"`, `"a,b,c"` or a sequence; decimals are exact; default
    0 to twice the largest claimed epsilon, 21 points), each an exact bracket
    (docs/theory.md, "Approximate privacy"). `.to_json()`; `plot_profile` draws it."""
    from dpverify.errors import SpecError
    from dpverify.spec.protocol_model import ProtocolSpec
    from dpverify.sweeps.axes import Variable, parse_levels
    from dpverify.verifiers.audit.profile import protocol_profile

    loaded = _problem(protocol)
    if not isinstance(loaded.spec, ProtocolSpec):
        raise SpecError(loaded.source, "problem.kind", str(loaded.spec.kind),
                        'a privacy profile is of a protocol file (kind = "protocol")')
    grid = None
    if epsilons is not None:
        values = parse_levels(epsilons, Variable.EPSILON).values
        grid = [Fraction(repr(v)) if isinstance(v, float) else Fraction(str(v))
                for v in values]
        if any(not 0 <= e <= 700 for e in grid):
            raise OptionError(f"--epsilons {epsilons!r}: each epsilon must be in [0, 700]")
    return protocol_profile(loaded.spec, grid)


def plot_profile(profiles: Sequence[PrivacyProfile], path: PathLike | None = None, *,
                 title: str | None = None, style: Literal["screen", "paper"] = "screen",
                 figsize: tuple[float, float] | str | None = None) -> Figure:
    """Draw privacy profiles (one panel per protocol: delta_i(epsilon) per party, the claims
    marked) into `path` (.png, .svg or .pdf) when given. Needs `dpverify[plot]`."""
    from dpverify.plotting import plot_profiles

    return plot_profiles(profiles, path, title=title, style=style, figsize=figsize)


# -- many problems ----------------------------------------------------------------------------
def batch(paths: Paths, *, jobs: int | None = None, store: PathLike | Store | None = None,
          timeout: float | None = DEFAULT_TIMEOUT, force: bool = False,
          scheduler: str | None = None, listener: Listener | None = None,
          exclude: Sequence[str] = (), **options: Unpack[VerifyKwargs]) -> BatchResult:
    """Verify every problem file under `paths` in parallel worker processes, as
    `dpverify batch` does. With `store` (a path, such as ".dpverify/results.sqlite", or a
    Store), results are saved as they finish and problems stored there by this build of
    dpverify are skipped (unless `force`), and a problem another run on the same store is
    computing is waited for, not computed twice; without it nothing is written. `timeout`
    is per problem (None: no limit); `scheduler` runs on Dask ("local" or an address;
    from a script, under `if __name__ == "__main__":`). `listener` hears of each problem
    as it finishes (`started(total, skipped, workers)`, `finished(item)`). `store=
    ":memory:"` (defaults.MEMORY_STORE) runs on a store in memory (`--no-store`);
    `exclude`: glob patterns of paths to leave out (`--exclude`)."""
    from dpverify.runner.batch import run_batch

    chosen = make_options(**options)
    with _opened(store) as opened:
        report = run_batch(_paths(paths), chosen, store=opened, jobs=jobs, timeout=timeout,
                           force=force, scheduler=scheduler, listener=listener,
                           exclude=_exclusions(exclude))
    report.notes = report.option_notes(options)
    return report.freeze()


def check(paths: Paths, *, store: PathLike | Store | None = None,
          expect_tol: float = DEFAULT_CHECK_TOL, digits: bool = False, strict: bool = False,
          update: bool = False, diff: bool = False, jobs: int | None = None,
          timeout: float | None = DEFAULT_TIMEOUT, force: bool = False,
          scheduler: str | None = None, listener: Listener | None = None,
          exclude: Sequence[str] = (), **options: Unpack[VerifyKwargs]) -> CheckReport:
    """What `dpverify check PATHS` does: the problems run as in `batch`, then compared
    with their `[expect]` tables (`expect_tol`: |got - expected| <= T * max(1,
    |expected|); `digits`: the digits written may widen it; `strict`: a problem without
    `[expect]` is a failure); `update` writes the values that do not hold into the files,
    `diff` only says how (`report.diffs`, unified diffs; nothing is written). A named
    file that is not a problem file is skipped (`report.batch.not_problems`).
    `report.mismatches` (each with `expected`, `got`, the verdicts and the `line` of its
    expectation), `report.invalid`, `report.exit_status()`; `junit_xml(report)` and
    `github_annotations(report)` are its CI reports."""
    from dpverify.runner.check import run_check

    chosen = make_options(**options)
    with _opened(store) as opened:
        report = run_check(_paths(paths), chosen, store=opened, tol=expect_tol, digits=digits,
                           strict=strict, update=update, diff=diff, jobs=jobs, timeout=timeout,
                           force=force, scheduler=scheduler, listener=listener,
                           exclude=_exclusions(exclude))
    report.batch.notes = report.batch.option_notes(options)
    return report


def junit_xml(report: CheckReport) -> str:
    """A check's JUnit XML report, as `dpverify check --junit FILE` writes it: one test
    case per expectation, failures carrying expected and got (dpverify/runner/reports.py)."""
    from dpverify.runner.reports import junit_xml as xml

    return xml(report)


def github_annotations(report: CheckReport) -> list[str]:
    """A check's GitHub Actions annotations, as `dpverify check --format github` prints
    them: `::error file=F,line=L,title=T::message`, one per mismatch, at the line of its
    expectation."""
    from dpverify.runner.reports import github_annotations as annotations

    return annotations(report)


def configuration(start: PathLike = ".") -> Config:
    """The project's defaults for the command line: `[tool.dpverify]` in the nearest
    pyproject.toml, or a dpverify.toml, searched from `start` upward (to the top of the
    repository); `config.values` by option name. SpecError naming the file and the key for
    an unknown key or a bad value (dpverify/runner/config.py)."""
    from dpverify.configuration import Config, find_config

    found = find_config(start)  # light: `dpverify --help` reads nothing heavy without one
    if found is None:
        return Config()
    from dpverify.runner.config import load_config

    return load_config(path=found)


def results(store: PathLike = DEFAULT_STORE, *,
            verdict: Literal["optimal", "gap", "error"] | None = None
            ) -> list[StoredResult]:
    """What a results store holds (every build and option set), as `dpverify results`
    lists it; `row.result` is spec.md's result object, `row.version` the build of
    dpverify that computed it (`build_id()` is this one's)."""
    from dpverify.runner.store import Store

    with Store(Path(store), readonly=True) as opened:
        return opened.all(verdict=verdict)


def family(rows: Sequence[StoredResult], problem: str | None = None) -> Sweep:
    """The stored results of one problem family (`problem`: a name or a glob; None when
    `rows` hold one family) as a Sweep to plot, as `dpverify results --plot` draws it."""
    from dpverify.sweeps.family import sweep_from_store

    return sweep_from_store(rows, problem)


def build_id() -> str:
    """This build of dpverify as the results store names it (the version and a hash of
    the source)."""
    from dpverify.runner.fingerprint import build_id as build

    return build()


def open_store(path: PathLike = DEFAULT_STORE) -> Store:
    """The results store at `path`, opened for writing (a context manager; InputError for
    a locked, corrupt or unwritable store)."""
    from dpverify.runner.store import Store

    return Store(Path(path))


def check_scheduler(address: str) -> str:
    """`address` when it has the form of a Dask scheduler address (`local`,
    `tcp://HOST:PORT`, `HOST:PORT`), else InputError, before anything connects."""
    from dpverify.runner.executors.base import check_scheduler as checked

    return checked(address)


def sweep(problem: Problem | PathLike, *, epsilon: Levels | None = None,
          lambda_: Levels | None = None, alpha: Levels | None = None,
          delta: Levels | None = None,
          parties: str | int | Iterable[int] | None = None, jobs: int | None = None,
          store: PathLike | Store | None = None,
          timeout: float | None = DEFAULT_TIMEOUT, force: bool = False,
          scheduler: str | None = None, listener: Listener | None = None,
          **options: Unpack[VerifyKwargs]) -> Sweep:
    """Verify `problem` over a range of privacy levels (`epsilon`, `lambda_`, `alpha`, or
    a multi-party problem's `delta`:
    `"start:stop:count"`, `"a,b,c"` or a sequence) and/or numbers of `parties`
    (`"2:12"`, a list, or a range), every point a full verification, in parallel as in
    `batch`. Returns a Sweep: `.points`, `.rows()` (one per point, agent and accuracy),
    `.to_csv()`, `.to_dict()`, `.plot(path)`."""
    from dpverify.sweeps.axes import Variable, parse_levels, parse_parties
    from dpverify.sweeps.run import run_sweep

    given = [(v, spec) for v, spec in ((Variable.EPSILON, epsilon), (Variable.LAMBDA, lambda_),
                                       (Variable.ALPHA, alpha), (Variable.DELTA, delta))
             if spec is not None]
    if len(given) > 1:
        raise OptionError("sweep one privacy level at a time: epsilon, lambda, alpha or delta")
    level = parse_levels(given[0][1], given[0][0]) if given else None
    k_axis = parse_parties(parties) if parties is not None else None
    chosen = make_options(**options)
    loaded = _problem(problem)
    with _opened(store) as opened:
        return run_sweep(loaded, chosen, level=level, parties=k_axis, store=opened,
                         jobs=jobs, timeout=timeout, force=force, scheduler=scheduler,
                         listener=listener)


def plot(data: Sweep, path: PathLike | None = None, *, title: str | None = None,
         x: Literal["epsilon", "lambda", "alpha", "parties", "n"] | None = None,
         style: Literal["screen", "paper"] = "screen",
         figsize: tuple[float, float] | str | None = None) -> Figure:
    """Draw a sweep (the bound and the candidate against the swept variable, or against
    `x`; verdicts marked, closed forms where they exist; below them the gap, with the band
    of the tolerance) and save it to `path` (.png, .svg or .pdf) when given. `style`
    "paper" fits a 3.3 in journal column with 8 pt text and no title; `figsize` (width,
    height) in inches; `title` replaces the default ("" for none). Fonts are TrueType in
    PDF and text in SVG. Needs matplotlib: `install_hint("plot")`."""
    from dpverify.plotting import plot_sweep

    return plot_sweep(data, path, title=title, x=x, style=style, figsize=figsize)


def check_figsize(figsize: tuple[float, float] | str | None) -> tuple[float, float] | None:
    """A figure size (width, height) in inches from "W,H" or a pair; InputError (exit 2)
    otherwise. Needs no matplotlib."""
    from dpverify.plotting import check_figsize as check

    return check(figsize)


def check_plot(path: PathLike) -> str:
    """The image format of `path` (png, svg or pdf), once matplotlib is known to be
    installed; InputError before anything is computed otherwise."""
    from dpverify.plotting import check_plot_path, require_matplotlib

    fmt = check_plot_path(path)
    require_matplotlib()
    return fmt


# -- count queries ----------------------------------------------------------------------------
@record(eq=False, repr=False)
class MechanismDerivation(Notebook):
    """What `dpverify derive` finds: the mechanism file and whether the mechanism derives
    from the geometric mechanism (`derivation`: both tests, their violations and T)."""

    mechanism: MechanismSpec
    derivation: Derivation | DeltaDerivation  # the second when the file claims delta > 0

    notebook_columns = ("n", "derivable", "dp", "linear_solve", "local_test", "delta",
                        "achieved_delta", "private", "serves_pairs")

    @property
    def problem(self) -> str:
        return self.mechanism.name

    @property
    def source(self) -> str:
        return self.mechanism.source

    def to_dict(self) -> dict[str, Any]:
        """The answer in brief (`derive --json` has every detail): the mechanism, n,
        `derivable` (None: undecided) and the tests behind it: `dp` (alpha-DP) and the two
        tests' answers, or with delta > 0 the claimed and achieved delta, `private` and
        `serves_pairs`."""
        from dpverify.verifiers.count.approximate import DeltaDerivation

        d = self.derivation
        out: dict[str, Any] = {"mechanism": self.mechanism.name,
                               "source": self.mechanism.source, "n": self.mechanism.n,
                               "derivable": self.derivable}
        if isinstance(d, DeltaDerivation):
            out |= {"delta": str(d.delta), "achieved_delta": [str(v) for v in d.achieved],
                    "private": d.private, "serves_pairs": d.serves}
        else:
            out |= {"dp": d.dp, "linear_solve": d.by_solve, "local_test": d.by_local}
        return out

    @property
    def derivable(self) -> bool | None:
        """True, False, or None when undecided (the two tests disagree)."""
        return self.derivation.derivable

    @property
    def setting(self) -> Setting:
        """The mechanism's setting (pure alpha-DP, or delta > 0): what its view is chosen by."""
        return self.mechanism.setting

    def exit_status(self) -> ExitStatus:
        """0 derivable; 1 not derivable (not alpha-DP included); 3 undecided."""
        return exit_status(failed=self.derivable is False, undecided=self.derivable is None)


def derive(mechanism: PathLike, *, tol: float = 1e-9,
           timeout: float | None = None) -> MechanismDerivation:
    """Can the mechanism of a mechanism file (a path, or its text) be derived from the
    geometric mechanism (Gupte-Sundararajan Theorem 2)? As `dpverify derive`: exact when
    alpha and every entry are exact, else in floating point with `tol`. A file that claims
    `delta` > 0 gets a DeltaDerivation instead: its (epsilon, delta) privacy and whether it
    serves every consumer of two adjacent answers (docs/theory.md, "Approximate
    privacy"); past `timeout` seconds (None: no limit), TimeLimitError."""
    from dpverify.errors import TimeLimitError
    from dpverify.runner.deadline import TimedOut, deadline
    from dpverify.runner.files import timeout_reason
    from dpverify.spec.count_loader import load_mechanism, loads_mechanism

    spec = (loads_mechanism(mechanism) if isinstance(mechanism, str) and _is_text(mechanism)
            else load_mechanism(_paths(mechanism)[0]))
    from dpverify.verifiers.dispatch import derivation

    try:
        with deadline(timeout):
            return MechanismDerivation(spec, derivation(spec, tol))
    except TimedOut:
        raise TimeLimitError(f"{spec.source}: {timeout_reason(timeout)}") from None


def release(n: int, alphas: str | Sequence[Fraction | float | int | str], answer: int, *,
            seed: int | None = None, check: bool = False) -> Release:
    """Release `answer` in 0..n at several privacy levels at once (Gupte-Sundararajan
    Algorithm 1), as `dpverify release` does: `alphas` strictly increasing in [0, 1]
    ("1/10,1/2,0.9" or a sequence); `check` verifies each stage's marginal and every
    coalition. `.ok` is False when a check failed."""
    from dpverify.verifiers.count.release import multilevel_release, parse_alphas

    text = alphas if isinstance(alphas, str) else ",".join(str(a) for a in alphas)
    return multilevel_release(n, parse_alphas(text), answer, seed=seed, check=check)


# -- research ---------------------------------------------------------------------------------
def falsify(problem: Problem | PathLike, *, protocols: int = 200, rounds: int = 4,
            messages: int = 2, seed: int = 0, climb: int = 100,
            save_best: PathLike | None = None, counterexamples: PathLike = ".",
            tol: float = DEFAULT_TOL,
            on_progress: Callable[[int, int], None] | None = None,
            timeout: float | None = None) -> Campaign:
    """Search for protocols that beat the relaxed bound of a multi-party problem (or a
    protocol file, for its claimed levels and agents), as `dpverify falsify` does: random
    interactive protocols, hill climbing, RR; a protocol above the bound by more than
    `tol` is a counterexample, written into `counterexamples`. `on_progress(done,
    total)`; `.exit_status()` is the command's. Past `timeout` seconds (None: no limit),
    TimeLimitError."""
    from dpverify.errors import InputError, TimeLimitError
    from dpverify.filenames import make_directory
    from dpverify.research.falsify import SearchOptions
    from dpverify.research.falsify import falsify as run
    from dpverify.runner.deadline import TimedOut, deadline
    from dpverify.runner.files import timeout_reason
    from dpverify.spec.count_model import CountSpec
    from dpverify.spec.protocol_model import ProtocolSpec

    loaded = _problem(problem)
    spec = loaded.spec
    if isinstance(spec, CountSpec):
        raise InputError(f"{loaded.source}: a count problem: falsify takes a multi-party "
                         "problem (or a protocol file)")
    if isinstance(spec, ProtocolSpec):
        spec = spec.claimed()
    directory = make_directory(counterexamples)
    try:
        with deadline(timeout):
            return run(spec, loaded.document(),
                       SearchOptions(protocols, rounds, messages, seed, climb),
                       make_options(tol=tol), counterexample_dir=directory,
                       save_best=Path(save_best) if save_best is not None else None,
                       on_progress=on_progress)
    except TimedOut:
        raise TimeLimitError(f"{loaded.source}: {timeout_reason(timeout)}") from None


def survey_epsilons(text: str) -> tuple[Fraction, ...]:
    """`--epsilon 0.5,1,2` of `survey`: exact levels in 0..700; OptionError naming a bad
    item."""
    from dpverify.research.survey import parse_epsilons

    return parse_epsilons(text)


def plot_survey(report: SurveyReport, path: PathLike | None = None, *,
                title: str | None = None, style: Literal["screen", "paper"] = "screen",
                figsize: tuple[float, float] | str | None = None) -> Figure:
    """Draw a survey under approximate privacy as heat maps over (epsilon, delta), one per
    gain and accuracy, of the largest gain of interaction over RR(epsilon, delta) among its
    functions, into `path` (.png, .svg or .pdf) when given. Needs `dpverify[plot]`."""
    from dpverify.plotting import plot_survey as draw

    return draw(report, path, title=title, style=style, figsize=figsize)


def survey_deltas(text: str) -> tuple[Fraction, ...]:
    """`--delta 1/20,1/10` of `survey`: exact levels in (0, 1); OptionError naming a bad
    item."""
    from dpverify.research.survey import parse_deltas

    return parse_deltas(text)


def survey(*, alphabet: int, parties: int, epsilon: str | Iterable[Fraction | float | str],
           functions: str = "all", values: int = 2, gains: Sequence[str] = ("indicator",),
           accuracy: Sequence[str] = ("average", "worst"), jobs: int | None = None,
           save_dir: PathLike | None = ".dpverify/survey", symmetry: bool = True,
           restarts: int = DEFAULT_RESTARTS, seed: int = 0, tol: float = DEFAULT_TOL,
           on_result: Callable[[CaseResult, int, int], None] | None = None,
           delta: str | Iterable[Fraction | float | str] | None = None,
           store: PathLike | Store | None = None, force: bool = False,
           timeout: float | None = DEFAULT_TIMEOUT) -> SurveyReport:
    """What `dpverify survey` does: the observer's accuracy for many functions on
    {0..m-1}^k (`alphabet` m, `parties` k; `functions` "all" or "random:N" with `values`
    values), verified at each `epsilon` (and with `delta`, on bits, at each delta: the
    approximate survey), gain and accuracy, one function per class of relabellings unless
    `symmetry` is False; gap, interaction-helps and open instances saved into `save_dir`
    (None: not saved); with `store` (a path or an open Store) the results are read from
    (unless `force`) and saved to it, so that a survey run again resumes. Each instance
    within `timeout` seconds (None: no limit; past it `error`, reason `timeout`).
    `on_result(result, done, total)`; `.exit_status()` is the command's."""
    from dpverify.research.survey import SurveyPlan, run_survey

    levels = (survey_epsilons(epsilon) if isinstance(epsilon, str)
              else survey_epsilons(",".join(str(e) for e in epsilon)))
    deltas = () if delta is None else survey_deltas(
        delta if isinstance(delta, str) else ",".join(str(d) for d in delta))
    plan = SurveyPlan(alphabet=alphabet, parties=parties, epsilons=levels,
                      functions=functions, values=values, gains=tuple(gains),
                      accuracies=tuple(accuracy), seed=seed, symmetry=symmetry,
                      deltas=deltas)
    options = make_options(tol=tol, seed=seed, restarts=restarts)
    with _opened(store) as opened:
        return run_survey(plan, options, jobs=jobs,
                          save_dir=Path(save_dir) if save_dir is not None else None,
                          on_result=on_result, store=opened, force=force, timeout=timeout)


# -- installed users -------------------------------------------------------------------------
def examples(folder: PathLike) -> WrittenExamples:
    """What `dpverify examples DIR` does: the problem files that ship with dpverify written
    into `folder` (`folder/problems/...`, `folder/examples/...`), where the README's and
    docs' examples expect them. Nothing is overwritten (InputError, nothing written, for a
    file there with other content)."""
    from dpverify.runner.examples import write_examples

    return write_examples(folder)


def install_hint(extra: str) -> str:
    """How to install the optional extra `extra` (`plot`, `dask`) where dpverify runs:
    from a wheel `pip install 'dpverify[plot]'`, in the checkout `.venv/bin/pip install -e
    '.[plot]'`."""
    from dpverify.install import install_hint as hint

    return hint(extra)


# -- helpers ----------------------------------------------------------------------------------
def _paths(paths: Any) -> list[str | Path]:
    """One path or a sequence of them, as a list; each as given (messages name it so)."""
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    return [p if isinstance(p, str | Path) else Path(p) for p in items]


def _exclusions(patterns: Sequence[str]) -> Exclusions | None:
    """Glob patterns of paths to leave out (relative to the working directory; absolute
    ones as they are), or None."""
    if isinstance(patterns, str):
        patterns = (patterns,)
    if not patterns:
        return None
    from dpverify.runner.exclude import Exclusions

    return Exclusions(tuple(patterns))


@contextlib.contextmanager
def _opened(store: Any) -> Iterator[Any]:
    """A store given by its path is opened (and closed) here; a Store object is used as is."""
    if not isinstance(store, str | os.PathLike):
        yield store
        return
    from dpverify.runner.store import Store

    with Store(Path(store)) as opened:
        yield opened
