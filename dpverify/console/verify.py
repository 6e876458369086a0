"""Tables of `dpverify verify`: one per problem, a summary line, decision rules."""

from __future__ import annotations

from collections import Counter

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from dpverify.console import VERDICT_STYLE, fmt, fmt_gap

MAX_RULE_ROWS = 64


def problem_table(result, *, show_proof: bool = False, show_grid: bool = False) -> Table:
    title = f"{result.problem}  ({result.source})"
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    if result.kind == "count":
        for col in ("agent", "model", "mechanism optimum", "geometric value", "gap",
                    "hypothesis", "verdict", "seconds"):
            table.add_column(col, justify="right" if col not in ("agent", "model", "hypothesis",
                                                                   "verdict") else "left")
        for r in result.results:
            table.add_row(r.agent, r.accuracy, fmt(r.mechanism_optimum), fmt(r.geometric_value),
                          fmt_gap(r.gap), r.hypothesis, _verdict(r.verdict.value),
                          f"{r.seconds:.3f}")
        return table
    cols = ["agent", "accuracy", "relaxed optimum", "RR value", "gap"]
    if show_grid:
        cols.append("interior optimum")
    cols += ["verdict"]
    if show_proof:
        cols.append("proof")
    cols.append("seconds")
    for col in cols:
        table.add_column(col, justify="left" if col in ("agent", "accuracy", "verdict", "proof")
                         else "right")
    for r in result.results:
        row = [r.agent, r.accuracy, fmt(r.relaxed_optimum), fmt(r.rr_value), fmt_gap(r.gap)]
        if show_grid:
            row.append(fmt(r.extra.get("interior_optimum")))
        row.append(_verdict(r.verdict.value))
        if show_proof:
            row.append(_proof(r.extra.get("proof")))
        row.append(f"{r.seconds:.3f}")
        table.add_row(*row)
    return table


def _verdict(v: str) -> Text:
    return Text(v, style=VERDICT_STYLE.get(v, ""))


def _proof(proof) -> str:
    if not proof:
        return "-"
    if proof.get("status") == "proved-optimal":
        return "proved"
    if proof.get("status") == "bracket":
        return f"bracket +-{proof.get('width', 0):.1e}"
    return "unproved"


def print_problem(console: Console, result, **kw) -> None:
    console.print(problem_table(result, **kw))
    for r in result.results:
        if r.reason:
            console.print(f"  {r.agent} {r.accuracy}: {r.reason}")
        note = getattr(r, "extra", {}).get("note")
        if note:
            console.print(f"  {r.agent} {r.accuracy}: {note}")
    if result.reason:
        console.print(f"  {result.reason}")
    console.print()


def print_summary(console: Console, results, errors: int, seconds: float) -> None:
    counts = Counter(r.verdict.value for r in results)
    parts = [f"{counts.get(v, 0)} {v}" for v in ("optimal", "gap", "error")]
    if errors:
        parts.append(f"{errors} invalid")
    n = len(results) + errors
    console.print(f"{n} problem{'s' if n != 1 else ''}: {', '.join(parts)} "
                  f"({seconds:.2f} s)")


def _label(outputs, row) -> str:
    """A decision-rule row as text: the output, or a distribution for a randomised rule."""
    row = np.asarray(row)
    if np.isclose(row.max(), 1.0, atol=1e-9):
        return _out(outputs[int(np.argmax(row))])
    return ", ".join(f"{_out(outputs[j])}: {p:.3g}" for j, p in enumerate(row) if p > 1e-9)


def _out(v) -> str:
    return str(v.numerator) if getattr(v, "denominator", 1) == 1 else str(v)


def rules_table(result, k: int) -> list[Table]:
    """Per agent and accuracy: released bits -> decision (per own bit for a party)."""
    tables = []
    for r in result.results:
        if r.rule is None:
            continue
        t = Table(title=f"{result.problem}: decision rule of {r.agent} ({r.accuracy})",
                  title_justify="left", show_edge=False, pad_edge=False)
        t.add_column("released bits")
        party = r.rule.ndim == 3
        if party:
            t.add_column("decision if own bit 0")
            t.add_column("decision if own bit 1")
        else:
            t.add_column("decision")
        rows = 1 << k
        for tau in range(min(rows, MAX_RULE_ROWS)):
            bits = format(tau, f"0{k}b")
            if party:
                t.add_row(bits, _label(r.outputs, r.rule[0][tau]), _label(r.outputs, r.rule[1][tau]))
            else:
                t.add_row(bits, _label(r.outputs, r.rule[tau]))
        if rows > MAX_RULE_ROWS:
            t.add_row(f"... {rows - MAX_RULE_ROWS} more rows", "")
        tables.append(t)
    return tables
