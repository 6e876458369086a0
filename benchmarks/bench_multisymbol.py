"""The bars of inputs with more than two symbols (issue 12; docs/theory.md, section 6),
measured on held-out random instances (seeds the tests do not use).

Usage: python benchmarks/bench_multisymbol.py [--instances 20] [--seed 1000]
       [--k4-functions majority,random] [--restarts 20]

1. k = 1, m = 3 and 4, the observer, both accuracies: the upper bound equals the optimum of
   the single-channel LP (written out here and solved by scipy's linprog) to 1e-9, and
   the verdict is `optimal` or `gap`, never `open` (the search reaches the bound).
2. k = 2, m = 3, both accuracies: the bound equals a dense LP over the 36 products of rays
   written out here (scipy) to 1e-9; every witness file is read with tomllib and valued
   again here in exact arithmetic (the average by the argmax rule on every transcript;
   the worst case bracketed by an explicit rule and prior from linprog), its channels
   checked to be exactly DP, and every `gap` has a witness above m-ary RR (valued here too).
3. k = 4, m = 3 (81 inputs, 1296 products of rays), the average: the bound and a search
   with 20 restarts in under 60 s.

Prints markdown tables for the README and exits 1 when a bar is missed.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
import tomllib
from fractions import Fraction
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
from scipy.optimize import linprog

from dpverify.spec import loads
from dpverify.spec.model import Accuracy
from dpverify.verifiers.multisymbol.verifier import symbol_outcome, verify_symbol_agent
from dpverify.verifiers.options import VerifyOptions

BAR_TOL = 1e-9
BAR_SECONDS = 60.0


def problem(table: list[int], m: int, k: int, eps: float, accuracy: str = "") -> str:
    extra = f'accuracy = "{accuracy}"\n' if accuracy else ""
    return (f"[problem]\nparties = {k}\nalphabet = {m}\nepsilon = {eps}\n{extra}"
            f"[observer]\nfunction = {{ table = {table} }}\n")


def rays(m: int, lam: float) -> list[np.ndarray]:
    return [np.array(p) / sum(p) for p in itertools.product([1.0, lam], repeat=m)
            if len(set(p)) == 2]


def dense_lp(points: np.ndarray, gain: np.ndarray, worst: bool) -> float:
    """max over theta >= 0 of the relaxed LP with the points as columns, by linprog."""
    n, S = points.shape
    L = gain.shape[1]
    nv = S * L + worst
    A_eq = np.hstack([points] * L + ([np.zeros((n, 1))] if worst else []))
    c = np.zeros(nv)
    A_ub, b_ub = None, None
    if worst:
        c[-1] = -1.0
        A_ub = np.hstack([-points * gain[:, [y]] for y in range(L)] + [np.ones((n, 1))])
        b_ub = np.zeros(n)
    else:
        c[:S * L] = -np.concatenate([points.T @ gain[:, y] for y in range(L)]) / n
    bounds = [(0, None)] * (S * L) + ([(None, None)] if worst else [])
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.ones(n), bounds=bounds,
                  method="highs")
    assert res.status == 0, res.message
    return -res.fun


def indicator(table: list[int]) -> np.ndarray:
    ys = sorted(set(table))
    return np.array([[1.0 if v == y else 0.0 for y in ys] for v in table])


def product_points(m: int, k: int, lam: float) -> np.ndarray:
    columns = []
    for combo in itertools.product(rays(m, lam), repeat=k):
        column = np.ones(1)
        for r in combo:
            column = np.kron(column, r)
        columns.append(column)
    return np.array(columns).T


# -- witnesses valued again here --------------------------------------------------------------
def exact_matrix(channels: list[list[list[Fraction]]]) -> list[list[Fraction]]:
    P: list[list[Fraction]] = [[Fraction(1)]]
    for C in channels:
        P = [[p * c for p in row for c in crow] for row in P for crow in C]
    return P


def value_by_hand(channels, table: list[int], worst: bool) -> tuple[float, float]:
    """(lower, upper) of the protocol's accuracy with its optimal rule: exact for the
    average (argmax), for the worst case an explicit rule (lower) and prior (upper)."""
    P = exact_matrix(channels)
    ys = sorted(set(table))
    n, T = len(P), len(P[0])
    if not worst:
        total = sum(max(sum((P[x][t] for x in range(n) if table[x] == y), Fraction(0))
                        for y in ys) for t in range(T))
        return float(total / n), float(total / n)
    Pf = np.array([[float(v) for v in row] for row in P])
    L = len(ys)
    nv = T * L + 1
    c = np.zeros(nv)
    c[-1] = -1.0
    A_ub = np.zeros((n, nv))
    for x in range(n):
        y = ys.index(table[x])
        A_ub[x, [t * L + y for t in range(T)]] = -Pf[x]
        A_ub[x, -1] = 1.0
    A_eq = np.zeros((T, nv))
    for t in range(T):
        A_eq[t, t * L:(t + 1) * L] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(n), A_eq=A_eq, b_eq=np.ones(T),
                  bounds=[(0, None)] * (T * L) + [(None, None)], method="highs")
    assert res.status == 0
    Q = np.clip(res.x[:T * L].reshape(T, L), 0, None)
    Q /= Q.sum(axis=1, keepdims=True)
    lower = min(float((Pf[x] * Q[:, ys.index(table[x])]).sum()) for x in range(n))
    prior = np.clip(-res.ineqlin.marginals, 0, None)
    prior = prior / prior.sum()
    upper = sum(max(float(sum(prior[x] * Pf[x, t] for x in range(n) if table[x] == y))
                    for y in ys) for t in range(T))
    return lower, upper


def check_witness(path: str, lam: float, table: list[int], worst: bool) -> tuple[bool, float]:
    """(exactly row-stochastic and lambda-DP (every column's exact ratio max/min, as a
    float, at most lambda), what its explicit rule achieves), from the file alone."""
    doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    channels = [[[Fraction(v) for v in row] for row in rnd["kernel"]] for rnd in doc["round"]]
    dp = all(sum(row) == 1 and min(row) >= 0 for C in channels for row in C) and all(
        min(col) > 0 and float(max(col) / min(col)) <= lam * (1 + 1e-15)
        for C in channels for col in zip(*C, strict=True))
    return dp, value_by_hand(channels, table, worst)[0]


# -- the bars --------------------------------------------------------------------------------
def one_party(rng: np.random.Generator, m: int, count: int, restarts: int) -> dict:
    worst_err, verdicts, seconds = 0.0, [], 0.0
    for _ in range(count):
        table = [int(v) for v in rng.integers(0, 3, m)]
        if len(set(table)) < 2:
            table[0] = 1 - table[1] if table[1] < 2 else 0
        eps = float(rng.choice([0.25, 0.5, 1.0, 2.0, 3.0]))
        spec = loads(problem(table, m, 1, eps))
        for accuracy in Accuracy:
            start = time.perf_counter()
            out = symbol_outcome(spec, spec.agents[0], accuracy, VerifyOptions(restarts=restarts))
            seconds += time.perf_counter() - start
            exact = dense_lp(np.array(rays(m, math.exp(eps))).T, indicator(table),
                             accuracy is Accuracy.WORST)
            worst_err = max(worst_err, abs(float(out.bound.bound) - exact))
            verdicts.append(out.verdict.value)
    return {"what": f"k = 1, m = {m}", "instances": count, "max |bound - channel LP|": worst_err,
            "verdicts": {v: verdicts.count(v) for v in sorted(set(verdicts))},
            "seconds": seconds,
            "ok": worst_err <= BAR_TOL and "open" not in verdicts and "error" not in verdicts}


def two_parties(rng: np.random.Generator, count: int, restarts: int, out_dir: str) -> dict:
    worst_err, verdicts, bad, gaps_backed, seconds = 0.0, [], 0, 0, 0.0
    for _ in range(count):
        table = [int(v) for v in rng.integers(0, 2, 9)]
        if len(set(table)) < 2:
            table[0] = 1 - table[0]
        eps = float(rng.choice([0.5, 1.0, 2.0]))
        lam = math.exp(eps)
        spec = loads(problem(table, 3, 2, eps))
        points = product_points(3, 2, lam)
        for accuracy in Accuracy:
            worst = accuracy is Accuracy.WORST
            start = time.perf_counter()
            result = verify_symbol_agent(spec, spec.agents[0], accuracy,
                                         VerifyOptions(restarts=restarts, witness_dir=out_dir))
            seconds += time.perf_counter() - start
            exact = dense_lp(points, indicator(table), worst)
            worst_err = max(worst_err, abs(result.relaxed_optimum - exact))
            verdicts.append(result.verdict.value)
            rr_high = value_by_hand(rr_exact(lam), table, worst)[1]
            if result.witness is not None:
                dp, value = check_witness(result.witness, lam, table, worst)
                if not dp or abs(value - result.best_value) > BAR_TOL:
                    bad += 1
                if result.verdict.value == "gap" and value > rr_high:
                    gaps_backed += 1
            elif result.verdict.value == "gap":
                bad += 1
    gaps = verdicts.count("gap")
    return {"what": "k = 2, m = 3", "instances": count, "max |bound - dense LP|": worst_err,
            "verdicts": {v: verdicts.count(v) for v in sorted(set(verdicts))},
            "bad witnesses": bad, "gaps backed": f"{gaps_backed}/{gaps}", "seconds": seconds,
            "ok": worst_err <= BAR_TOL and bad == 0 and gaps_backed == gaps}


def rr_exact(lam: float) -> list[list[list[Fraction]]]:
    """m-ary RR for two ternary parties, as floats' exact values (for the comparison)."""
    keep = Fraction(lam / (2 + lam))
    other = (1 - keep) / 2
    C = [[keep if a == b else other for b in range(3)] for a in range(3)]
    return [C, C]


def four_parties(functions: list[str], restarts: int, rng: np.random.Generator) -> list[dict]:
    rows = []
    for name in functions:
        fn = ('"majority"' if name == "majority" else
              f"{{ table = {[int(v) for v in rng.integers(0, 2, 81)]} }}")
        spec = loads(f'[problem]\nparties = 4\nalphabet = 3\nepsilon = 1\naccuracy = "average"\n'
                     f"[observer]\nfunction = {fn}\n")
        start = time.perf_counter()
        out = symbol_outcome(spec, spec.agents[0], Accuracy.AVERAGE,
                             VerifyOptions(restarts=restarts))
        seconds = time.perf_counter() - start
        rows.append({"what": f"k = 4, m = 3, {name}", "seconds": seconds,
                     "verdict": out.verdict.value, "bound": float(out.bound.bound),
                     "rr": float(out.rr_low), "best": float(out.best),
                     "ok": seconds < BAR_SECONDS and out.verdict.value != "error"})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--restarts", type=int, default=20)
    parser.add_argument("--k4-functions", default="majority,random")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    ok = True
    print("| instances | checked | max error | verdicts | seconds | bar |")
    print("|---|---|---|---|---|---|")
    with TemporaryDirectory() as out_dir:
        rows = [one_party(rng, 3, args.instances, 8), one_party(rng, 4, args.instances, 8),
                two_parties(rng, args.instances, 8, out_dir)]
    for row in rows:
        error = row.get("max |bound - channel LP|", row.get("max |bound - dense LP|"))
        extra = (f"; bad witnesses {row['bad witnesses']}, gaps backed {row['gaps backed']}"
                 if "bad witnesses" in row else "")
        print(f"| {row['what']} | {row['instances']} x 2 accuracies | {error:.1e} | "
              f"{row['verdicts']}{extra} | {row['seconds']:.1f} | "
              f"{'met' if row['ok'] else 'MISSED'} |")
        ok = ok and row["ok"]
    print()
    print("| k = 4 | seconds | verdict | bound | m-ary RR | best found | bar (60 s) |")
    print("|---|---|---|---|---|---|---|")
    for row in four_parties(args.k4_functions.split(","), args.restarts, rng):
        print(f"| {row['what']} | {row['seconds']:.1f} | {row['verdict']} | {row['bound']:.6f} "
              f"| {row['rr']:.6f} | {row['best']:.6f} | {'met' if row['ok'] else 'MISSED'} |")
        ok = ok and row["ok"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
