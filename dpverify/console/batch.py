"""What `batch`, `check` and `results` show: progress, summaries, mismatch and result tables.

Progress: a rich bar on stderr when stderr is a terminal (done/total, rate, ETA, failures
so far); otherwise one plain line per problem, on stderr too. Results alone go to stdout
(the summary, the tables; with `--json`, JSON Lines only: one spec.md result object per
problem, as each finishes), so `batch DIR > report.txt` holds the report and nothing else.
The resume hint of an interrupted run is a message, on stderr.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from dpverify.console import CATEGORY_STYLE, PASSING, counted, fmt, print_json
from dpverify.console.tables import print_table

SLOWEST = 5
STYLE = {c.value: style for c, style in CATEGORY_STYLE.items()}


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-/s" if speed is None else f"{speed:.1f}/s")


class _FailuresColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        n = task.fields.get("failures", 0)
        return Text(f"failures: {n}", style="bold red" if n else "")


class BatchProgress:
    """A batch listener (see dpverify.runner.batch.Listener) that shows progress.

    Use as a context manager around the run so a progress bar is always taken down.
    """

    def __init__(self, out: Console, err: Console, *, as_json: bool = False,
                 quiet: bool = False, label: str = "verifying", noun: str = "problem") -> None:
        self.out, self.err = out, err
        self.as_json, self.quiet, self.label, self.noun = as_json, quiet, label, noun
        self.total = 0
        self.done = 0
        self.failures = 0
        self._progress: Progress | None = None
        self._task: Any = None
        self._bar = err.is_terminal and not quiet

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def started(self, total: int, skipped: int, workers: int) -> None:
        self.total = total
        if self._bar:
            self._progress = Progress(
                TextColumn(f"{self.label}"), BarColumn(), MofNCompleteColumn(), _RateColumn(),
                TextColumn("eta"), TimeRemainingColumn(), TimeElapsedColumn(),
                _FailuresColumn(), console=self.err, transient=True)
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=total, failures=0)
        elif not self.as_json and not self.quiet:
            stored = f", {skipped} from the store" if skipped else ""
            pool = f"; running on {workers} worker{'s' if workers != 1 else ''}" if workers else ""
            self.err.print(f"{total} {self.noun}{'s' if total != 1 else ''}{stored}{pool}")

    def waiting(self, owner: str) -> None:
        """Another run on the same store is computing some of these problems."""
        message = (f"another run on this store ({owner}) is computing some of these "
                   f"{self.noun}s: waiting for its results instead of computing them twice")
        if self._progress is not None:
            self._progress.console.print(message)
        elif not self.quiet:
            self.err.print(message)

    def finished(self, item: Any) -> None:
        self.done += 1
        failed = item.category not in PASSING
        self.failures += failed
        if self.as_json:
            print_json(item.to_dict(), lines=True)
        if self._progress is not None:
            self._progress.update(self._task, advance=1, failures=self.failures)
            if failed and not self.as_json:
                self._progress.console.print(_line(item, self.done, self.total))
        elif not self.as_json and not self.quiet:
            self.err.print(_line(item, self.done, self.total))


def _line(item: Any, done: int, total: int) -> Text:
    width = len(str(total))
    text = Text(f"[{done:>{width}}/{total}] ")
    text.append(f"{item.category:<7}", style=STYLE.get(item.category, ""))
    text.append(f" {item.problem}  {item.source}  {item.seconds:.2f} s")
    if item.cached:
        text.append("  (stored)")
    if item.category not in PASSING and item.reason:
        text.append(f"  {_reason(item)}")
    return text


def _reason(item: Any) -> str:
    """The one-line reason without a leading `source: ` (the line names the file already)."""
    reason = item.reason or "-"
    prefix = f"{item.source}: "
    return reason.removeprefix(prefix)


def counts_line(report: Any) -> str:
    parts = [f"{n} {c}" for c, n in counted(report.counts())]
    n = len(report.items)
    extra = []
    if report.skipped:
        extra.append(f"{report.skipped} from the store")
    computed = n - report.skipped
    if computed and report.workers:
        extra.append(f"{computed} computed on {report.workers} "
                     f"{report.executor + ' ' if report.executor else ''}"
                     f"worker{'s' if report.workers != 1 else ''}")
    tail = f"; {', '.join(extra)}" if extra else ""
    return (f"{n} problem{'s' if n != 1 else ''}: {', '.join(parts)} "
            f"({report.seconds:.2f} s{tail})")


def print_batch_summary(console: Console, report: Any, store_path: str | None = None,
                        err: Console | None = None) -> None:
    """Counts per verdict, the slowest problems, and each failure with its reason; the
    resume hint of an interrupted run on `err` (stderr). `store_path` None: the run had
    no store (`--no-store`), so nothing was saved."""
    computed = [i for i in report.items if not i.cached]
    slow = sorted(computed, key=lambda i: i.seconds, reverse=True)[:SLOWEST]
    if len(computed) > 1 and slow:
        table = Table(title="slowest", title_justify="left", show_edge=False, pad_edge=False)
        for col in ("problem", "source", "verdict", "seconds"):
            table.add_column(col, justify="right" if col == "seconds" else "left")
        for item in slow:
            table.add_row(item.problem, item.source,
                          Text(item.category, style=STYLE.get(item.category, "")),
                          f"{item.seconds:.2f}")
        print_table(console, table)
        console.print()
    failures = [i for i in report.items if i.category not in PASSING]
    if failures:
        console.print(f"failures ({len(failures)}):")
        for item in failures:
            line = Text("  ")
            line.append(f"{item.category:<7}", style=STYLE.get(item.category, ""))
            line.append(f" {item.source}: {_reason(item)}")
            console.print(line)
        console.print()
    console.print(counts_line(report))
    hint = resume_hint(report, store_path)
    if hint is not None:
        (err or console).print(hint)


def resume_hint(report: Any, store_path: str | None) -> str | None:
    """The line for stderr after an interrupted batch (None when it finished): what was
    saved, and how to resume (`store_path` None: the run had no store, --no-store)."""
    if not report.interrupted:
        return None
    done = len(report.items)
    if store_path is None:
        return f"interrupted: {done} of {report.total} problems finished (not saved: --no-store)"
    return (f"interrupted: {done} of {report.total} problems finished and saved in "
            f"{store_path}; run the same command again to resume")


# -- check ---------------------------------------------------------------------------------
def _expected_cell(case: Any, verdict: str | None, value: float | None) -> str:
    """A verdict mismatch shows the verdicts, any other row the values."""
    if case.kind in ("verdict", "undecided"):
        return verdict or "-"
    return fmt(value)


def mismatch_table(mismatches: Sequence[Any]) -> Table:
    table = Table(title="mismatches", title_justify="left", show_edge=False, pad_edge=False)
    for col in ("problem", "at", "agent", "accuracy", "expected", "got", "difference", "note"):
        table.add_column(col, justify="right" if col in ("expected", "got", "difference")
                         else "left")
    for m in mismatches:
        diff = m.difference
        table.add_row(m.problem, m.where, m.agent, m.accuracy,
                      _expected_cell(m, m.expected_verdict, m.expected),
                      _expected_cell(m, m.got_verdict, m.got),
                      "-" if diff is None else f"{diff:+.3g}", m.note)
    return table


def print_check(console: Console, report: Any) -> None:
    """The table of mismatches, the invalid and unchecked files, what --update wrote (or
    --diff would write: the diffs), and the summary line (the resume hint of an
    interrupted run is `resume_hint`'s, on stderr)."""
    for diff in report.diffs:
        _print_raw(console, diff.unified())
    if report.mismatches:
        print_table(console, mismatch_table(report.mismatches))
        console.print()
    if report.invalid:
        console.print(f"invalid ({len(report.invalid)}):")
        for item in report.invalid:  # the reason names the file and the key
            console.print(f"  {item.source}: {_reason(item)}")
        console.print()
    if report.unchecked:
        label = "unchecked (no [expect] table" + (", a failure with --strict)" if report.strict
                                                   else ")")
        console.print(f"{label}: {len(report.unchecked)}")
        for item in report.unchecked:
            console.print(f"  {item.source}")
        console.print()
    for source in report.updated:
        console.print(f"updated [expect] in {source}")
    for diff in report.diffs:
        console.print(f"would update [expect] in {diff.source} ({diff.values} "
                      f"value{'s' if diff.values != 1 else ''}; --update writes it)")
    for message in report.update_errors:
        console.print(f"dpverify: {message}")
    console.print(check_summary(report))


def check_summary(report: Any) -> str:
    """`check ok: ...` or `check FAILED: ...`: problems, expectations held, mismatches,
    undecided results (a timeout, a refusal: not a mismatch, exit 3) and invalid files
    (each when there are any), unchecked problems, seconds."""
    batch = report.batch
    n = len(batch.items)
    status = "ok" if report.exit_status() == 0 else "FAILED"
    undecided = sum(1 for m in report.mismatches if m.kind == "undecided")
    mismatches = len(report.mismatches) - undecided
    invalid = f"{len(report.invalid)} invalid, " if report.invalid else ""
    return (f"check {status}: {n} problem{'s' if n != 1 else ''}, "
            f"{report.checked} expectation{'s' if report.checked != 1 else ''} held, "
            + (f"{report.written} written, " if report.written else "") +
            f"{mismatches} mismatch{'es' if mismatches != 1 else ''}, "
            + (f"{undecided} undecided, " if undecided else "") + f"{invalid}"
            f"{len(report.unchecked)} unchecked ({batch.seconds:.2f} s)")


def print_github(report: Any, annotations: Sequence[str]) -> None:
    """`check --format github`: one workflow command per line on stdout (GitHub shows each
    on its file and line), then the summary line."""
    import sys

    for line in annotations:
        sys.stdout.write(line + "\n")
    sys.stdout.write(check_summary(report) + "\n")
    sys.stdout.flush()


def _print_raw(console: Console, text: str) -> None:
    """A diff byte for byte, so that `git apply` reads it from a pipe: rich would drop its
    carriage returns (a file with "\r\n" line endings), so it goes to the console's file
    as it is."""
    console.file.write(text)
    console.file.flush()


def check_json(report: Any) -> dict[str, Any]:
    return report.to_dict()
