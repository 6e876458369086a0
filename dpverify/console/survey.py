"""What `dpverify survey` shows: one row per epsilon (and delta), gain and accuracy (counts
of verdicts, the largest gap, the largest open interval; with delta, how many
interaction-helps are closed) and a summary. Its progress bar is console/falsify.py's."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from dpverify.console.numbers import fmt
from dpverify.console.tables import print_table

COLUMNS = ("epsilon", "gain", "accuracy", "functions", "classes", "optimal", "gap", "open",
           "error", "largest gap", "gap f", "largest open", "open f")
# delta > 0: the gap is what interaction gains over RR(epsilon, delta)
DELTA_COLUMNS = ("epsilon", "delta", "gain", "accuracy", "functions", "classes", "optimal",
                 "interaction-helps", "closed", "open", "error", "largest gain", "gain f",
                 "largest open", "open f")
TEXT = ("gain", "accuracy", "gap f", "open f", "gain f")


def survey_table(report: Any) -> Table:
    plan = report.plan
    parties = f"{plan.parties} part{'y' if plan.parties == 1 else 'ies'}"
    what = "bits under (epsilon, delta)" if plan.approximate else f"alphabet {plan.alphabet}"
    table = Table(title=f"survey: {what}, {parties}, {report.functions} functions "
                        f"({plan.functions}, {plan.values} values), observer",
                  title_justify="left", show_edge=False, pad_edge=False)
    columns = DELTA_COLUMNS if plan.approximate else COLUMNS
    for col in columns:
        table.add_column(col, justify="left" if col in TEXT else "right")
    for row in report.rows():
        head = [fmt(row["epsilon"])] + ([fmt(row["delta"])] if plan.approximate else [])
        counts = (["optimal", "interaction-helps", "closed", "open", "error"]
                  if plan.approximate else ["optimal", "gap", "open", "error"])
        table.add_row(*head, row["gain"], row["accuracy"], str(row["functions"]),
                      str(row["classes"]), *(str(row[c]) for c in counts),
                      f"{row['largest_gap']:.4g}", row["largest_gap_function"] or "-",
                      f"{row['largest_open']:.4g}", row["largest_open_function"] or "-")
    return table


def print_survey(console: Console, report: Any, save_dir: str | None) -> None:
    print_table(console, survey_table(report))
    saved = [r.saved for r in report.results if r.saved]
    console.print()
    symmetry = (f"{report.classes} classes under relabelling symbols, parties and values"
                if report.plan.symmetry else "no symmetry reduction")
    kinds = "interaction-helps and open" if report.plan.approximate else "gap and open"
    console.print(f"{len(report.results)} verifications ({symmetry}) in "
                  f"{report.seconds:.1f} s" + (f"; {len(saved)} {kinds} instances "
                                                f"saved in {save_dir}" if saved else ""))


def summary_line(report: Any) -> str:
    verdicts = ("optimal", "interaction-helps", "open", "error") if report.plan.approximate \
        else ("optimal", "gap", "open", "error")
    counts = {v: sum(r.case.weight for r in report.results if r.verdict == v)
              for v in verdicts}
    return ", ".join(f"{n} {v}" for v, n in counts.items()) + \
        f" ({len(report.results)} verifications, {report.seconds:.1f} s)"
