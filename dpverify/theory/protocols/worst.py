"""The worst-case accuracy of an explicit protocol, in exact arithmetic (KOV 2015, eqs. (4)
and (6) on explicit transcripts; docs/theory.md, "Protocol audits").

For one block of inputs X (every input for the observer, those with x_i = a for party i):

    maximise s  subject to  sum_t sum_y P[x, t] g[x, y] Q[t, y] >= s  for x in X,
                            sum_y Q[t, y] = 1,  Q >= 0                             (W)

Its LP dual is min over distributions pi on X of sum_t max_y sum_x pi[x] P[x, t] g[x, y].
So any rule Q proves `value >= min_x (accuracy of Q at x)` and any prior pi proves
`value <= sum_t max_y ...`: `rule_value` and `prior_bound` below compute both exactly, and
equal bounds prove the value. The optimal Q and pi come from the exact revised simplex
(theory/exact_lp.py) on the standard form of (W), started from a float solve's basis.

Gains here are exact rationals, normalised to [0, 1] by the caller, so s >= 0 costs
nothing; only the transcripts some input of X reaches enter (W).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpverify.theory.certificates.worst import BasisFinder
from dpverify.theory.exact_lp import ExactLpError, simplex_from_basis

# The exact simplex solves a dense rows x rows system per pivot: used up to this many rows
# (live transcripts + inputs of the block).
MAX_EXACT_ROWS = 300


@dataclass(frozen=True, eq=False)
class ExactWorst:
    """One block's exact optimum: its value, an optimal rule Q[t][y] over every transcript
    (rows of transcripts the block never reaches decide the first output), and an optimal
    prior on the block's inputs (in the block's input order)."""

    value: Fraction
    rule: list[list[Fraction]]
    prior: list[Fraction]


def _scaled_gain(gain: Sequence[Sequence[Fraction]]) -> tuple[np.ndarray, int]:
    den = math.lcm(*(Fraction(v).denominator for row in gain for v in row))
    return np.array([[int(Fraction(v) * den) for v in row] for row in gain], dtype=object), den


def rule_value(num: np.ndarray, den: int, gain: Sequence[Sequence[Fraction]],
               rule: Sequence[Sequence[Fraction]]) -> Fraction:
    """min over the block's inputs x of sum_t sum_y P[x, t] Q[t, y] g[x, y], exactly.
    `num / den` is P restricted to the block (rows x, every transcript)."""
    G, gden = _scaled_gain(gain)
    qden = math.lcm(*(Fraction(v).denominator for row in rule for v in row))
    Q = np.array([[int(Fraction(v) * qden) for v in row] for row in rule], dtype=object)
    per_input = np.zeros(num.shape[0], dtype=object)
    for chunk in _chunks(num.shape[1]):  # bounded temporaries: P may have 2^22 entries
        H = Q[chunk].dot(G.T)  # (chunk, |X|): sum_y Q[t, y] g[x, y]
        per_input = per_input + (num[:, chunk] * H.T).sum(axis=1)
    return Fraction(int(min(per_input.tolist())), den * gden * qden)


def _chunks(count: int, size: int = 4096) -> list[slice]:
    return [slice(start, min(start + size, count)) for start in range(0, count, size)]


def prior_bound(num: np.ndarray, den: int, gain: Sequence[Sequence[Fraction]],
                prior: Sequence[Fraction]) -> Fraction:
    """sum_t max_y sum_x pi[x] P[x, t] g[x, y] for a distribution pi on the block, exactly:
    an upper bound on (W) by weak duality (pi is normalised here)."""
    total = sum((Fraction(p) for p in prior), Fraction(0))
    if total <= 0:
        raise ValueError("a prior needs positive mass")
    G, gden = _scaled_gain(gain)
    pden = math.lcm(*(Fraction(p).denominator for p in prior))
    pi = np.array([int(Fraction(p) * pden) for p in prior], dtype=object)
    best = 0
    for chunk in _chunks(num.shape[1]):
        scores = (num[:, chunk] * pi[:, None]).T.dot(G)  # (chunk, m)
        best += sum(scores.max(axis=1).tolist())
    return Fraction(int(best), den * gden * pden) / total


def _standard_form(num: np.ndarray, G: np.ndarray, scale: int, live: np.ndarray):
    """(W) on the live transcripts in standard form, integer rows: columns Q[t, y] (t*m+y),
    s, then e_x; rows sum_y Q[t, y] = 1, then sum_t,y P g Q - s - e_x = 0, multiplied by
    `scale` (P = num / den and g = G / gden, scale = den * gden)."""
    X, T, m = num.shape[0], int(live.size), G.shape[1]
    width = T * m + 1 + X
    rows: list[list[int]] = []
    for j in range(T):
        row = [0] * width
        row[j * m:(j + 1) * m] = [1] * m
        rows.append(row)
    sub = num[:, live]
    for x in range(X):
        row = [int(sub[x, j]) * int(G[x, y]) for j in range(T) for y in range(m)]
        row += [-scale] + [0] * X
        row[T * m + 1 + x] = -scale
        rows.append(row)
    rhs = [1] * T + [0] * X
    cost = [0] * (T * m) + [1] + [0] * X
    return rows, rhs, cost


def _float_twin(rows: list[list[int]], rhs: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The integer rows as floats, each divided by its largest magnitude first (int / int
    rounds correctly, and never overflows): the same basis, for a float hint."""
    out = np.zeros((len(rows), len(rows[0]) if rows else 0))
    scaled = np.zeros(len(rows))
    for r, (row, b) in enumerate(zip(rows, rhs, strict=True)):
        top = max(max(abs(v) for v in row), abs(b)) or 1
        out[r] = [v / top for v in row]
        scaled[r] = b / top
    return out, scaled


def exact_rows(num: np.ndarray) -> int:
    """The rows of the standard form of (W) for this block (live transcripts + inputs)."""
    return int(np.count_nonzero(np.any(num != 0, axis=0))) + num.shape[0]


def exact_worst(num: np.ndarray, den: int, gain: Sequence[Sequence[Fraction]],
                start: Sequence[int] | None = None,
                basis_finder: BasisFinder | None = None) -> ExactWorst:
    """(W) solved exactly (num / den: P on the block; `gain` exact, in [0, 1]), by the
    exact revised simplex from `basis_finder`'s float basis, else from the crash basis
    (Q[t, start[t]] and every e_x basic, s = 0: always feasible). The value is proved by
    the rule and the prior computed apart (rule_value == prior_bound), else ExactLpError."""
    G, gden = _scaled_gain(gain)
    live = np.flatnonzero(np.any(num != 0, axis=0))
    T, X, m = int(live.size), num.shape[0], G.shape[1]
    rows, rhs, cost = _standard_form(num, G, den * gden, live)
    crash = [j * m + (int(start[int(t)]) if start is not None else 0)
             for j, t in enumerate(live)]
    crash += [T * m + 1 + x for x in range(X)]
    starts: list[Sequence[int]] = []
    if basis_finder is not None:
        float_rows, float_rhs = _float_twin(rows, rhs)
        found = basis_finder(float_rows, float_rhs, np.array(cost, dtype=np.float64))
        if found is not None:
            starts.append(list(found))
    starts.append(crash)
    solution = None
    for basis in starts:
        try:
            solution = simplex_from_basis(rows, rhs, cost, basis)
            break
        except ExactLpError:
            if basis is crash:
                raise
    assert solution is not None
    rule = [[Fraction(1)] + [Fraction(0)] * (m - 1) for _ in range(num.shape[1])]
    for j, t in enumerate(live.tolist()):
        rule[t] = [solution.z[j * m + y] for y in range(m)]
    prior = [-v for v in solution.y[T:]]
    lower = rule_value(num, den, gain, rule)
    upper = prior_bound(num, den, gain, prior)
    if lower != upper:  # cannot happen for an optimal basis: the two proofs must meet
        raise ExactLpError(f"the exact rule ({lower}) and prior ({upper}) do not meet")
    total = sum(prior, Fraction(0))
    return ExactWorst(lower, rule, [p / total for p in prior])
