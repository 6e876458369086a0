"""What `dpverify falsify` shows: progress on a terminal, then per agent and accuracy the
best protocol found against the bound."""

from __future__ import annotations

from typing import Any, Self

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from dpverify.console import VERDICT_STYLE
from dpverify.console.numbers import fmt
from dpverify.console.tables import print_table


class SearchProgress:
    """A progress bar on stderr while protocols are evaluated (a terminal only)."""

    def __init__(self, err: Console, *, enabled: bool, label: str = "searching protocols"
                 ) -> None:
        self.err = err
        self.label = label
        self.enabled = enabled and err.is_terminal
        self._progress: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._progress is None:
            self._progress = Progress(TextColumn(self.label), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      console=self.err, transient=True)
            self._progress.start()
            self._task = self._progress.add_task("search", total=total)
        self._progress.update(self._task, completed=done, total=total)


def campaign_table(campaign: Any) -> Table:
    table = Table(title=f"{campaign.problem}  ({campaign.source})", title_justify="left",
                  show_edge=False, pad_edge=False)
    columns = ("agent", "accuracy", "protocols", "best value", "bound", "ratio",
               "best not from RR", "found by", "verdict")
    for col in columns:
        table.add_column(col, justify="left" if col in ("agent", "accuracy", "found by",
                                                        "verdict") else "right")
    for r in campaign.results:
        verdict = "counterexample" if r.counterexample else r.verdict.value
        table.add_row(r.agent, r.accuracy, str(r.protocols), fmt(r.best_value), fmt(r.bound),
                      fmt(r.ratio, 9), fmt(r.best_searched), r.best_origin,
                      Text(verdict, style=VERDICT_STYLE.get(r.verdict.value, "")))
    return table


def print_campaign(console: Console, campaign: Any) -> None:
    print_table(console, campaign_table(campaign))
    for r in campaign.results:
        if r.reason:
            console.print(f"  {r.agent} {r.accuracy}: {r.reason}")
    for path in campaign.saved:
        console.print(f"saved the best protocol to {path}")
    found = campaign.counterexamples
    n = sum(r.protocols for r in campaign.results)
    if found:
        console.print(f"COUNTEREXAMPLE: {len(found)} protocol(s) beat the bound, written to "
                      f"{', '.join(found)}; audit them with `dpverify audit`")
    else:
        console.print(f"no counterexample: {n:,} protocol evaluations, none above the bound "
                      f"({campaign.seconds:.2f} s)")
