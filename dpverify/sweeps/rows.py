"""Flat rows: one per point (or stored problem), agent and accuracy, for CSV, JSON and
plots. The columns are docs/format.md's "Sweep rows"; `dpverify results` shares the
privacy columns (`epsilon`, `lambda`, `parties`; `epsilon`, `alpha`, `n`).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MULTIPARTY_COLUMNS = ("problem", "kind", "epsilon", "lambda", "parties", "agent", "accuracy",
                      "relaxed_optimum", "rr_value", "closed_form", "gap", "verdict",
                      "method", "seconds", "reason", "source")
COUNT_COLUMNS = ("problem", "kind", "epsilon", "alpha", "n", "agent", "accuracy",
                 "mechanism_optimum", "geometric_value", "gap", "hypothesis", "verdict",
                 "method", "seconds", "reason", "source")
# delta > 0 (docs/theory.md, "Approximate privacy"): the best interactive protocol found
# and its witness file beside the bound and RR(epsilon, delta)'s value
APPROXIMATE_COLUMNS = ("problem", "kind", "epsilon", "lambda", "delta", "parties", "agent",
                       "accuracy", "relaxed_optimum", "rr_value", "best_value", "gap",
                       "verdict", "method", "witness", "seconds", "reason", "source")
PRIVACY_COLUMNS = ("epsilon", "lambda", "delta", "parties", "n", "alpha")


def columns_for(kind: str, rows: Iterable[Mapping[str, Any]] = ()) -> tuple[str, ...]:
    """The columns of a sweep's rows: a count's, a multi-party problem's, or those of
    approximate privacy when some row has a `delta` (a result with delta > 0)."""
    if kind == "count":
        return COUNT_COLUMNS
    if any(row.get("delta") is not None for row in rows):
        return APPROXIMATE_COLUMNS
    return MULTIPARTY_COLUMNS


def delta_value(deltas: Any) -> Any:
    """A result's `delta` list ("p/q" strings, one per party) as one float when every
    party has the same, else a list of floats."""
    from fractions import Fraction

    if not isinstance(deltas, list):
        return deltas
    return _one([float(Fraction(str(d))) for d in deltas])


def clean_float(x: float) -> float:
    """A derived float (epsilon = log lambda) at 15 significant digits, so that a level
    written as 0.1 reads back as 0.1, not 0.10000000000000009."""
    return float(f"{x:.15g}") if math.isfinite(x) else x


def _one(values: Sequence[Any]) -> Any:
    """One value when all are equal (every party at one level), else the list."""
    if values and all(v == values[0] for v in values):
        return values[0]
    return list(values)


def privacy_columns(result: Mapping[str, Any]) -> dict[str, Any]:
    """The privacy level and size of a result object, from its header: `epsilon` (derived
    from `lambdas` or `alpha`), `lambda`, `parties`; or `epsilon`, `alpha`, `n`. A level
    that differs between parties is a list. Empty for a result without a header."""
    if isinstance(result.get("lambdas"), list):
        lambdas = [float(v) for v in result["lambdas"]]
        epsilons = [clean_float(math.log(v)) if v > 0 else None for v in lambdas]
        out = {"epsilon": _one(epsilons), "lambda": _one(lambdas),
               "parties": result.get("parties")}
        if isinstance(result.get("delta"), list):  # approximate privacy
            out["delta"] = delta_value(result["delta"])
        return out
    if "alpha" in result and result.get("alpha") is not None:
        alpha = float(result["alpha"])
        epsilon = clean_float(-math.log(alpha)) if alpha > 0 else None  # alpha 0: no privacy
        return {"epsilon": epsilon, "alpha": alpha, "n": result.get("n")}
    return {}


def spec_place(spec: Any) -> dict[str, Any]:
    """The privacy columns of a problem before it is run (as its result's header would
    give them): `lambdas` and `parties` of a multi-party spec, `alpha` and `n` of a count
    spec."""
    from dpverify.spec.count_model import CountSpec
    from dpverify.spec.model import MultipartySpec

    if isinstance(spec, MultipartySpec | CountSpec):
        return privacy_columns(spec.header())
    return {}


def methods(result: Mapping[str, Any]) -> str:
    """The methods that decided a result object's verdicts, in order, comma-separated."""
    seen: list[str] = []
    for r in result.get("results") or ():
        method = r.get("method")
        if method and method not in seen:
            seen.append(str(method))
    return ",".join(seen)


def result_rows(result: Mapping[str, Any], *, coords: Mapping[str, Any] | None = None,
                closed_forms: Mapping[str, float] | None = None,
                source: str | None = None,
                place: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per agent and accuracy of a result object (one row with the `reason` when
    it has no results). `place` (the privacy columns of the problem that was run) stands
    in for a header the result lacks (a timeout has none); `coords` (a sweep point's exact
    place) override the derived privacy columns; `closed_forms` give the `closed_form`
    column by agent."""
    base: dict[str, Any] = {"problem": result.get("problem"), "kind": result.get("kind")}
    base.update(place or {})
    base.update(privacy_columns(result))
    for name, value in (coords or {}).items():
        base[name] = value if name == "parties" else float(_fraction(value))
    base["source"] = source if source is not None else result.get("source")
    results = result.get("results") or []
    if not results:
        return [{**base, "verdict": result.get("verdict", "error"),
                 "reason": result.get("reason", "")}]
    rows = []
    for r in results:
        row = dict(base)
        row.update({k: v for k, v in r.items() if k not in ("rule",)})
        if "delta" in r:  # one float (a list when the parties differ), or the point's
            row["delta"] = base["delta"] if "delta" in (coords or {}) else \
                delta_value(r["delta"])
        row.setdefault("method", "")
        if closed_forms and r.get("agent") in closed_forms:
            row["closed_form"] = closed_forms[r["agent"]]
        rows.append(row)
    return rows


def _fraction(value: Any) -> Any:
    from fractions import Fraction

    return Fraction(value) if isinstance(value, str) else value


def to_csv(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """CSV text with these columns (others dropped); lists and objects as JSON, None as
    an empty field."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, list | dict) else v
                         for k, v in row.items()})
    return buf.getvalue()


def to_json_rows(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> list[dict]:
    """The rows as JSON objects with exactly these keys, in this order (None for a
    missing value)."""
    return [{c: row.get(c) for c in columns} for row in rows]
