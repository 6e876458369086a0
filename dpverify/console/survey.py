"""What `dpverify survey` shows: one row per epsilon, gain and accuracy (counts of verdicts,
the largest gap, the largest open interval) and a summary. Its progress bar is
console/falsify.py's."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from dpverify.console.numbers import fmt
from dpverify.console.tables import print_table

COLUMNS = ("epsilon", "gain", "accuracy", "functions", "classes", "optimal", "gap", "open",
           "error", "largest gap", "gap f", "largest open", "open f")


def survey_table(report: Any) -> Table:
    plan = report.plan
    parties = f"{plan.parties} part{'y' if plan.parties == 1 else 'ies'}"
    table = Table(title=f"survey: alphabet {plan.alphabet}, {parties}, "
                        f"{report.functions} functions ({plan.functions}, {plan.values} "
                        "values), observer", title_justify="left", show_edge=False,
                  pad_edge=False)
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("gain", "accuracy", "gap f", "open f")
                         else "right")
    for row in report.rows():
        table.add_row(fmt(row["epsilon"]), row["gain"], row["accuracy"],
                      str(row["functions"]), str(row["classes"]), str(row["optimal"]),
                      str(row["gap"]), str(row["open"]), str(row["error"]),
                      f"{row['largest_gap']:.4g}", row["largest_gap_function"] or "-",
                      f"{row['largest_open']:.4g}", row["largest_open_function"] or "-")
    return table


def print_survey(console: Console, report: Any, save_dir: str | None) -> None:
    print_table(console, survey_table(report))
    saved = [r.saved for r in report.results if r.saved]
    console.print()
    symmetry = (f"{report.classes} classes under relabelling symbols, parties and values"
                if report.plan.symmetry else "no symmetry reduction")
    console.print(f"{len(report.results)} verifications ({symmetry}) in "
                  f"{report.seconds:.1f} s" + (f"; {len(saved)} gap and open instances "
                                                f"saved in {save_dir}" if saved else ""))


def summary_line(report: Any) -> str:
    counts = {v: sum(r.case.weight for r in report.results if r.verdict == v)
              for v in ("optimal", "gap", "open", "error")}
    return ", ".join(f"{n} {v}" for v, n in counts.items()) + \
        f" ({len(report.results)} verifications, {report.seconds:.1f} s)"
