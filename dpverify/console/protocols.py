"""Protocols on the command line, in `audit` and `verify` alike: the accuracy table of an
audited protocol, its decision rules over transcripts, and its JSON with `--show-rules`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from rich.table import Table
from rich.text import Text

from dpverify.console import VERDICT_STYLE
from dpverify.console.numbers import fmt, fmt_gap, json_output
from dpverify.console.rules import rule_label

MAX_RULE_ROWS = 64
TEXT_COLUMNS = ("agent", "accuracy", "model", "verdict", "method", "party", "private",
                "transcript")


def audit_table(title: str, columns: Sequence[str]) -> Table:
    """A table of `audit`: text columns left, numbers right."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for col in columns:
        table.add_column(col, justify="left" if col in TEXT_COLUMNS else "right")
    return table


def verdict_text(v: str) -> Text:
    return Text(v, style=VERDICT_STYLE.get(v, ""))


VALUE_COLUMNS = ("protocol", "relaxed optimum", "RR value")
VERDICT_COLUMNS = ("at achieved levels", "efficiency", "gap", "verdict")
# delta > 0: the envelope bound, RR(epsilon, delta) and what the protocol gains over it
# (protocol minus RR). A column of a pure audit -> the column a delta audit shows in its
# place (None: dropped).
DELTA_COLUMN = {"relaxed optimum": "bound", "RR value": "RR(epsilon, delta)",
                "at achieved levels": "bound at achieved deltas", "efficiency": None,
                "gap": "advantage"}


def approximate(result: Any) -> bool:
    """Whether an audited protocol claims delta > 0 (its header has the claimed deltas)."""
    return "claimed_deltas" in result.header


def delta_columns(columns: Sequence[str]) -> list[str]:
    """A pure audit's columns as a delta audit shows them (DELTA_COLUMN)."""
    out = []
    for c in columns:
        shown = DELTA_COLUMN.get(c, c)
        if shown is not None and shown not in out:
            out.append(shown)
    return out


def protocol_table(result: Any, *, seconds: bool = True, gap_digits: int = 2,
                   columns: Sequence[str] = VALUE_COLUMNS[:2] + VERDICT_COLUMNS[:1]
                   + VALUE_COLUMNS[2:] + VERDICT_COLUMNS[1:], title: str | None = None
                   ) -> Table:
    """Per agent and accuracy: the protocol's value against the bounds (the `columns`
    named, after agent and accuracy; with delta > 0 as `delta_columns` names them: the
    envelope bound, RR(epsilon, delta) and the advantage, protocol minus RR)."""
    if approximate(result):
        columns = delta_columns(columns)
    table = audit_table(title if title is not None else
                        f"{result.problem}: accuracy ({result.header.get('transcripts')} "
                        "transcripts)", ["agent", "accuracy", *columns] + ["seconds"] * seconds)
    for r in result.results:
        cells: dict[str, str | Text] = {
            "protocol": fmt(r.protocol_value), "relaxed optimum": fmt(r.relaxed_optimum),
            "at achieved levels": fmt(r.relaxed_optimum_achieved),
            "RR value": fmt(r.rr_value), "efficiency": fmt(r.efficiency, 6),
            "gap": fmt_gap(r.gap, gap_digits), "verdict": verdict_text(r.verdict.value),
            "bound": fmt(r.relaxed_optimum), "RR(epsilon, delta)": fmt(r.rr_value),
            "bound at achieved deltas": fmt(r.relaxed_optimum_achieved),
            "advantage": fmt_gap(getattr(r, "advantage", None), gap_digits)}
        table.add_row(r.agent, r.accuracy, *(cells[c] for c in columns),
                      *([f"{r.seconds:.3f}"] if seconds else []))
    return table


def _decision(outputs: Sequence[Any], row: Any) -> str:
    return rule_label(outputs, row)  # one way to show a rule's row


def rules_tables(result: Any) -> list[Table]:
    """The protocol's optimal decision rules: transcript -> decision (per own input symbol
    for a party)."""
    tables = []
    for r in result.results:
        if r.rule is None:
            continue
        rule = np.asarray(r.rule)
        party = rule.ndim == 3
        columns = ([f"decision if own input {a}" for a in range(rule.shape[0])] if party
                   else ["decision"])
        t = audit_table(f"{result.problem}: decision rule of {r.agent} ({r.accuracy})",
                        ["transcript", *columns])
        rows = len(r.transcripts)
        for tau in range(min(rows, MAX_RULE_ROWS)):
            cells = ([_decision(r.outputs, rule[a][tau]) for a in range(rule.shape[0])]
                     if party else [_decision(r.outputs, rule[tau])])
            t.add_row(r.transcripts[tau], *cells)
        if rows > MAX_RULE_ROWS:
            t.add_row(f"... {rows - MAX_RULE_ROWS} more rows", *[""] * len(columns))
        tables.append(t)
    return tables


def protocol_rules_json(agent_result: Any) -> dict[str, Any] | None:
    """`{"outputs": [...], "transcripts": [...], "decision": ...}` with `decision[t][y]`
    (observer) or `decision[a][t][y]` (a party whose own input is a)."""
    if getattr(agent_result, "rule", None) is None:
        return None
    return {"outputs": [json_output(v) for v in agent_result.outputs],
            "transcripts": list(agent_result.transcripts),
            "decision": np.asarray(agent_result.rule, dtype=float).tolist()}
