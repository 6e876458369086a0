"""What `dpverify sweep` shows: one table row per point, agent and accuracy, a summary
line; or CSV or JSON rows and nothing else (the rows of docs/format.md, "Sweep rows")."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dpverify.console import VERDICT_STYLE, counted, print_json
from dpverify.console.numbers import fmt, fmt_gap
from dpverify.console.tables import print_table, without_columns
from dpverify.sweeps.rows import to_json_rows

# (header, row key, how to show it) per kind; a column that is empty in every row is left out
MULTIPARTY = (("epsilon", "epsilon", "level"), ("lambda", "lambda", "level"),
              ("delta", "delta", "level"),
              ("k", "parties", "int"), ("agent", "agent", "text"),
              ("accuracy", "accuracy", "text"), ("relaxed optimum", "relaxed_optimum", "num"),
              ("RR value", "rr_value", "num"), ("best found", "best_value", "num"),
              ("closed form", "closed_form", "num"),
              ("gap", "gap", "gap"), ("verdict", "verdict", "verdict"),
              ("method", "method", "text"), ("seconds", "seconds", "seconds"))
COUNT = (("epsilon", "epsilon", "level"), ("alpha", "alpha", "level"), ("n", "n", "int"),
         ("agent", "agent", "text"), ("model", "accuracy", "text"),
         ("mechanism optimum", "mechanism_optimum", "num"),
         ("geometric value", "geometric_value", "num"), ("gap", "gap", "gap"),
         ("hypothesis", "hypothesis", "text"), ("verdict", "verdict", "verdict"),
         ("seconds", "seconds", "seconds"))


def _cell(value: Any, how: str) -> Text | str:
    if value is None or value == "":
        return "-"
    if how == "verdict":
        return Text(str(value), style=VERDICT_STYLE.get(str(value), ""))
    if how == "level":
        return fmt(value, 6) if isinstance(value, float) else str(value)
    if how == "num":
        return fmt(value)
    if how == "gap":
        return fmt_gap(value)
    if how == "seconds":
        return f"{value:.3f}"
    return str(value)


def sweep_table(sweep: Any) -> Table:
    rows = sweep.rows()
    spec = COUNT if sweep.kind == "count" else MULTIPARTY
    shown = [c for c in spec if any(r.get(c[1]) not in (None, "") for r in rows)]
    table = Table(title=f"{sweep.problem}  ({sweep.source})", title_justify="left",
                  show_edge=False, pad_edge=False)
    for header, _, how in shown:
        table.add_column(header, justify="left" if how in ("text", "verdict") else "right")
    for row in rows:
        table.add_row(*[_cell(row.get(key), how) for _, key, how in shown])
    return table


def summary_line(sweep: Any) -> str:
    parts = [f"{n} {c}" for c, n in counted(sweep.counts())]
    n = len(sweep.points)
    extra = []
    if sweep.skipped:
        extra.append(f"{sweep.skipped} from the store")
    if sweep.workers:
        extra.append(f"on {sweep.workers} worker{'s' if sweep.workers != 1 else ''}")
    tail = f"; {', '.join(extra)}" if extra else ""
    return (f"{n} point{'s' if n != 1 else ''}: {', '.join(parts)} "
            f"({sweep.seconds:.2f} s{tail})")


def resume_hint(sweep: Any, saved: bool = True) -> str | None:
    """The line for stderr when a sweep was interrupted (None when it was not)."""
    if not sweep.interrupted:
        return None
    if not saved:
        return "interrupted: the points that finished are not saved (--no-store)"
    return ("interrupted: the points that finished are stored; run the same command again "
            "to resume")


def print_sweep(out: Console, sweep: Any, fmt_name: str, *, quiet: bool = False) -> None:
    """`table` and a summary line (only the summary when `quiet`), `csv` or `json` (the
    rows, nothing else)."""
    if fmt_name == "csv":
        sys.stdout.write(sweep.to_csv())
        sys.stdout.flush()
    elif fmt_name == "json":
        print_json(to_json_rows(sweep.rows(), sweep.columns))
    else:
        if sweep.points and not quiet:
            table = sweep_table(sweep)
            print_table(out, [table, without_columns(table, ["seconds"]),
                              without_columns(table, ["seconds", "method", "lambda"])])
            out.print()
        out.print(summary_line(sweep))
