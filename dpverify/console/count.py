"""What `dpverify derive` and `dpverify release` print: rich tables and JSON objects.

(Count problems in `dpverify verify` go through console/verify.py's problem table.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from dpverify.console.approximate import delta_derivation_json, print_delta_derivation
from dpverify.console.numbers import json_number, show_number
from dpverify.console.tables import print_table
from dpverify.spec.setting import Setting

MAX_MATRIX_SIDE = 16  # larger matrices are summarised; --json has them whole
MAX_LISTED = 20  # violations listed in a table


def json_matrix(a: np.ndarray) -> list[list[Any]]:
    return [[json_number(v) for v in row] for row in np.asarray(a)]


def _ok(flag: bool | None, yes: str = "yes", no: str = "no") -> Text:
    if flag is None:
        return Text("disagree", style="bold yellow")
    return Text(yes, style="green") if flag else Text(no, style="bold red")


def _pairs(pairs) -> str:
    shown = ", ".join(f"({i}, {j})" for i, j in pairs[:MAX_LISTED])
    more = len(pairs) - MAX_LISTED
    return shown + (f" ... and {more} more" if more > 0 else "") if pairs else "-"


def matrix_table(a: np.ndarray, title: str = "", row_label: str = "i \\ r") -> Table:
    table = Table(title=title or None, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column(row_label, justify="right")
    for r in range(a.shape[1]):
        table.add_column(str(r), justify="right")
    for i, row in enumerate(a):
        table.add_row(str(i), *(show_number(v) for v in row))
    return table


# --------------------------------------------------------------------------------------
# derive


def derivation_json(spec, d) -> dict[str, Any]:
    """The JSON object of `dpverify derive --json`."""
    T = d.T
    return {
        "mechanism": spec.name, "source": spec.source, "n": spec.n,
        "alpha": json_number(spec.alpha_exact) if spec.alpha_exact is not None
        else spec.alpha,
        "arithmetic": "exact" if d.exact else f"floating point (tol {d.tol:g})",
        "dp": d.dp, "dp_violations": [list(p) for p in d.dp_violations],
        "derivable": d.derivable,
        "agree": d.agree,
        "methods": {
            "linear_solve": {"derivable": d.by_solve, "method": d.method,
                             "violations": [list(p) for p in d.solve_violations]},
            "local_test": {"derivable": d.by_local,
                           "violations": [list(p) for p in d.local_violations]},
        },
        "T": json_matrix(T) if T is not None else None,
    }


def print_derivation(console: Console, spec, d) -> None:
    alpha = show_number(spec.alpha_exact) if spec.alpha_exact is not None else \
        f"{spec.alpha:.12g}"
    console.print(f"{spec.name}  ({spec.source})")
    if spec.description:
        console.print(f"  {spec.description}")
    arithmetic = "exact rational arithmetic" if d.exact else \
        f"floating point, tolerance {d.tol:g}"
    console.print(f"  n = {spec.n}, alpha = {alpha}; {arithmetic}")
    console.print()
    table = Table(show_edge=False, pad_edge=False)
    for col in ("test", "result", "violating (i, j)"):
        table.add_column(col)
    table.add_row(f"{alpha}-differentially private", _ok(d.dp), _pairs(d.dp_violations))
    table.add_row(f"T = G^-1 x >= 0 ({d.method})", _ok(d.by_solve, "derivable", "not derivable"),
                  _pairs(d.solve_violations))
    table.add_row("local three-row test", _ok(d.by_local, "derivable", "not derivable"),
                  _pairs(d.local_violations))
    print_table(console, table)
    console.print()
    if d.derivable is None:
        why = ("the two derivability tests disagree" if not d.agree else
               "the tests say derivable, but the mechanism is not alpha-DP (every G T is)")
        console.print(f"Undecided: {why}. A numerical problem: try exact arithmetic "
                      "(alpha and any non-dyadic entries as \"p/q\" strings).")
        return
    if not d.derivable:
        why = "" if d.dp else " (it is not even alpha-DP, and every G T is)"
        console.print(f"Not derivable from the {alpha}-geometric mechanism{why}.")
        return
    console.print(f"Derivable from the {alpha}-geometric mechanism: x = G T with the "
                  "row-stochastic T below.")
    T = d.T
    if T.shape[0] <= MAX_MATRIX_SIDE:
        console.print("T (rows: G's output k, columns: released answer r):")
        print_table(console, matrix_table(T, "", "k \\ r"))
    else:
        console.print(f"(T is {T.shape[0]} x {T.shape[1]}: use --json to see it)")


# --------------------------------------------------------------------------------------
# release


def release_json(plan, released: list[int], answer: int, seed: int, check) -> dict[str, Any]:
    stages = []
    for j, a in enumerate(plan.alphas):
        entry: dict[str, Any] = {
            "stage": j + 1, "alpha": json_number(a),
            "epsilon": (abs(math.log(float(a))) if float(a) > 0 else None),
            "released": released[j],
        }
        if j:
            entry["transition_stochastic"] = plan.stochastic[j - 1]
            entry["transition_min_entry"] = json_number(plan.min_entries[j - 1])
        stages.append(entry)
    out: dict[str, Any] = {"n": plan.n, "answer": answer, "seed": seed, "stages": stages,
                           "ok": plan.ok and (check is None or check.ok)}
    if check is not None:
        out["check"] = {
            "arithmetic": "exact" if check.exact else "floating point",
            "marginals": [{"stage": j + 1, "geometric": ok, "max_error": err}
                          for j, (ok, err) in enumerate(zip(check.marginal_ok,
                                                            check.marginal_error, strict=False))],
            "subsets": [{"stages": [s + 1 for s in sub.stages], "promised_alpha": sub.promised,
                         "measured_alpha": sub.measured, "ok": sub.ok}
                        for sub in check.subsets],
            "ok": check.ok,
        }
    return out


def print_release(console: Console, plan, released: list[int], answer: int, seed: int,
                  check) -> None:
    console.print(f"Multi-level release (Gupte-Sundararajan Algorithm 1): n = {plan.n}, "
                  f"true answer {answer}, seed {seed}")
    table = Table(show_edge=False, pad_edge=False)
    for col in ("stage", "alpha", "epsilon", "transition from previous stage", "released"):
        table.add_column(col, justify="left" if col.startswith("transition") else "right")
    for j, a in enumerate(plan.alphas):
        eps = f"{abs(math.log(float(a))):.6g}" if float(a) > 0 else "inf"
        if j == 0:
            how = f"G_{{{show_number(a)}}}(answer)"
            trans = Text(how)
        else:
            ok = plan.stochastic[j - 1]
            trans = Text(f"T = G_{{{show_number(plan.alphas[j - 1])}}}^-1 G_{{{show_number(a)}}}"
                         f": {'stochastic' if ok else 'NOT stochastic'} "
                         f"(min entry {float(plan.min_entries[j - 1]):.3g})",
                         style="" if ok else "bold red")
        table.add_row(str(j + 1), show_number(a), eps, trans, str(released[j]))
    print_table(console, table)
    if check is None:
        return
    console.print()
    how = "exactly" if check.exact else "to 1e-12"
    console.print(f"Each stage's marginal is the alpha_j-geometric mechanism ({how}):")
    marg = Table(show_edge=False, pad_edge=False)
    for col in ("stage", "alpha", "G_1 T_1 ... T_(j-1) = G_alpha_j", "max difference"):
        marg.add_column(col, justify="right")
    for j, (ok, err) in enumerate(zip(check.marginal_ok, check.marginal_error, strict=False)):
        marg.add_row(str(j + 1), show_number(plan.alphas[j]), _ok(ok), f"{err:.1e}")
    print_table(console, marg)
    console.print()
    console.print("Every coalition is as private as its least private member (joint release "
                  "of the stages, tolerance 1e-12):")
    subs = Table(show_edge=False, pad_edge=False)
    for col in ("stages", "least private alpha", "joint release is alpha-DP for alpha =", "ok"):
        subs.add_column(col, justify="right")
    for sub in check.subsets:
        subs.add_row("{" + ", ".join(str(s + 1) for s in sub.stages) + "}",
                     f"{sub.promised:.6g}", f"{sub.measured:.12g}", _ok(sub.ok))
    print_table(console, subs)
    console.print()
    console.print("check passed" if check.ok else "CHECK FAILED")


# `derive`'s output of each setting of a mechanism file: (its JSON, its tables).
DERIVATION_VIEWS: dict[Setting, tuple[Callable[[Any, Any], dict[str, Any]],
                                      Callable[[Console, Any, Any], None]]] = {
    Setting.PURE: (derivation_json, print_derivation),
    Setting.DELTA: (delta_derivation_json, print_delta_derivation),
}


def found_json(found: Any) -> dict[str, Any]:
    """`derive --json`: a MechanismDerivation's JSON, by the mechanism's setting."""
    return DERIVATION_VIEWS[found.setting][0](found.mechanism, found.derivation)


def print_found(console: Console, found: Any) -> None:
    """`derive`'s tables for a MechanismDerivation, by the mechanism's setting."""
    DERIVATION_VIEWS[found.setting][1](console, found.mechanism, found.derivation)
