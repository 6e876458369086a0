"""Batch runs: find problem files, skip what the store holds, run the rest, store each result.

`run_batch` does no printing: a `Listener` (the console's progress display) hears about
each problem as it finishes. Ctrl-C stops the workers; what finished is already stored.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from dpverify.defaults import DEFAULT_TIMEOUT
from dpverify.errors import SpecError
from dpverify.notebook import Notebook
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.runner.claims import StoreGate
from dpverify.runner.exclude import Exclusions
from dpverify.runner.executors.base import default_workers
from dpverify.runner.executors.local import (
    Executor,
    Outcome,
    Task,
    check_scheduler,
    error_result,
    make_executor,
)
from dpverify.runner.executors.spawn import refuse_when_rerunning_main
from dpverify.runner.files import SkippedFile, find_problem_files, no_problem_files
from dpverify.runner.fingerprint import build_id
from dpverify.runner.notes import Note, option_notes
from dpverify.runner.store import INTERNAL, INVALID, Store, StoredResult, options_key
from dpverify.spec.reader import parse_toml, read_data
from dpverify.spec.setting import Setting
from dpverify.status import ExitStatus, verdict_status
from dpverify.verdict import Category, Verdict, category_of, worst_verdict
from dpverify.verifiers.dispatch import read_result
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import ProblemResult


@record(repr=False)
class BatchItem(Notebook):
    """One problem file's outcome (computed now, or read from the store when `cached`)."""

    source: str
    content_hash: str
    status: str  # a store.TaskStatus: DONE, INVALID, TIMEOUT, CRASHED, FAILED or INTERNAL
    result: ProblemResult  # spec.md's result object, typed, with this file's `source`
    values: tuple[tuple[str, str, float | None], ...] = ()
    expect: tuple[tuple[str, str, float, str], ...] = ()
    seconds: float = 0.0
    cached: bool = False
    build: str = ""  # the build of dpverify that computed it (fingerprint.build_id)

    notebook_columns: ClassVar[tuple[str, ...]] = (
        "agent", "accuracy", "relaxed_optimum", "rr_value", "mechanism_optimum",
        "geometric_value", "protocol_value", "gap", "verdict", "method", "reason")

    def __post_init__(self) -> None:
        if isinstance(self.result, dict):  # the JSON a worker or the store sends
            object.__setattr__(self, "result", read_result(self.result))

    @property
    def problem(self) -> str:
        return self.result.problem or Path(self.source).stem

    @property
    def verdict(self) -> Verdict:
        return self.result.verdict

    @property
    def invalid(self) -> bool:
        return self.status == INVALID

    @property
    def reason(self) -> str:
        return self.result.first_reason()

    @property
    def category(self) -> Category:
        """`invalid` for a file that is not a valid problem, `internal` for a bug met while
        it was verified (exit 4), else the verdict."""
        return category(self.status, self.verdict)

    def to_dict(self) -> dict[str, Any]:
        """spec.md's result object (its JSON)."""
        return self.result.to_dict()

    @property
    def key(self) -> tuple[str, Setting] | None:
        """The problem's (kind, setting) (spec/setting.py), None for a file that did not
        load or a run without a result (a timeout, a crash)."""
        setting = None if self.invalid else self.result.setting
        return None if setting is None else (self.result.kind, setting)


def category(status: str, verdict: Verdict | str) -> Category:
    """What counts for the exit status (status.verdict_status): the one category rule
    (dpverify/verdict.py), from a task's status and its result's verdict."""
    return category_of(verdict, invalid=status == INVALID, internal=status == INTERNAL)


def as_verdict(text: str) -> Verdict:
    """A result object's verdict as a Verdict (`error` for anything unknown)."""
    return Verdict.of(text)


class _Outcomes:
    """What a batch's outcomes say together: counts per category, the exit status, the
    verdict."""

    items: Sequence[BatchItem]
    interrupted: bool
    not_problems: tuple[SkippedFile, ...]

    def counts(self) -> Counter[str]:
        """How many problems fell in each category (by its name, as `to_dict` gives it)."""
        return Counter(str(item.category) for item in self.items)

    def option_notes(self, given: Mapping[str, object]) -> tuple[Note, ...]:
        """The notes of the options `given` (API names) that did not apply to some of the
        problems, and of the TOML files skipped (runner/notes.py)."""
        return tuple(option_notes([(item.source, item.key) for item in self.items], given,
                                  [(s.source, s.reason) for s in self.not_problems]))

    def exit_status(self) -> ExitStatus:
        """spec.md: 2 bad input, else 3 could not decide, else 1 a gap, else 0 (130 when
        interrupted)."""
        return verdict_status((item.category for item in self.items),
                              interrupted=self.interrupted)

    @property
    def verdict(self) -> str:
        """The worst verdict of all the problems (an invalid file counts as `error`)."""
        return worst_verdict(as_verdict(item.verdict) for item in self.items).value


@dataclass
class BatchReport(_Outcomes):
    items: list[BatchItem] = field(default_factory=list)
    total: int = 0  # problem files found
    skipped: int = 0  # read from the store
    interrupted: bool = False
    seconds: float = 0.0
    workers: int = 0
    executor: str = ""
    not_problems: tuple[SkippedFile, ...] = ()  # TOML files in the directories skipped
    notes: tuple[Note, ...] = ()  # options that did not apply, files skipped (notes.py)

    def freeze(self) -> BatchResult:
        return BatchResult(tuple(self.items), self.total, self.skipped, self.interrupted,
                           self.seconds, self.workers, self.executor, self.not_problems,
                           self.notes)


@record(repr=False)
class BatchResult(_Outcomes, Notebook):
    """A finished batch (what `dpverify.batch` returns): each problem's outcome, in the
    order they finished, with spec.md's result object as `item.result`; in a notebook,
    one row per problem, agent and accuracy."""

    notebook_columns: ClassVar[tuple[str, ...]] = (
        "problem", "agent", "accuracy", "verdict", "method", "reason")

    items: tuple[BatchItem, ...]
    total: int
    skipped: int
    interrupted: bool
    seconds: float
    workers: int
    executor: str
    not_problems: tuple[SkippedFile, ...] = ()
    notes: tuple[Note, ...] = ()  # options that did not apply, files skipped (notes.py)

    def to_dict(self) -> dict[str, Any]:
        """The verdict, the counts per category, and every result object."""
        return {"verdict": self.verdict, "counts": dict(self.counts()),
                "seconds": round(self.seconds, 4), "interrupted": self.interrupted,
                "results": [item.to_dict() for item in self.items]}


class Listener(Protocol):
    def started(self, total: int, skipped: int, workers: int) -> None: ...

    def finished(self, item: BatchItem) -> None: ...

    # Optional (looked up with getattr): told once per other run on the same store that
    # this run waits for its results: `waiting(owner)`, owner `host:pid:token`.


class _Silent:
    def started(self, total: int, skipped: int, workers: int) -> None:
        pass

    def finished(self, item: BatchItem) -> None:
        pass


@record
class ProblemFile:
    """A problem file as read by the parent: its bytes' hash and text, or why not; the
    problem's `name` and `kind` when known before it runs (a sweep's points)."""

    source: str
    content_hash: str
    text: str | None
    error: str = ""
    name: str | None = None
    kind: str | None = None

    def named(self, result: ProblemResult) -> ProblemResult:
        """A result made without the problem (a timeout, a crash), with the problem's name
        and kind when they are known."""
        if self.name is None:
            return result
        return result.named(self.name, self.kind or "unknown")


def read_problem(path: Path) -> ProblemFile:
    """Read and hash one file; the same checks as `dpverify.spec.load` before parsing."""
    source = str(path)
    try:
        raw, text = read_data(path)
    except SpecError as exc:
        return ProblemFile(source, "", None, str(exc))
    return ProblemFile(source, hashlib.sha256(raw).hexdigest(), text)


def relabel(result: ProblemResult, source: str, text: str | None) -> ProblemResult:
    """A result computed for identical bytes under another path, relabelled for `source`
    (ProblemResult.relabelled): its `source`, its reason's leading path, and its `problem`
    when the name defaults to the file name."""
    if result.source == source:
        return result
    name = None
    if text is not None:
        try:
            problem = parse_toml(text, source).get("problem")
            name = problem.get("name") if isinstance(problem, dict) else None
        except SpecError:  # not TOML that Python reads (the result says so)
            name = None
    return result.relabelled(source, name if isinstance(name, str) else Path(source).stem)


def run_batch(
    paths: Sequence[str | Path],
    options: VerifyOptions,
    *,
    store: Store | None,
    jobs: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    force: bool = False,
    scheduler: str | None = None,
    executor: Executor | None = None,
    listener: Listener | None = None,
    exclude: Exclusions | None = None,
    skip_named: bool = False,
) -> BatchReport:
    """Verify every problem under `paths`, skipping those `store` holds (unless `force`);
    `exclude` leaves paths out, and with `skip_named` a named file that is not a problem
    file is skipped as one found in a directory is (`files.find_problem_files`).

    Results are stored (one commit each) as they finish. Raises InputError when no
    problem file is found (`files.NoProblemFiles`), or when the store or the scheduler is
    unusable.
    """
    start = time.perf_counter()
    if scheduler:
        check_scheduler(scheduler)  # a malformed address fails before anything runs
    # a file named twice (or inside a named dir) runs once
    found = find_problem_files(paths, exclude=exclude, skip_named=skip_named)
    files = list(found.files)
    if not files:
        raise no_problem_files(paths, found.skipped)
    report = run_problems([read_problem(p) for p in files], options, store=store, jobs=jobs,
                          timeout=timeout, force=force, scheduler=scheduler,
                          executor=executor, listener=listener, start=start)
    report.not_problems = found.skipped
    return report


def problem_text(source: str, text: str, *, name: str | None = None,
                 kind: str | None = None) -> ProblemFile:
    """A problem that is not a file (a point of a sweep): its text, hashed as a file's."""
    return ProblemFile(source, hashlib.sha256(text.encode("utf-8")).hexdigest(), text,
                       name=name, kind=kind)


def run_problems(
    problems: Sequence[ProblemFile],
    options: VerifyOptions,
    *,
    store: Store | None,
    jobs: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    force: bool = False,
    scheduler: str | None = None,
    executor: Executor | None = None,
    listener: Listener | None = None,
    start: float | None = None,
) -> BatchReport:
    """Verify problems already read (files, or the points of a sweep) as `run_batch` does:
    in parallel workers, skipping what `store` holds, storing each result as it finishes.
    Identical contents are verified once."""
    refuse_when_rerunning_main()
    start = time.perf_counter() if start is None else start
    listener = listener or _Silent()
    if scheduler:
        check_scheduler(scheduler)
    if timeout is not None and timeout <= 0:
        timeout = None
    okey = options_key(options.key())
    build = build_id()
    report = BatchReport(total=len(problems))

    stored: dict[str, StoredResult] = {}
    since = ""
    if store is not None:
        store.check_writable()
        since = store.now()
        if not force:
            stored = store.lookup([p.content_hash for p in problems if p.content_hash],
                                  okey, build)
    cached, unreadable, groups = _partition(list(problems), stored)
    gate = None if store is None else StoreGate(
        store, dict(enumerate(groups)), okey, build, since=since, force=force,
        on_wait=getattr(listener, "waiting", None))
    tasks = [Task(i, members[0].source, members[0].text or "", options, timeout)
             for i, members in enumerate(groups.values())]
    by_task = dict(enumerate(groups.values()))
    report.skipped = len(cached)

    own = executor is None
    try:
        if tasks and executor is None:
            executor = make_executor(jobs or (None if scheduler else default_workers(len(tasks))),
                                     scheduler)
        report.workers = executor.workers if executor is not None else 0
        report.executor = executor.name if executor is not None else ""
        listener.started(report.total, report.skipped, report.workers)
        for item in cached + unreadable:
            report.items.append(item)
            listener.finished(item)
        if executor is not None and tasks:
            _run(executor, tasks, by_task, timeout, store, gate, okey, report, listener)
    except KeyboardInterrupt:
        report.interrupted = True
    finally:
        if own and executor is not None:
            executor.close()
    report.seconds = time.perf_counter() - start
    return report


def _partition(problems: list[ProblemFile], stored: dict[str, StoredResult]
               ) -> tuple[list[BatchItem], list[BatchItem], dict[str, list[ProblemFile]]]:
    """(read from the store, unreadable, to run grouped by content: identical contents are
    verified once)."""
    cached: list[BatchItem] = []
    unreadable: list[BatchItem] = []
    groups: dict[str, list[ProblemFile]] = {}
    for p in problems:
        if p.text is None:
            error = error_result(p.source, p.error, invalid=True, code=ReasonCode.INVALID)
            unreadable.append(BatchItem(p.source, p.content_hash, INVALID,
                                        read_result(error)))
            continue
        row = stored.get(p.content_hash)
        if row is not None and row.final:
            cached.append(BatchItem(p.source, p.content_hash, row.status,
                                    relabel(row.problem_result, p.source, p.text),
                                    row.values,
                                    row.expect, row.seconds, cached=True, build=row.version))
            continue
        groups.setdefault(p.content_hash, []).append(p)
    return cached, unreadable, groups


def _run(executor: Executor, tasks: list[Task], by_task: dict[int, list[ProblemFile]],
         timeout: float | None, store: Store | None, gate: StoreGate | None, okey: str,
         report: BatchReport, listener: Listener) -> None:
    """Run the tasks through the store's claims (`gate`); store each result (and release
    its claim) before it is shown. A result another run stored is shown as stored."""
    outcomes = executor.run(tasks, timeout, gate)
    try:
        for outcome in outcomes:
            members = by_task[outcome.task_id]
            if outcome.cached:
                report.skipped += len(members)
            elif store is not None and gate is not None:
                store.put(_row(members[0], outcome, okey))  # committed before it is shown
                gate.release(outcome.task_id)
            for member in members:
                item = _item(member, outcome)
                report.items.append(item)
                listener.finished(item)
    finally:
        outcomes.close()  # stops the workers if the loop did not run to its end
        if gate is not None:
            gate.close()


def _row(problem: ProblemFile, outcome: Outcome, okey: str) -> StoredResult:
    result = problem.named(read_result(outcome.result))
    return StoredResult(
        content_hash=problem.content_hash, options_key=okey,
        version=outcome.build or build_id(),
        source=problem.source, problem=result.problem or Path(problem.source).stem,
        kind=result.kind, status=outcome.status,
        verdict=outcome.verdict, reason=outcome.reason, result=result.to_dict(),
        values=outcome.values,
        expect=outcome.expect, seconds=outcome.seconds, worker=outcome.worker,
    )


def _item(problem: ProblemFile, outcome: Outcome) -> BatchItem:
    return BatchItem(problem.source, problem.content_hash, outcome.status,
                     relabel(problem.named(read_result(outcome.result)), problem.source,
                             problem.text),
                     outcome.values,
                     outcome.expect, outcome.seconds, cached=outcome.cached,
                     build=outcome.build)

