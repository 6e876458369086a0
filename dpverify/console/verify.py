"""What `dpverify verify` shows: a table per problem, a summary line, decision rules, JSON.

`VerifyView` listens to `dpverify.runner.files.verify_paths`: it prints each problem as it
finishes and, on a terminal only, shows a progress line while a problem is being solved.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from dpverify.console import counted, print_json
from dpverify.console.progress import Activity

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

# console/tables.py and console/views.py (rich's tables) are imported by the functions that
# make a table, so that JSON output (`VerifyView(as_json=True)`) imports no rich.


def problem_table(result: Any, *, show_proof: bool = False, show_grid: bool = False,
                  seconds: bool = True, gap_digits: int = 2, method: bool = True) -> Table:
    """One problem's results, by the view of their type (console/views.py); `seconds`,
    `gap_digits` and `method` let a narrow terminal drop the least useful columns and
    digits first (see `problem_tables`)."""
    from dpverify.console.views import view_of

    return view_of(result).table(result, seconds=seconds, gap_digits=gap_digits,
                                 method=method, show_proof=show_proof, show_grid=show_grid)


def common_method(result: Any) -> str | None:
    """The method of every result of a problem when they share one (alphabets > 2:
    always `rays`) and its view has a method column, else None."""
    from dpverify.console.views import view_of

    if not view_of(result).method_column:
        return None
    methods = {str(r.method) for r in result.results}
    return methods.pop() if len(methods) == 1 else None


def problem_tables(result: Any, **kw: Any) -> list[Table]:
    """The problem table, then variants for narrow terminals (80 columns): without seconds,
    with a one-digit gap, compact (no cell padding), and compact without the method column
    when every result has the same method (`print_problem` then names it under the table).
    Numbers are never cut and keep every digit (dpverify.console.tables)."""
    from dpverify.console.tables import compact

    def narrow(**more: Any) -> Table:
        return problem_table(result, seconds=False, gap_digits=0, **more, **kw)

    tables = [problem_table(result, **kw), problem_table(result, seconds=False, **kw),
              narrow(), compact(narrow())]
    if common_method(result) is not None:
        tables.append(compact(narrow(method=False)))
    return tables


def print_problem(console: Console, result: Any, **kw: Any) -> None:
    from dpverify.console.tables import print_table
    from dpverify.console.views import view_of

    shown = print_table(console, problem_tables(result, **kw))
    method = common_method(result)
    if method and "method" not in {str(c.header) for c in shown.columns}:
        console.print(f"  method: {method} (every result)")
    view = view_of(result)
    notes = [(r, view.notes(r)) for r in result.results]
    shared = {tuple(lines) for _, lines in notes}
    if len(notes) > 1 and len(shared) == 1:  # the same note under every result: once
        for line in shared.pop():
            console.print(f"  every result: {line}")
    else:
        for r, lines in notes:
            for line in lines:
                console.print(f"  {r.agent} {r.accuracy}: {line}")
    if result.reason:
        console.print(f"  {result.reason}")
    console.print()


def summary_line(report: Any) -> str:
    """`N problems: a optimal, b gap, c error[, d invalid] (s s)`."""
    parts = [f"{n} {c}" for c, n in counted(report.counts())]
    n = len(report.files)
    return f"{n} problem{'s' if n != 1 else ''}: {', '.join(parts)} ({report.seconds:.2f} s)"


# -- decision rules ---------------------------------------------------------------------------
def rules_table(result: Any, k: int) -> list[Table]:
    """The decision rules of a problem's results, by their view (console/views.py)."""
    from dpverify.console.views import view_of

    return view_of(result).rules(result, k)


def rule_json(agent_result: Any) -> dict[str, Any] | None:
    """A multi-party result's decision rule as JSON (BitsView.rule_json)."""
    from dpverify.console.views import BITS

    return BITS.rule_json(agent_result)


# -- the listener ---------------------------------------------------------------------------
class VerifyView:
    """Prints what `verify_paths` reports: each problem's table as it finishes (unless
    `as_json` or `quiet`), and on a terminal a progress line while a problem is solved
    (console/progress.py: the file, the stage it hears through `stage`, the seconds). Use
    as a context manager so the progress line is always taken down."""

    def __init__(self, out: Console, err: Console, *, as_json: bool = False,
                 quiet: bool = False, show_rules: bool = False, show_proof: bool = False,
                 show_grid: bool = False) -> None:
        self.out, self.err = out, err
        self.as_json, self.quiet, self.show_rules = as_json, quiet, show_rules
        self.table_options = {"show_proof": show_proof, "show_grid": show_grid}
        self.activity = Activity(out, enabled=not (as_json or quiet) and out.is_terminal)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.activity.stop()

    verb = "verifying"  # the progress line's word

    def started(self, path: Path) -> None:
        self.activity.start(f"{self.verb} {path}")

    def stage(self, stage: Any) -> None:
        """A stage of the problem being solved (dpverify.verifiers.progress.Stage)."""
        self.activity.stage(stage)

    def _to_print(self, file_result: Any) -> Any | None:
        """A finished file's result when its tables are to be printed; a file that could
        not be done gets its one line on stderr whatever the output mode."""
        if file_result.status.value != "done":
            self.err.print(f"dpverify: {file_result.reason}")
            return None
        return None if self.as_json or self.quiet else file_result.result

    def finished(self, file_result: Any) -> None:
        result = self._to_print(file_result)
        if result is None:
            return
        print_problem(self.out, result, **self.table_options)
        if self.show_rules:
            from dpverify.console.tables import print_table

            for table in rules_table(result, getattr(file_result.spec, "parties", 0)):
                print_table(self.out, table)
                self.out.print()

    def report(self, report: Any) -> None:
        """The end of the run: the JSON array of every file's result, or the summary."""
        self.__exit__()
        if self.as_json and self.show_rules:  # the rules by their views (and rich's tables)
            from dpverify.console.views import result_json

            print_json([result_json(f, rules=True) for f in report.files])
        elif self.as_json:  # views.result_json without rules: the result objects alone
            print_json([f.to_json() for f in report.files])
        else:
            self.out.print(summary_line(report))
