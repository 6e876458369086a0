"""What `dpverify results` shows: the store as a table, JSON or CSV, each with the privacy
level and size of every result (`epsilon`, `lambda`, `parties`; `epsilon`, `alpha`, `n`)
and the `method` that decided it."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dpverify.console import print_json
from dpverify.console.batch import STYLE
from dpverify.console.numbers import fmt
from dpverify.console.tables import print_table, without_columns
from dpverify.sweeps.rows import PRIVACY_COLUMNS, methods, privacy_columns, to_csv

TABLE_COLUMNS = ("problem", "source", "kind", *PRIVACY_COLUMNS,
                 "method", "verdict", "status", "seconds", "version", "options",
                 "finished (UTC)", "reason")
NUMBER_COLUMNS = (*PRIVACY_COLUMNS, "seconds")
# The privacy columns come after the columns CSV readers already know (none moves).
RESULT_FIXED = ("problem", "source", "kind", "problem_verdict", "status", "version",
                "content_hash", "options", "finished_at", *PRIVACY_COLUMNS)


def _level(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return "[" + ", ".join(_level(v) for v in value) + "]"
    return fmt(value, 6) if isinstance(value, float) else str(value)


def results_table(rows: Sequence[Any]) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    for col in TABLE_COLUMNS:
        table.add_column(col, justify="right" if col in NUMBER_COLUMNS else "left")
    for row in rows:
        place = privacy_columns(row.result)
        table.add_row(row.problem, row.source, row.kind,
                      *[_level(place.get(c)) for c in PRIVACY_COLUMNS],
                      methods(row.result) or "-",
                      Text(row.verdict, style=STYLE.get(row.verdict, "")), row.status,
                      f"{row.seconds:.2f}", row.version, _options_id(row.options_key),
                      row.finished_at.replace("T", " ")[:19], row.reason)
    return table


def _options_id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:8]


def results_csv(rows: Sequence[Any]) -> str:
    """One CSV row per (problem, agent, accuracy); a problem without results gets one row.
    The privacy columns follow the problem's columns; then the result fields, the union
    over the rows (multi-party and count results differ; `method` always); lists and
    objects as JSON."""
    records: list[dict[str, Any]] = []
    keys: list[str] = []
    for row in rows:
        base = {"problem": row.problem, "source": row.source, "kind": row.kind,
                **privacy_columns(row.result), "problem_verdict": row.verdict,
                "status": row.status, "version": row.version,
                "content_hash": row.content_hash, "options": row.options_key,
                "finished_at": row.finished_at}
        results = row.result.get("results") or [{"reason": row.reason}]
        for r in results:
            record = dict(base)
            for k, v in r.items():
                if k not in keys:
                    keys.append(k)
                record[k] = v
            records.append(record)
    if "method" not in keys:
        keys.append("method")
    return to_csv(records, [*RESULT_FIXED, *keys])


def result_json(result: dict[str, Any]) -> dict[str, Any]:
    """A stored result object with its epsilon beside its header: `epsilons` (one per
    party, beside `lambdas`) or `epsilon` (beside `alpha`), unless it has them already."""
    place = privacy_columns(result)
    if not place:
        return result
    out: dict[str, Any] = {}
    for key, value in result.items():
        out[key] = value
        if key == "lambdas" and "epsilons" not in result:
            eps = place["epsilon"]
            out["epsilons"] = eps if isinstance(eps, list) else [eps] * len(value)
        elif key == "alpha" and "epsilon" not in result:
            out["epsilon"] = place["epsilon"]
    return out


def other_builds(rows: Sequence[Any], build: str) -> str:
    """A note when some rows were computed by another build of dpverify than `build`
    (fingerprint.build_id: the version and a hash of the source); "" when none were."""
    others = sum(1 for row in rows if row.version != build)
    if not others:
        return ""
    return (f"{others} of {len(rows)} stored result{'s' if len(rows) != 1 else ''} "
            f"{'were' if others != 1 else 'was'} computed by another build of dpverify "
            f"(column `version`; this is {build}): `batch` and `check` recompute "
            f"{'them' if others != 1 else 'it'} rather than serve the old code's numbers")


def print_results(out: Console, rows: Sequence[Any], fmt_name: str,
                  build: str | None = None) -> None:
    """The rows as `fmt_name`; a table ends with the count and, given this `build`, how
    many rows another build computed."""
    if fmt_name == "json":
        print_json([result_json(row.result) for row in rows])
    elif fmt_name == "csv":
        sys.stdout.write(results_csv(rows))
        sys.stdout.flush()
    else:
        if rows:
            table = results_table(rows)
            narrow = ["seconds", "version", "options", "finished (UTC)"]
            print_table(out, [table, without_columns(table, ["seconds"]),
                              without_columns(table, narrow),
                              without_columns(table, [*narrow, "lambda", "delta", "alpha", "n"])])
        n = len(rows)
        out.print(f"{n} stored result{'s' if n != 1 else ''}")
        stale = other_builds(rows, build) if build is not None else ""
        if stale:
            out.print(stale)

