"""What `verify` shows for a multi-party problem with delta > 0 (docs/theory.md,
"Approximate privacy"): per agent and accuracy the four-ray bound over every interactive
protocol, the best non-interactive value (RR(epsilon, delta)), the best interactive
protocol found (a witness file), the verdict and the method."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from dpverify.console import VERDICT_STYLE
from dpverify.console.numbers import fmt, fmt_gap

TEXT_COLUMNS = ("agent", "accuracy", "verdict", "method")


def delta_text(deltas: Any) -> str:
    """`delta = 1/10` (one level for every party) or `delta = [1/10, 0]`."""
    values = [str(d) for d in deltas or ()]
    if not values:
        return ""
    return f"delta = {values[0]}" if len(set(values)) == 1 else \
        f"delta = [{', '.join(values)}]"


def approximate_table(result: Any, *, seconds: bool = True, gap_digits: int = 2,
                      method: bool = True, **_: Any) -> Table:
    """One problem's results (`seconds`, `gap_digits` and `method` as in
    console/verify.py's `problem_table`, for narrow terminals). `gap` is the bound minus
    the non-interactive value: how much room interaction could have."""
    title = f"{result.problem}  ({result.source})  {delta_text(result.header.get('delta'))}"
    columns = ["agent", "accuracy", "bound", "non-interactive", "best found", "gap",
               "verdict"] + ["method"] * method + ["seconds"] * seconds
    table = Table(title=title.rstrip(), title_justify="left", show_edge=False, pad_edge=False)
    for col in columns:
        table.add_column(col, justify="left" if col in TEXT_COLUMNS else "right")
    for r in result.results:
        row: list[str | Text] = [
            r.agent, r.accuracy, fmt(r.relaxed_optimum), fmt(r.rr_value), fmt(r.best_value),
            fmt_gap(r.gap, gap_digits),
            Text(r.verdict.value, style=VERDICT_STYLE.get(r.verdict.value, ""))]
        row += [r.method] * method
        row += [f"{r.seconds:.3f}"] * seconds
        table.add_row(*row)
    return table
