"""What `verify` shows for a multi-party problem with delta > 0 (docs/theory.md,
"Approximate privacy"): per agent and accuracy the envelope bound over every interactive
protocol, the best non-interactive value (RR(epsilon, delta)), the best interactive
protocol found (a witness file), the verdict and the method; and what `derive` shows for a
mechanism file that claims delta > 0."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dpverify.console import VERDICT_STYLE
from dpverify.console.numbers import fmt, fmt_gap, proof_cell
from dpverify.console.tables import print_table
from dpverify.spec.numbers import rational_text

TEXT_COLUMNS = ("agent", "accuracy", "verdict", "proof", "method")
RR_DELTA = "RR(epsilon, delta)"  # the column of the best non-interactive value


def delta_text(deltas: Any) -> str:
    """`delta = 1/10` (one level for every party) or `delta = [1/10, 0]`."""
    values = [str(d) for d in deltas or ()]
    if not values:
        return ""
    return f"delta = {values[0]}" if len(set(values)) == 1 else \
        f"delta = [{', '.join(values)}]"


def approximate_table(result: Any, *, seconds: bool = True, gap_digits: int = 2,
                      method: bool = True, show_proof: bool = False, **_: Any) -> Table:
    """One problem's results (`seconds`, `gap_digits` and `method` as in
    console/verify.py's `problem_table`, for narrow terminals; `show_proof`: the bound's
    certificate, --certify): the bound over interactive protocols, RR(epsilon, delta) (the
    best non-interactive protocol), the best protocol found, and `advantage`, what
    interaction is shown to gain (best found minus RR; the bound minus RR is only room)."""
    title = f"{result.problem}  ({result.source})  {delta_text(result.header.get('delta'))}"
    columns = ["agent", "accuracy", "bound", RR_DELTA, "best found", "advantage",
               "verdict"] + ["proof"] * show_proof + ["method"] * method + \
        ["seconds"] * seconds
    table = Table(title=title.rstrip(), title_justify="left", show_edge=False, pad_edge=False)
    for col in columns:
        table.add_column(col, justify="left" if col in TEXT_COLUMNS else "right")
    for r in result.results:
        row: list[str | Text] = [
            r.agent, r.accuracy, fmt(r.relaxed_optimum), fmt(r.rr_value), fmt(r.best_value),
            fmt_gap(r.advantage, gap_digits),
            Text(r.verdict.value, style=VERDICT_STYLE.get(r.verdict.value, ""))]
        row += [proof_cell(r.proof)] * show_proof
        row += [r.method] * method
        row += [f"{r.seconds:.3f}"] * seconds
        table.add_row(*row)
    return table


# -- derive with delta (verifiers/count/approximate.py) ----------------------------------
def _rational(v: Fraction) -> str:
    text = rational_text(v)
    return text if len(text) <= 24 else f"{float(v):.12g}"


def delta_derivation_json(spec: Any, d: Any) -> dict[str, Any]:
    """The JSON object of `dpverify derive --json` for a mechanism claiming delta > 0."""
    return {
        "mechanism": spec.name, "source": spec.source, "n": spec.n,
        "alpha": rational_text(spec.alpha_exact) if spec.alpha_exact is not None
        else spec.alpha, "delta": rational_text(d.delta),
        "arithmetic": "exact" if d.exact else f"exact on the floats' values (tol {d.tol:g})",
        "achieved_delta": (rational_text(d.achieved[0]) if d.achieved[0] == d.achieved[1]
                           else [rational_text(v) for v in d.achieved]),
        "private": d.private, "serves_pairs": d.serves, "derivable": d.derivable,
        "pairs": [{"answers": [p.i, p.j], "serves": p.serves, "type_one_error": str(p.a),
                   "type_two_error": str(p.f), "rr_type_two_error": str(p.f_rr)}
                  for p in d.pairs],
        "covers": "every consumer" if spec.n <= 1 else "consumers of two adjacent answers",
    }


def print_delta_derivation(console: Console, spec: Any, d: Any) -> None:
    level = (f"alpha = {_rational(spec.alpha_exact)}" if spec.alpha_exact is not None
             else f"epsilon = {_rational(spec.epsilon_exact)}")
    console.print(f"{spec.name}  ({spec.source})")
    if spec.description:
        console.print(f"  {spec.description}")
    console.print(f"  n = {spec.n}, {level}, delta = {_rational(d.delta)}: approximate "
                  "privacy (docs/theory.md)")
    console.print()
    got = d.achieved
    shown = _rational(got[0]) if got[0] == got[1] else \
        f"[{float(got[0]):.12g}, {float(got[1]):.12g}]"
    table = Table(show_edge=False, pad_edge=False)
    for col in ("test", "result", "detail"):
        table.add_column(col)
    table.add_row("(epsilon, delta)-DP", _yes(d.private), f"achieved delta {shown}")
    for p in d.pairs:
        table.add_row(f"answers {p.i}, {p.j} against RR(epsilon, delta)", _yes(p.serves),
                      f"type II error {float(p.f):.12g} at type I {float(p.a):.12g} "
                      f"(RR: {float(p.f_rr):.12g})")
    print_table(console, table)
    console.print()
    scope = "every consumer" if spec.n <= 1 else \
        "every consumer of two adjacent answers (side information {i, i + 1})"
    if d.derivable is True:
        console.print(f"Serves {scope}: no (epsilon, delta)-DP mechanism does better for "
                      "them." + ("" if spec.n <= 1 else " Consumers of more answers are not "
                                 "decided."))
    elif d.derivable is False:
        why = "it is not (epsilon, delta)-DP" if d.private is False else \
            "some consumer of two adjacent answers does better with RR(epsilon, delta)"
        console.print(f"Does not serve {scope}: {why}.")
    else:
        console.print("Undecided: the rational brackets of e^epsilon straddle a claim; give "
                      "`alpha` as an exact rational.")


def _yes(value: bool | None) -> Text:
    return {True: Text("yes", style="green"), False: Text("NO", style="bold red"),
            None: Text("undecided", style="bold yellow")}[value]
