"""What `dpverify survey` shows: one row per epsilon (and delta), gain and accuracy (counts
of verdicts, the largest gap, the largest open interval; with delta, how many
interaction-helps are closed) and a summary. Its progress bar is console/falsify.py's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from dpverify.console.numbers import fmt
from dpverify.console.tables import print_table
from dpverify.records import record
from dpverify.spec.setting import Setting

COLUMNS = ("epsilon", "gain", "accuracy", "functions", "classes", "optimal", "gap", "open",
           "error", "largest gap", "gap f", "largest open", "open f")
# delta > 0: the gap is what interaction gains over RR(epsilon, delta)
DELTA_COLUMNS = ("epsilon", "delta", "gain", "accuracy", "functions", "classes", "optimal",
                 "interaction-helps", "closed", "open", "error", "largest gain", "gain f",
                 "largest open", "open f")
TEXT = ("gain", "accuracy", "gap f", "open f", "gain f")


@record
class SurveyView:
    """How a survey of one setting is shown: its title's subject, its columns and the
    counts among them, and what its saved instances are."""

    what: Callable[[Any], str]  # the plan -> the title's subject
    columns: tuple[str, ...]
    counts: tuple[str, ...]
    saved: str


# One view per survey setting (research/survey.py, SURVEYS; tests/test_codebase.py).
SURVEY_VIEWS: dict[Setting, SurveyView] = {
    Setting.SYMBOLS: SurveyView(lambda plan: f"alphabet {plan.alphabet}", COLUMNS,
                                ("optimal", "gap", "open", "error"), "gap and open"),
    Setting.DELTA: SurveyView(lambda plan: "bits under (epsilon, delta)", DELTA_COLUMNS,
                              ("optimal", "interaction-helps", "closed", "open", "error"),
                              "interaction-helps and open"),
}


def survey_table(report: Any) -> Table:
    plan = report.plan
    parties = f"{plan.parties} part{'y' if plan.parties == 1 else 'ies'}"
    view = SURVEY_VIEWS[plan.setting]
    table = Table(title=f"survey: {view.what(plan)}, {parties}, {report.functions} functions "
                        f"({plan.functions}, {plan.values} values), observer",
                  title_justify="left", show_edge=False, pad_edge=False)
    for col in view.columns:
        table.add_column(col, justify="left" if col in TEXT else "right")
    for row in report.rows():
        head = [fmt(row["epsilon"])] + ([fmt(row["delta"])] if "delta" in row else [])
        table.add_row(*head, row["gain"], row["accuracy"], str(row["functions"]),
                      str(row["classes"]), *(str(row[c]) for c in view.counts),
                      f"{row['largest_gap']:.4g}", row["largest_gap_function"] or "-",
                      f"{row['largest_open']:.4g}", row["largest_open_function"] or "-")
    return table


def print_survey(console: Console, report: Any, save_dir: str | None) -> None:
    print_table(console, survey_table(report))
    saved = [r.saved for r in report.results if r.saved]
    console.print()
    symmetry = (f"{report.classes} classes under relabelling symbols, parties and values"
                if report.plan.symmetry else "no symmetry reduction")
    kinds = SURVEY_VIEWS[report.plan.setting].saved
    console.print(f"{len(report.results)} verifications ({symmetry}) in "
                  f"{report.seconds:.1f} s" + (f"; {len(saved)} {kinds} instances "
                                                f"saved in {save_dir}" if saved else ""))
    for reason, n in report.errors().items():
        console.print(f"{n} error: {reason}", markup=False)


def summary_line(report: Any) -> str:
    verdicts = report.plan.kind.verdicts
    counts = {v: sum(r.case.weight for r in report.results if r.verdict == v)
              for v in verdicts}
    return ", ".join(f"{n} {v}" for v, n in counts.items()) + \
        f" ({len(report.results)} verifications, {report.seconds:.1f} s)"
