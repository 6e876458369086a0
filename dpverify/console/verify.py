"""What `dpverify verify` shows: a table per problem, a summary line, decision rules, JSON.

`VerifyView` listens to `dpverify.runner.files.verify_paths`: it prints each problem as it
finishes and, on a terminal only, shows a spinner while a problem is being solved.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np
from rich.console import Console
from rich.status import Status
from rich.table import Table
from rich.text import Text

from dpverify.console import VERDICT_STYLE, print_json
from dpverify.console.numbers import fmt, fmt_gap, json_output
from dpverify.console.protocols import file_json, protocol_table, rules_tables
from dpverify.console.rules import rule_label
from dpverify.console.tables import compact, print_table

MAX_RULE_ROWS = 64
COUNT_COLUMNS = ("agent", "model", "mechanism optimum", "geometric value", "gap",
                 "hypothesis", "verdict", "seconds")
TEXT_COLUMNS = ("agent", "model", "accuracy", "hypothesis", "verdict", "proof")


def _table(title: str, columns: Sequence[str]) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for col in columns:
        table.add_column(col, justify="left" if col in TEXT_COLUMNS else "right")
    return table


def problem_table(result: Any, *, show_proof: bool = False, show_grid: bool = False,
                  seconds: bool = True, gap_digits: int = 2, method: bool = True) -> Table:
    """One problem's results; `seconds`, `gap_digits` and `method` let a narrow terminal
    drop the least useful columns and digits first (see `problem_tables`)."""
    title = f"{result.problem}  ({result.source})"
    if result.kind == "protocol":  # an audited protocol: its own columns (console/audit.py)
        table = protocol_table(result, seconds=seconds, gap_digits=gap_digits)
        table.title = title
        return table
    if result.kind == "count":
        columns = [c for c in COUNT_COLUMNS if seconds or c != "seconds"]
        table = _table(title, columns)
        for r in result.results:
            row = [r.agent, r.accuracy, fmt(r.mechanism_optimum), fmt(r.geometric_value),
                   fmt_gap(r.gap, gap_digits), r.hypothesis, _verdict(r.verdict.value)]
            table.add_row(*row, *([f"{r.seconds:.3f}"] if seconds else []))
        return table
    if "delta" in result.header:  # delta > 0: its own columns (console/approximate.py)
        from dpverify.console.approximate import approximate_table

        return approximate_table(result, seconds=seconds, gap_digits=gap_digits, method=method)
    # alphabets > 2: the best protocol found, between RR and the bound (docs/theory.md 6)
    show_best = any("best_value" in r.extra for r in result.results)
    columns = ["agent", "accuracy", "relaxed optimum", "RR value"] + ["best found"] * show_best
    columns += ["gap"] + ["interior optimum"] * show_grid + ["verdict"] + ["method"] * method
    columns += ["proof"] * show_proof
    table = _table(title, columns + ["seconds"] * seconds)
    for r in result.results:
        row = [r.agent, r.accuracy, fmt(r.relaxed_optimum), fmt(r.rr_value)]
        row += [fmt(r.extra.get("best_value"))] * show_best
        row += [fmt_gap(r.gap, gap_digits)]
        if show_grid:
            row.append(fmt(r.extra.get("interior_optimum")))
        row += [_verdict(r.verdict.value)] + [r.method] * method
        if show_proof:
            row.append(_proof(r.extra.get("proof")))
        table.add_row(*row, *([f"{r.seconds:.3f}"] if seconds else []))
    return table


def common_method(result: Any) -> str | None:
    """The method of every result of a multi-party problem when they share one (alphabets
    > 2: always `rays`), else None."""
    if result.kind in ("count", "protocol"):
        return None
    methods = {r.method for r in result.results}
    return methods.pop() if len(methods) == 1 else None


def problem_tables(result: Any, **kw: Any) -> list[Table]:
    """The problem table, then variants for narrow terminals (80 columns): without seconds,
    with a one-digit gap, compact (no cell padding), and compact without the method column
    when every result has the same method (`print_problem` then names it under the table).
    Numbers are never cut and keep every digit (dpverify.console.tables)."""
    def narrow(**more: Any) -> Table:
        return problem_table(result, seconds=False, gap_digits=0, **more, **kw)

    tables = [problem_table(result, **kw), problem_table(result, seconds=False, **kw),
              narrow(), compact(narrow())]
    if common_method(result) is not None:
        tables.append(compact(narrow(method=False)))
    return tables


def _verdict(v: str) -> Text:
    return Text(v, style=VERDICT_STYLE.get(v, ""))


def _proof(proof: dict[str, Any] | None) -> str:
    if not proof:
        return "-"
    if proof.get("status") == "proved-optimal":
        return "proved"
    if proof.get("status") == "bracket":
        return f"bracket +-{proof.get('width', 0):.1e}"
    return "unproved"


def print_problem(console: Console, result: Any, **kw: Any) -> None:
    shown = print_table(console, problem_tables(result, **kw))
    method = common_method(result)
    if method and "method" not in {str(c.header) for c in shown.columns}:
        console.print(f"  method: {method} (every result)")
    for r in result.results:
        if r.reason:
            console.print(f"  {r.agent} {r.accuracy}: {r.reason}")
        note = getattr(r, "extra", {}).get("note")
        if note:
            console.print(f"  {r.agent} {r.accuracy}: {note}")
    if result.reason:
        console.print(f"  {result.reason}")
    console.print()


def summary_line(report: Any) -> str:
    """`N problems: a optimal, b gap, c error[, d invalid] (s s)`."""
    counts = report.counts()
    parts = [f"{counts.get(v, 0)} {v}" for v in ("optimal", "gap", "error")]
    parts += [f"{counts[v]} {v}" for v in ("suboptimal", "not-private", "contradiction",
                                           "interaction-helps", "open") if counts.get(v)]
    if counts.get("invalid"):
        parts.append(f"{counts['invalid']} invalid")
    n = len(report.files)
    return f"{n} problem{'s' if n != 1 else ''}: {', '.join(parts)} ({report.seconds:.2f} s)"


# -- decision rules -------------------------------------------------------------------------
def rules_table(result: Any, k: int) -> list[Table]:
    """Per agent and accuracy: released bits -> decision (per own bit for a party)."""
    tables = []
    for r in result.results:
        if getattr(r, "rule", None) is None:
            continue
        party = r.rule.ndim == 3
        columns = ["decision if own bit 0", "decision if own bit 1"] if party else ["decision"]
        t = _table(f"{result.problem}: decision rule of {r.agent} ({r.accuracy})",
                   ["released bits", *columns])
        rows = 1 << k
        for tau in range(min(rows, MAX_RULE_ROWS)):
            bits = format(tau, f"0{k}b")
            if party:
                t.add_row(bits, rule_label(r.outputs, r.rule[0][tau]),
                          rule_label(r.outputs, r.rule[1][tau]))
            else:
                t.add_row(bits, rule_label(r.outputs, r.rule[tau]))
        if rows > MAX_RULE_ROWS:
            t.add_row(f"... {rows - MAX_RULE_ROWS} more rows", *[""] * len(columns))
        tables.append(t)
    return tables


def rule_json(agent_result: Any) -> dict[str, Any] | None:
    """`{"outputs": [...], "decision": [[...]]}`: the decision rule as nested lists,
    `decision[tau][y]` (observer) or `decision[b][tau][y]` (party with own bit b), as in
    a certificate's `lower.decision`; None when the result has no rule."""
    rule = getattr(agent_result, "rule", None)
    if rule is None:
        return None
    return {"outputs": [json_output(v) for v in agent_result.outputs],
            "decision": np.asarray(rule, dtype=float).tolist()}


def result_json(file_result: Any, *, rules: bool = False) -> dict[str, Any]:
    """spec.md's result object of one file; with `rules`, a `rule` field per result."""
    if file_result.result.kind == "protocol":  # rules over transcripts (console/audit.py)
        return file_json(file_result, rules=rules)
    out = file_result.to_json()
    if rules and file_result.result.results:
        for obj, r in zip(out["results"], file_result.result.results, strict=True):
            rule = rule_json(r)
            if rule is not None:
                obj["rule"] = rule
    return out


# -- the listener ---------------------------------------------------------------------------
class VerifyView:
    """Prints what `verify_paths` reports: each problem's table as it finishes (unless
    `as_json` or `quiet`), and on a terminal a spinner while a problem is solved. Use as a
    context manager so the spinner is always taken down."""

    def __init__(self, out: Console, err: Console, *, as_json: bool = False,
                 quiet: bool = False, show_rules: bool = False, show_proof: bool = False,
                 show_grid: bool = False) -> None:
        self.out, self.err = out, err
        self.as_json, self.quiet, self.show_rules = as_json, quiet, show_rules
        self.table_options = {"show_proof": show_proof, "show_grid": show_grid}
        self.spinner = out.is_terminal and not (as_json or quiet)
        self._status: Status | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    verb = "verifying"  # the spinner's word

    def started(self, path: Path) -> None:
        if not self.spinner:
            return
        message = f"{self.verb} {path}"
        if self._status is None:
            self._status = self.out.status(message)
            self._status.start()
        else:
            self._status.update(message)

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
        if self.show_rules and result.kind == "protocol":
            for table in rules_tables(result):
                print_table(self.out, table)
                self.out.print()
        if self.show_rules and result.kind == "multiparty":
            for table in rules_table(result, file_result.spec.parties):
                print_table(self.out, table)
                self.out.print()

    def report(self, report: Any) -> None:
        """The end of the run: the JSON array of every file's result, or the summary."""
        self.__exit__()
        if self.as_json:
            print_json([result_json(f, rules=self.show_rules) for f in report.files])
        else:
            self.out.print(summary_line(report))
