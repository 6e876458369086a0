"""The Python API: what the command line does, as functions with typed results.

    import dpverify
    problem = dpverify.load("problems/xor-4.toml")
    result = dpverify.verify(problem)             # a ProblemResult
    result.verdict, result.to_dict()              # "optimal", spec.md's result object
    sweep = dpverify.sweep(problem, epsilon="0.1:4:40", jobs=2)
    sweep.plot("xor-4.png")

Every function takes the command line's options by their names (`tol`, `backend`,
`max_nonzeros`, `lp_form`, `grid`, `samples`, `seed`, `certify`), and raises one family
of exceptions, `dpverify.DpverifyError`: a `SpecError` for a problem that is not valid
(the one line the command line prints after `dpverify: `), an `OptionError` for a bad
option, a `SizeLimitError` or `SolverError` when a problem cannot be decided. Each has
`exit_code`, the command line's exit status. Heavy modules (the solvers, matplotlib) are
imported when a function first needs them.

`batch` and `sweep` run worker processes that import dpverify only, never the caller's
script (dpverify/runner/executors/spawn.py), so a script may call them at its top level, without an
`if __name__ == "__main__":` guard, and so may `python - <<EOF`. The exception is
`scheduler="local"`: Dask starts those workers, and they run the script again, so there
the call belongs under the guard (without it, an InputError says so; a script read from
standard input is refused).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from dpverify.errors import OptionError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from dpverify.problem import Problem
    from dpverify.runner.batch import BatchResult, Listener
    from dpverify.runner.certify_files import CertificateRecord, Certification
    from dpverify.runner.store import Store, StoredResult
    from dpverify.sweeps.run import Sweep
    from dpverify.verifiers.options import VerifyOptions
    from dpverify.verifiers.result import ProblemResult

__all__ = ["VerifyKwargs", "audit", "batch", "certify", "load", "make_options", "plot",
           "results", "sweep", "verify"]

Levels = str | Iterable[float | int | str]


class VerifyKwargs(TypedDict, total=False):
    """The options of `verify` (and `batch`, `sweep`), named as on the command line."""

    tol: float  # verdict tolerance, relative to the range of the gains; default 1e-9
    backend: Literal["highs", "cvxpy"]
    max_nonzeros: int  # size guard: larger LPs are refused (SizeLimitError)
    lp_form: Literal["chain", "dense"]
    grid: int  # interior rank-one points on an m-point grid (0: off, else >= 2)
    samples: int  # random interior rank-one points
    seed: int
    certify: bool  # build and check exact certificates
    time_limit: float | None  # seconds per LP solve
    threads: int | None  # HiGHS threads
    method: str  # how multi-party problems are verified: auto, lp, orbit or proof
    max_orbit_work: int  # size guard of the orbit method
    restarts: int  # inputs with more than two symbols: random starts of the protocol search
    witness_dir: str  # where witness protocol files are written ("": the default)


def make_options(**options: Unpack[VerifyKwargs]) -> VerifyOptions:
    """VerifyOptions from the command line's option names (OptionError for a bad one)."""
    from dpverify.verifiers.options import make_options as build

    return build(**options)


def load(path_or_text: str | os.PathLike[str], *, source: str | None = None) -> Problem:
    """Read and validate one problem file; a `str` holding a newline, or starting with
    `[`, is taken as the text of a problem file (named `source` in messages), anything
    else as a path. Raises SpecError with the command line's one-line message."""
    from dpverify.problem import Problem

    if isinstance(path_or_text, str) and _is_text(path_or_text):
        return Problem.loads(path_or_text, source=source or "<string>")
    return Problem.load(path_or_text)


def _is_text(text: str) -> bool:
    return "\n" in text or text.lstrip("\ufeff \t").startswith("[")


def _problem(problem: Any) -> Problem:
    from dpverify.problem import Problem

    if isinstance(problem, Problem):
        return problem
    if isinstance(problem, str | os.PathLike):
        return load(problem)
    raise OptionError(f"not a problem: {problem!r} (give a dpverify.Problem, a path or the "
                      "text of a problem file)")


def verify(problem: Problem | str | os.PathLike[str],
           **options: Unpack[VerifyKwargs]) -> ProblemResult:
    """Verify one problem (a Problem, a path or the text of a problem file), as
    `dpverify verify` does: `result.verdict` is `optimal`, `gap` or `error`, and
    `result.to_dict()` is the object `dpverify verify --json` prints.

    Raises SpecError (bad input), SizeLimitError (refused before any result; the command
    line shows it as a result with verdict `error` and this `reason`)."""
    from dpverify.verifiers.dispatch import verify_spec

    chosen = make_options(**options)
    return verify_spec(_problem(problem).spec, chosen)


def certify(problem: Problem | str | os.PathLike[str],
            out_dir: str | os.PathLike[str] | None = None, *,
            backend: Literal["highs", "cvxpy"] = "highs", max_nonzeros: int | None = None,
            on_certificate: Callable[[CertificateRecord], None] | None = None
            ) -> Certification:
    """Exact certificates for every agent and accuracy of a multi-party problem, as
    `dpverify certify` builds them (written into `out_dir` when it is given). Each
    certificate's `status` is `proved-optimal`, `bracket` or `unproved`; `.verdict` is the
    worst of them (`error` when one could not be built)."""
    from dpverify.runner.certify_files import Certification, certify_spec
    from dpverify.spec.model import MultipartySpec

    loaded = _problem(problem)
    if not isinstance(loaded.spec, MultipartySpec):
        from dpverify.errors import SpecError

        raise SpecError(loaded.source, "problem.kind", loaded.kind,
                        "certificates cover multi-party problems only")
    extra: dict[str, Any] = {"backend": backend}
    if max_nonzeros is not None:
        extra["max_nonzeros"] = max_nonzeros
    report = certify_spec(loaded.spec, None if out_dir is None else Path(out_dir),
                          make_options(**extra),
                          on_certificate=on_certificate)
    return Certification(loaded.name, loaded.source, tuple(report.certificates),
                         tuple(report.messages), report.errors)


def audit(protocol: Problem | str | os.PathLike[str],
          **options: Unpack[VerifyKwargs]) -> ProblemResult:
    """Audit one explicit protocol (`kind = "protocol"`) or mechanism file with a
    `[consumer]` table, as `dpverify audit` does: the privacy levels it achieves, each
    agent's accuracy against the bound; `verdict` is `optimal`, `suboptimal`,
    `not-private`, `contradiction` or `error` (docs/format.md). Raises SpecError for a
    file that is neither, with the command line's message."""
    from dpverify.errors import DpverifyError, SpecError
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
    outcome = audit_source(text, source, chosen)
    if outcome.status is FileStatus.INVALID:  # the loader's one line, raised as it was
        raise SpecError(source, "", None, outcome.reason.removeprefix(f"{source}: "))
    if outcome.status is FileStatus.REFUSED:
        raise DpverifyError(outcome.reason)
    return outcome.result


def batch(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
          jobs: int | None = None, store: str | os.PathLike[str] | Store | None = None,
          timeout: float | None = 600.0, force: bool = False, scheduler: str | None = None,
          listener: Listener | None = None,
          **options: Unpack[VerifyKwargs]) -> BatchResult:
    """Verify every problem file under `paths` in parallel worker processes, as
    `dpverify batch` does. With `store` (a path, such as ".dpverify/results.sqlite", or a
    Store), results are saved as they finish and problems stored there by this build of
    dpverify are skipped (unless `force`), and a problem another run on the same store is
    computing is waited for, not computed twice; without it nothing is written. `timeout`
    is per problem (None: no limit); `scheduler` runs on Dask ("local" or an address;
    from a script, under `if __name__ == "__main__":`)."""
    from dpverify.runner.batch import run_batch

    chosen = make_options(**options)
    with _opened(store) as opened:
        report = run_batch(_paths(paths), chosen, store=opened, jobs=jobs, timeout=timeout,
                           force=force, scheduler=scheduler, listener=listener)
    return report.freeze()


def sweep(problem: Problem | str | os.PathLike[str], *, epsilon: Levels | None = None,
          lambda_: Levels | None = None, alpha: Levels | None = None,
          parties: str | int | Iterable[int] | None = None, jobs: int | None = None,
          store: str | os.PathLike[str] | Store | None = None,
          timeout: float | None = 600.0, force: bool = False, scheduler: str | None = None,
          listener: Listener | None = None, **options: Unpack[VerifyKwargs]) -> Sweep:
    """Verify `problem` over a range of privacy levels (`epsilon`, `lambda_` or `alpha`:
    `"start:stop:count"`, `"a,b,c"` or a sequence) and/or numbers of `parties`
    (`"2:12"`, a list, or a range), every point a full verification, in parallel as in
    `batch`. Returns a Sweep: `.points`, `.rows()` (one per point, agent and accuracy),
    `.to_csv()`, `.to_dict()`, `.plot(path)`."""
    from dpverify.sweeps.axes import Variable, parse_levels, parse_parties
    from dpverify.sweeps.run import run_sweep

    given = [(v, spec) for v, spec in ((Variable.EPSILON, epsilon), (Variable.LAMBDA, lambda_),
                                       (Variable.ALPHA, alpha)) if spec is not None]
    if len(given) > 1:
        raise OptionError("sweep one privacy level at a time: epsilon, lambda or alpha")
    level = parse_levels(given[0][1], given[0][0]) if given else None
    k_axis = parse_parties(parties) if parties is not None else None
    chosen = make_options(**options)
    loaded = _problem(problem)
    with _opened(store) as opened:
        return run_sweep(loaded, chosen, level=level, parties=k_axis, store=opened,
                         jobs=jobs, timeout=timeout, force=force, scheduler=scheduler,
                         listener=listener)


def plot(data: Sweep, path: str | os.PathLike[str] | None = None, *,
         title: str | None = None,
         x: Literal["epsilon", "lambda", "alpha", "parties", "n"] | None = None) -> Figure:
    """Draw a sweep (the bound and the candidate against the swept variable, or against
    `x`; verdicts marked, closed forms where they exist) and save it to `path` (.png, .svg
    or .pdf) when given. Needs matplotlib: `.venv/bin/pip install -e '.[plot]'`."""
    from dpverify.plotting import plot_sweep

    return plot_sweep(data, path, title=title, x=x)


def results(store: str | os.PathLike[str] = ".dpverify/results.sqlite", *,
            verdict: Literal["optimal", "gap", "error"] | None = None
            ) -> list[StoredResult]:
    """What a results store holds (every build and option set), as `dpverify results`
    lists it; `row.result` is spec.md's result object, `row.version` the build of
    dpverify that computed it (dpverify.runner.fingerprint.build_id() is this one's)."""
    from dpverify.runner.store import Store

    with Store(Path(store), readonly=True) as opened:
        return opened.all(verdict=verdict)


def _paths(paths: Any) -> list[str | Path]:
    if isinstance(paths, str | os.PathLike):
        return [Path(paths)]
    return [Path(p) for p in paths]


@contextlib.contextmanager
def _opened(store: Any) -> Iterator[Any]:
    """A store given by its path is opened (and closed) here; a Store object is used as is."""
    if not isinstance(store, str | os.PathLike):
        yield store
        return
    from dpverify.runner.store import Store

    with Store(Path(store)) as opened:
        yield opened
