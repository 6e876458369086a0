"""What `dpverify audit` shows: per protocol, the privacy levels claimed and achieved, each
agent's accuracy against the bounds, and (with --show-rules) the protocol's optimal
decision rules; per count mechanism, its privacy and its consumer's loss. `verify` shows
protocol files with the same tables."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dpverify.console import print_json
from dpverify.console.numbers import fmt
from dpverify.console.protocols import (
    VALUE_COLUMNS,
    VERDICT_COLUMNS,
    audit_table,
    protocol_table,
    rules_tables,
    verdict_text,
)
from dpverify.console.tables import natural_width, print_table
from dpverify.console.verify import VerifyView
from dpverify.console.views import result_json
from dpverify.verifiers.audit.result import MechanismResult

LONG_LEVEL = 30  # characters: a longer exact level is shown as about its float in a table


def _level(v: Any) -> str:
    """A level in a table: "p/q" (or "~" and its float when long), a float, or "inf"."""
    if isinstance(v, str) and len(v) > LONG_LEVEL and "/" in v:
        num, den = v.split("/")
        return f"~{float(Fraction(int(Decimal(num)), int(Decimal(den)))):.17g}"
    return v if isinstance(v, str) else fmt(v)


def _delta(v: Any) -> str:
    """An achieved delta in a table: "p/q" (about its float when long), a float, a
    bracket [lower, upper] as one number when both ends print alike, "-" when unknown."""
    if v is None:
        return "-"
    if isinstance(v, list):
        low, high = (_level(x) for x in v)
        return low if low == high else f"[{low}, {high}]"
    return _level(v)


def delta_privacy_table(result: Any) -> Table:
    """Per party of a protocol claiming (epsilon, delta): the claimed levels and the
    achieved delta at the claimed epsilon, which decides its privacy. The pure level a
    party achieves (delta = 0) is left to the JSON (`achieved_lambdas`): beside a delta
    claim it is huge or infinite and reads as a failure it is not."""
    h = result.header
    table = audit_table(f"{result.problem}: privacy at the claimed epsilons  "
                        f"({result.source})",
                        ["party", "claimed lambda", "claimed delta", "achieved delta",
                         "private"])
    for i, (claimed, delta, got, ok) in enumerate(zip(
            h["claimed_lambdas"], h["claimed_deltas"], h["achieved_deltas"],
            h["private_by_party"], strict=True)):
        shown = {True: Text("yes"), False: Text("NO", style="bold red"),
                 None: Text("undecided", style="bold yellow")}[ok]
        table.add_row(str(i + 1), _level(claimed), _level(delta), _delta(got), shown)
    return table


def privacy_table(result: Any) -> Table:
    """Per party: the level claimed, the level achieved, and whether it is met."""
    h = result.header
    if "claimed_deltas" in h:
        return delta_privacy_table(result)
    table = audit_table(f"{result.problem}: privacy  ({result.source})",
                        ["party", "claimed lambda", "achieved lambda", "achieved epsilon",
                         "private"])
    for i, (claimed, achieved, eps, ok) in enumerate(zip(
            h["claimed_lambdas"], h["achieved_lambdas"], h["achieved_epsilons"],
            h["private_by_party"], strict=True)):
        table.add_row(str(i + 1), _level(claimed), _level(achieved), _level(eps),
                      Text("yes" if ok else "NO", style="" if ok else "bold red"))
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
    if "claimed_deltas" in result.header:
        console.print("  (epsilon, delta): the bound is the envelope bound, the best accuracy "
                      "of any interactive protocol; RR(epsilon, delta) is the product of "
                      "RR(epsilon_i, delta_i), the best non-interactive protocol; advantage "
                      "= protocol - RR(epsilon, delta)")
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


# -- count mechanisms -------------------------------------------------------------------
def mechanism_table(result: Any) -> Table:
    h = result.header
    table = audit_table(f"{result.problem}  ({result.source})",
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
    table = audit_table(title if title is not None else
                        f"{result.problem}: consumer loss (minimised)",
                        ["agent", "model", *columns])
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
    order = ("optimal", "suboptimal", "not-private", "contradiction", "gap",
             "interaction-helps", "open", "error", "invalid")
    parts = [f"{counts.get(v, 0)} {v}" for v in order
             if v == "optimal" or counts.get(v, 0)]
    return f"{total} file{'s' if total != 1 else ''}: {', '.join(parts)} ({seconds:.2f} s)"


# -- privacy profiles ---------------------------------------------------------------------
def profile_table(profile: Any) -> Table:
    """Per epsilon of the grid, every party's achieved delta (the upper end of its exact
    bracket: what a claim must be at least to be proved met)."""
    data = profile.to_json()
    parties = data["parties"]
    table = audit_table(f"{profile.problem}: privacy profile delta(epsilon)  "
                        f"({profile.source})",
                        ["epsilon"] + [f"party {p['party']}" for p in parties])
    for j, eps in enumerate(data["epsilons"]):
        table.add_row(fmt(eps, 6), *(fmt(p["deltas"][j]) for p in parties))
    return table


# -- the listener -------------------------------------------------------------------------


class AuditView(VerifyView):
    """Prints what `audit_paths` reports: each file's tables as it finishes (unless
    `as_json` or `quiet`), and on a terminal a spinner while one is audited (VerifyView's).
    Use as a context manager so the spinner is always taken down."""

    verb = "auditing"
    profiles: dict[str, Any]  # source -> PrivacyProfile (audit --profile)

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.profiles = {}

    def finished(self, file_result: Any) -> None:
        result = self._to_print(file_result)
        if result is None:
            return
        if result.results and isinstance(result.results[0], MechanismResult):
            print_mechanism(self.out, result)
        else:  # a protocol's results (AuditResult), or none: it was refused
            print_protocol(self.out, result, show_rules=self.show_rules)

    def report(self, report: Any) -> None:
        self.__exit__()
        if self.as_json:
            files = []
            for f in report.files:
                obj = result_json(f, rules=self.show_rules)
                if f.source in self.profiles:
                    obj["privacy_profile"] = self.profiles[f.source].to_json()
                files.append(obj)
            print_json(files)
            return
        if not self.quiet:
            for profile in self.profiles.values():
                print_table(self.out, profile_table(profile))
                self.out.print()
        self.out.print(summary(report.counts(), len(report.files), report.seconds))
