"""What `dpverify audit` shows: per protocol, the privacy levels claimed and achieved, each
agent's accuracy against the bounds, and (with --show-rules) the protocol's optimal
decision rules; per count mechanism, its privacy and its consumer's loss. `verify` shows
protocol files with the same tables."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from dpverify.console import VERDICT_STYLE, print_json
from dpverify.console.numbers import fmt, fmt_gap
from dpverify.console.tables import natural_width, print_table
from dpverify.console.verify import VerifyView, _label

MAX_RULE_ROWS = 64
TEXT_COLUMNS = ("agent", "accuracy", "model", "verdict", "method", "party", "private",
                "transcript")


def _table(title: str, columns: Sequence[str]) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for col in columns:
        table.add_column(col, justify="left" if col in TEXT_COLUMNS else "right")
    return table


def verdict_text(v: str) -> Text:
    return Text(v, style=VERDICT_STYLE.get(v, ""))


LONG_LEVEL = 30  # characters: a longer exact level is shown as about its float in a table


def _level(v: Any) -> str:
    """A level in a table: "p/q" (or "~" and its float when long), a float, or "inf"."""
    if isinstance(v, str) and len(v) > LONG_LEVEL and "/" in v:
        num, den = v.split("/")
        return f"~{float(Fraction(int(Decimal(num)), int(Decimal(den)))):.17g}"
    return v if isinstance(v, str) else fmt(v)


def privacy_table(result: Any) -> Table:
    """Per party: the level claimed, the level achieved, and whether it is met."""
    h = result.header
    table = _table(f"{result.problem}: privacy  ({result.source})",
                   ["party", "claimed lambda", "achieved lambda", "achieved epsilon",
                    "private"])
    for i, (claimed, achieved, eps, ok) in enumerate(zip(
            h["claimed_lambdas"], h["achieved_lambdas"], h["achieved_epsilons"],
            h["private_by_party"], strict=True)):
        table.add_row(str(i + 1), _level(claimed), _level(achieved), _level(eps),
                      Text("yes" if ok else "NO", style="" if ok else "bold red"))
    return table


VALUE_COLUMNS = ("protocol", "relaxed optimum", "RR value")
VERDICT_COLUMNS = ("at achieved levels", "efficiency", "gap", "verdict")


def protocol_table(result: Any, *, seconds: bool = True, gap_digits: int = 2,
                   columns: Sequence[str] = VALUE_COLUMNS[:2] + VERDICT_COLUMNS[:1]
                   + VALUE_COLUMNS[2:] + VERDICT_COLUMNS[1:], title: str | None = None
                   ) -> Table:
    """Per agent and accuracy: the protocol's value against the bounds (the `columns`
    named, after agent and accuracy)."""
    table = _table(title if title is not None else
                   f"{result.problem}: accuracy ({result.header.get('transcripts')} "
                   "transcripts)", ["agent", "accuracy", *columns] + ["seconds"] * seconds)
    for r in result.results:
        cells: dict[str, str | Text] = {
            "protocol": fmt(r.protocol_value), "relaxed optimum": fmt(r.relaxed_optimum),
            "at achieved levels": fmt(r.relaxed_optimum_achieved),
            "RR value": fmt(r.rr_value), "efficiency": fmt(r.efficiency, 6),
            "gap": fmt_gap(r.gap, gap_digits), "verdict": verdict_text(r.verdict.value)}
        table.add_row(r.agent, r.accuracy, *(cells[c] for c in columns),
                      *([f"{r.seconds:.3f}"] if seconds else []))
    return table


def print_accuracy(console: Console, result: Any) -> None:
    """The accuracy table in one piece when it fits the console (with its seconds, else
    without), else in two: the values, then the comparison with the bounds. No number is
    ever cut (console/tables.py), and an 80-column terminal takes both halves."""
    for table in (protocol_table(result), protocol_table(result, seconds=False)):
        if natural_width(console, table) <= console.width:
            print_table(console, table)
            return
    print_table(console, protocol_table(result, seconds=False, columns=VALUE_COLUMNS))
    print_table(console, protocol_table(result, seconds=False, columns=VERDICT_COLUMNS,
                                        title=f"{result.problem}: against the bounds"))


def print_protocol(console: Console, result: Any, *, show_rules: bool = False) -> None:
    if not result.results:
        console.print(f"{result.problem}  ({result.source})")
        console.print(f"  {result.reason}")
        console.print()
        return
    print_table(console, privacy_table(result))
    print_accuracy(console, result)
    for note in result.header.get("privacy_notes", ()):
        console.print(f"  note: {note}")
    for r in result.results:
        if r.reason:
            console.print(f"  {r.agent} {r.accuracy}: {r.reason}")
    if show_rules:
        for table in rules_tables(result):
            console.print()
            print_table(console, table)
    console.print()


def _decision(outputs: Sequence[Any], row: Any) -> str:
    return _label(outputs, row)  # one way to show a rule's row


def rules_tables(result: Any) -> list[Table]:
    """The protocol's optimal decision rules: transcript -> decision (per own input symbol
    for a party)."""
    tables = []
    for r in result.results:
        if r.rule is None:
            continue
        rule = np.asarray(r.rule)
        party = rule.ndim == 3
        columns = ([f"decision if own input {a}" for a in range(rule.shape[0])] if party
                   else ["decision"])
        t = _table(f"{result.problem}: decision rule of {r.agent} ({r.accuracy})",
                   ["transcript", *columns])
        rows = len(r.transcripts)
        for tau in range(min(rows, MAX_RULE_ROWS)):
            cells = ([_decision(r.outputs, rule[a][tau]) for a in range(rule.shape[0])]
                     if party else [_decision(r.outputs, rule[tau])])
            t.add_row(r.transcripts[tau], *cells)
        if rows > MAX_RULE_ROWS:
            t.add_row(f"... {rows - MAX_RULE_ROWS} more rows", *[""] * len(columns))
        tables.append(t)
    return tables


def protocol_rules_json(agent_result: Any) -> dict[str, Any] | None:
    """`{"outputs": [...], "transcripts": [...], "decision": ...}` with `decision[t][y]`
    (observer) or `decision[a][t][y]` (a party whose own input is a)."""
    from dpverify.console.numbers import json_output

    if getattr(agent_result, "rule", None) is None:
        return None
    return {"outputs": [json_output(v) for v in agent_result.outputs],
            "transcripts": list(agent_result.transcripts),
            "decision": np.asarray(agent_result.rule, dtype=float).tolist()}


# -- count mechanisms -------------------------------------------------------------------
def mechanism_table(result: Any) -> Table:
    h = result.header
    table = _table(f"{result.problem}  ({result.source})",
                   ["claimed alpha", "achieved alpha", "private", "derivable from G"])
    derivable = h.get("derivable")
    table.add_row(_level(h.get("claimed_alpha")), _level(h.get("achieved_alpha")),
                  Text("yes" if h.get("private") else "NO",
                       style="" if h.get("private") else "bold red"),
                  {True: "yes", False: "no", None: "undecided"}[derivable])
    return table


CONSUMER_VALUES = ("mechanism loss", "optimal loss", "geometric value")
CONSUMER_VERDICT = ("optimal at achieved alpha", "efficiency", "verdict")


def consumer_table(result: Any, columns: Sequence[str] = CONSUMER_VALUES[:2]
                   + CONSUMER_VERDICT[:1] + CONSUMER_VALUES[2:] + CONSUMER_VERDICT[1:],
                   title: str | None = None) -> Table:
    """The consumer's loss against the optimal mechanism's (the `columns` named, after
    agent and model)."""
    table = _table(title if title is not None else
                   f"{result.problem}: consumer loss (minimised)", ["agent", "model", *columns])
    for r in result.results:
        cells: dict[str, str | Text] = {
            "mechanism loss": fmt(r.mechanism_loss), "optimal loss": fmt(r.optimal_loss),
            "optimal at achieved alpha": fmt(r.optimal_loss_achieved),
            "geometric value": fmt(r.geometric_value), "efficiency": fmt(r.efficiency, 6),
            "verdict": verdict_text(r.verdict.value)}
        table.add_row(r.agent, r.accuracy, *(cells[c] for c in columns))
    return table


def print_mechanism(console: Console, result: Any) -> None:
    print_table(console, mechanism_table(result))
    full = consumer_table(result)
    if natural_width(console, full) <= console.width:
        print_table(console, full)
    else:  # two halves that fit 80 columns, never a cut number
        print_table(console, consumer_table(result, CONSUMER_VALUES))
        print_table(console, consumer_table(result, CONSUMER_VERDICT,
                                            f"{result.problem}: against the optimum"))
    for r in result.results:
        if r.reason:
            console.print(f"  {r.agent} {r.accuracy}: {r.reason}")
    console.print()


def summary(counts: Any, total: int, seconds: float) -> str:
    """`N files: a optimal, b suboptimal, ... (s s)`, naming only the verdicts that occur
    beside optimal."""
    order = ("optimal", "suboptimal", "not-private", "contradiction", "gap", "error",
             "invalid")
    parts = [f"{counts.get(v, 0)} {v}" for v in order
             if v == "optimal" or counts.get(v, 0)]
    return f"{total} file{'s' if total != 1 else ''}: {', '.join(parts)} ({seconds:.2f} s)"


# -- the listener -------------------------------------------------------------------------
def file_json(file_result: Any, *, rules: bool = False) -> dict[str, Any]:
    """One file's result object; with `rules`, a `rule` field per protocol result."""
    out = file_result.to_json()
    if rules and file_result.result.kind == "protocol" and file_result.result.results:
        for obj, r in zip(out["results"], file_result.result.results, strict=True):
            rule = protocol_rules_json(r)
            if rule is not None:
                obj["rule"] = rule
    return out


class AuditView(VerifyView):
    """Prints what `audit_paths` reports: each file's tables as it finishes (unless
    `as_json` or `quiet`), and on a terminal a spinner while one is audited (VerifyView's).
    Use as a context manager so the spinner is always taken down."""

    verb = "auditing"

    def finished(self, file_result: Any) -> None:
        result = self._to_print(file_result)
        if result is None:
            return
        if result.kind == "mechanism":
            print_mechanism(self.out, result)
        else:
            print_protocol(self.out, result, show_rules=self.show_rules)

    def report(self, report: Any) -> None:
        self.__exit__()
        if self.as_json:
            print_json([file_json(f, rules=self.show_rules) for f in report.files])
        else:
            self.out.print(summary(report.counts(), len(report.files), report.seconds))
