"""One view per result type (verifiers/result.py, `Result`): the table of a problem's
results, the lines under it, the decision rules and their JSON.

`view_of(problem_result)` picks the view by the problem's kind and setting
(spec/setting.py), through one table (`VIEWS`); a problem without a view of its own is
shown through the `Result` protocol alone (agent, accuracy, optimum, verdict, method,
seconds). A new kind or setting registers its view in `VIEWS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from rich.table import Table
from rich.text import Text

from dpverify.console import VERDICT_STYLE
from dpverify.console.numbers import fmt, fmt_gap, json_output, proof_cell
from dpverify.console.rules import rule_label
from dpverify.console.tables import compact
from dpverify.spec.setting import Setting

MAX_RULE_ROWS = 64
TEXT_COLUMNS = ("agent", "model", "accuracy", "hypothesis", "verdict", "proof")


def plain_table(title: str, columns: Sequence[str]) -> Table:
    """Text columns left, numbers right."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for col in columns:
        table.add_column(col, justify="left" if col in TEXT_COLUMNS else "right")
    return table


def verdict_cell(v: str) -> Text:
    return Text(v, style=VERDICT_STYLE.get(v, ""))


def seconds_cell(r: Any) -> str:
    return f"{r.seconds:.3f}"


class ResultView:
    """Any result, through the `Result` protocol: agent, accuracy, the verified optimum,
    verdict, method and seconds; its reason under the table; no rules."""

    method_column = True  # whether the table has a `method` column

    def columns(self, results: Sequence[Any], *, show_proof: bool,
                show_grid: bool) -> list[str]:
        return ["agent", "accuracy", "optimum", "verdict", "method"]

    def cells(self, r: Any, gap_digits: int) -> dict[str, Any]:
        return {"agent": r.agent, "accuracy": r.accuracy, "optimum": fmt(r.optimum),
                "verdict": verdict_cell(str(r.verdict)), "method": str(r.method)}

    def table(self, result: Any, *, seconds: bool = True, gap_digits: int = 2,
              method: bool = True, show_proof: bool = False,
              show_grid: bool = False) -> Table:
        """One problem's results; `seconds`, `gap_digits` and `method` let a narrow
        terminal drop the least useful columns and digits first."""
        columns = [c for c in self.columns(result.results, show_proof=show_proof,
                                           show_grid=show_grid)
                   if method or c != "method"]
        table = plain_table(f"{result.problem}  ({result.source})",
                            columns + ["seconds"] * seconds)
        for r in result.results:
            cells = self.cells(r, gap_digits)
            table.add_row(*(cells[c] for c in columns), *([seconds_cell(r)] if seconds else []))
        return table

    def notes(self, r: Any) -> list[str]:
        """The lines under the table for one result."""
        return [r.reason] if r.reason else []

    def rules(self, result: Any, parties: int) -> list[Table]:
        return []

    def rule_json(self, r: Any) -> dict[str, Any] | None:
        return None


class BitsView(ResultView):
    """A multi-party result on bits (AgentResult): the relaxed optimum against RR, the
    interior optimum (--grid, --samples), the proof (--certify); rules over the released
    bits."""

    def columns(self, results: Sequence[Any], *, show_proof: bool,
                show_grid: bool) -> list[str]:
        return (["agent", "accuracy", "relaxed optimum", "RR value", *self.more(results),
                 "gap"] + ["interior optimum"] * show_grid + ["verdict", "method"]
                + ["proof"] * show_proof)

    def more(self, results: Sequence[Any]) -> list[str]:
        return []

    def cells(self, r: Any, gap_digits: int) -> dict[str, Any]:
        return {"agent": r.agent, "accuracy": r.accuracy,
                "relaxed optimum": fmt(r.bound), "RR value": fmt(r.rr_value),
                "gap": fmt_gap(r.gap, gap_digits),
                "interior optimum": fmt(None if r.interior is None else r.interior.optimum),
                "verdict": verdict_cell(r.verdict.value), "method": str(r.method),
                "proof": proof_cell(r.proof)}

    def rules(self, result: Any, parties: int) -> list[Table]:
        """Per agent and accuracy: released bits -> decision (per own bit for a party)."""
        tables = []
        for r in result.results:
            if r.rule is None:
                continue
            party = r.rule.ndim == 3
            columns = (["decision if own bit 0", "decision if own bit 1"] if party
                       else ["decision"])
            t = plain_table(f"{result.problem}: decision rule of {r.agent} ({r.accuracy})",
                            ["released bits", *columns])
            rows = 1 << parties
            for tau in range(min(rows, MAX_RULE_ROWS)):
                bits = format(tau, f"0{parties}b")
                if party:
                    t.add_row(bits, rule_label(r.outputs, r.rule[0][tau]),
                              rule_label(r.outputs, r.rule[1][tau]))
                else:
                    t.add_row(bits, rule_label(r.outputs, r.rule[tau]))
            if rows > MAX_RULE_ROWS:
                t.add_row(f"... {rows - MAX_RULE_ROWS} more rows", *[""] * len(columns))
            tables.append(t)
        return tables

    def rule_json(self, r: Any) -> dict[str, Any] | None:
        """`{"outputs": [...], "decision": [[...]]}`: `decision[tau][y]` (observer) or
        `decision[b][tau][y]` (party with own bit b), as in a certificate's
        `lower.decision`; None when the result has no rule."""
        if r.rule is None:
            return None
        return {"outputs": [json_output(v) for v in r.outputs],
                "decision": np.asarray(r.rule, dtype=float).tolist()}


class SymbolView(BitsView):
    """More than two symbols (SymbolResult): the best protocol found beside RR and the
    bound (docs/theory.md, section 6)."""

    def more(self, results: Sequence[Any]) -> list[str]:
        return ["best found"] if any(r.best_value is not None for r in results) else []

    def cells(self, r: Any, gap_digits: int) -> dict[str, Any]:
        return super().cells(r, gap_digits) | {"best found": fmt(r.best_value)}


COUNT_COLUMNS = ("agent", "model", "mechanism optimum", "geometric value", "gap",
                 "hypothesis", "verdict")


class CountView(ResultView):
    """A count problem (CountResult): the optimal mechanism's loss against the geometric
    mechanism's; its note under the table."""

    method_column = False

    def columns(self, results: Sequence[Any], *, show_proof: bool,
                show_grid: bool) -> list[str]:
        return list(COUNT_COLUMNS)

    def cells(self, r: Any, gap_digits: int) -> dict[str, Any]:
        return {"agent": r.agent, "model": r.accuracy,
                "mechanism optimum": fmt(r.mechanism_optimum),
                "geometric value": fmt(r.geometric_value), "gap": fmt_gap(r.gap, gap_digits),
                "hypothesis": r.hypothesis, "verdict": verdict_cell(r.verdict.value)}

    def notes(self, r: Any) -> list[str]:
        return super().notes(r) + ([r.note] if r.note else [])

    def rules(self, result: Any, parties: int) -> list[Table]:
        """The geometric mechanism's best post-processing (G's release k -> the report,
        GS section 4.2) and the optimal mechanism (true answer i -> release r), one row
        per answer; a matrix too large to read is left to --json."""
        tables = []
        for r in result.results:
            if r.post_processing is not None:
                T = np.asarray(r.post_processing, dtype=float)
                t = plain_table(f"{result.problem}: the best post-processing of the "
                                f"geometric mechanism ({r.accuracy}): G's release -> report",
                                ["release k", "report"])
                answers = tuple(range(T.shape[1]))
                for k in range(min(len(T), MAX_RULE_ROWS)):
                    t.add_row(str(k), rule_label(answers, T[k]))
                if len(T) > MAX_RULE_ROWS:
                    t.add_row(f"... {len(T) - MAX_RULE_ROWS} more rows", "")
                tables.append(t)
            if r.mechanism is not None:
                tables.append(mechanism_matrix_table(
                    np.asarray(r.mechanism, dtype=float),
                    f"{result.problem}: an optimal mechanism ({r.accuracy}): "
                    "P(release r | true answer i)"))
        return tables

    def rule_json(self, r: Any) -> dict[str, Any] | None:
        """`{"post_processing": T[k][r], "mechanism": x[i][r]}` (each present when
        computed): the geometric mechanism's best post-processing and an optimal
        mechanism; None when neither is."""
        out = {name: np.asarray(m, dtype=float).tolist()
               for name, m in (("post_processing", r.post_processing),
                               ("mechanism", r.mechanism)) if m is not None}
        return out or None


MAX_MATRIX_SIDE = 16  # a larger mechanism is not printed as a matrix (--json has it)


def mechanism_matrix_table(x: np.ndarray, title: str) -> Table:
    """A count mechanism x[i, r] as a table (3 significant digits, float noise as 0,
    columns separated by the rule alone), or one row saying it is too large to print."""
    if len(x) > MAX_MATRIX_SIDE:
        t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False,
                  show_header=False)
        t.add_column("note", justify="left")
        t.add_row(f"{len(x)} x {len(x)}: too large to print here; --json has it "
                  "(the `rule` field's `mechanism`)")
        return t
    t = plain_table(title, ["i \\ r", *(str(c) for c in range(x.shape[1]))])
    for i, row in enumerate(x):
        t.add_row(str(i), *("0" if abs(v) < 1e-12 else f"{v:.3g}" for v in row))
    return compact(t)


class ProtocolView(ResultView):
    """An audited protocol (AuditResult): its accuracy against the bounds
    (console/protocols.py); rules over transcripts."""

    method_column = False

    def table(self, result: Any, *, seconds: bool = True, gap_digits: int = 2,
              method: bool = True, show_proof: bool = False,
              show_grid: bool = False) -> Table:
        from dpverify.console.protocols import protocol_table  # each view's module when used

        table = protocol_table(result, seconds=seconds, gap_digits=gap_digits)
        table.title = f"{result.problem}  ({result.source})"
        return table

    def rules(self, result: Any, parties: int) -> list[Table]:
        from dpverify.console.protocols import rules_tables

        return rules_tables(result)

    def rule_json(self, r: Any) -> dict[str, Any] | None:
        from dpverify.console.protocols import protocol_rules_json

        return protocol_rules_json(r)


class MechanismView(ResultView):
    """An audited count mechanism's consumer (MechanismResult)."""

    method_column = False

    def columns(self, results: Sequence[Any], *, show_proof: bool,
                show_grid: bool) -> list[str]:
        return ["agent", "model", "mechanism loss", "optimal loss", "verdict"]

    def cells(self, r: Any, gap_digits: int) -> dict[str, Any]:
        return {"agent": r.agent, "model": r.accuracy,
                "mechanism loss": fmt(r.mechanism_loss), "optimal loss": fmt(r.optimal_loss),
                "verdict": verdict_cell(r.verdict.value)}


class ApproximateView(ResultView):
    """delta > 0 (ApproxResult): the envelope bound, RR(epsilon, delta) and the best
    interactive protocol found (console/approximate.py, `approximate_table`)."""

    def table(self, result: Any, *, seconds: bool = True, gap_digits: int = 2,
              method: bool = True, show_proof: bool = False,
              show_grid: bool = False) -> Table:
        from dpverify.console.approximate import approximate_table

        return approximate_table(result, seconds=seconds, gap_digits=gap_digits,
                                 method=method, show_proof=show_proof)


ANY = ResultView()
BITS, SYMBOLS, COUNT = BitsView(), SymbolView(), CountView()
PROTOCOL, MECHANISM, APPROXIMATE = ProtocolView(), MechanismView(), ApproximateView()
# The view of every (kind, setting) (spec/setting.py; tests/test_codebase.py checks that
# it covers every key): delta > 0 with more than two symbols is refused, so it has no
# results to show.
VIEWS: dict[tuple[str, Setting], ResultView] = {
    ("multiparty", Setting.BITS): BITS,
    ("multiparty", Setting.SYMBOLS): SYMBOLS,
    ("multiparty", Setting.DELTA): APPROXIMATE,
    ("multiparty", Setting.DELTA_SYMBOLS): ANY,
    ("count", Setting.PURE): COUNT,
    ("count", Setting.DELTA): COUNT,
    ("protocol", Setting.BITS): PROTOCOL,
    ("protocol", Setting.SYMBOLS): PROTOCOL,
    ("protocol", Setting.DELTA): PROTOCOL,
    ("protocol", Setting.DELTA_SYMBOLS): ANY,
    ("mechanism", Setting.PURE): MECHANISM,
    ("mechanism", Setting.DELTA): MECHANISM,
}


def view_of(result: Any) -> ResultView:
    """The view of a problem's results, by its kind and setting; a problem without
    results (or without a setting: no spec loaded) gets `ANY`, which shows any result
    through the `Result` protocol alone."""
    if not result.results or result.setting is None:
        return ANY
    return VIEWS.get((str(result.kind), result.setting), ANY)


def result_json(file_result: Any, *, rules: bool = False) -> dict[str, Any]:
    """spec.md's result object of one file; with `rules`, a `rule` field per result that
    has a rule (its view's `rule_json`)."""
    out = file_result.to_json()
    if rules and file_result.result.results:
        view = view_of(file_result.result)
        for obj, r in zip(out["results"], file_result.result.results, strict=True):
            rule = view.rule_json(r)
            if rule is not None:
                obj["rule"] = rule
    return out
