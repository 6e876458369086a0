"""Deterministic candidate rules for RR's worst-case LP on all inputs (theory/worst_lp.py,
`over_inputs`; docs/theory.md, "The worst case without symmetry").

An interior-point method ends at the centre of the optimal face, so its rule is
fractional on many columns and accurate only to its last step. Where the optimum is
reached by a deterministic rule, that rule is exact at once: a constant rule (every tau
decides the same output y, so acc(x) = w(x, y) whatever the channel: a party whose gains
make one guess safe, such as -square on {0, 1, 2} guessing 1), or the Bayes rule of the
best prior (tau decides an output of largest z[tau, y]; KOV 2015, eq. 2 with that prior).
Measured: a party at k = 7 with epsilons up to 25 under -square, where the dense method's
rule stalled 2e-6 below the prior's bound and the exact simplex then took 136 s, while
the constant rule meets the bound.

Only floats here: a candidate replaces the method's rule when its own worst case, in
extended precision, is higher; the verdict rests on the exact or enclosed bounds of
whatever is kept.
"""

from __future__ import annotations

import numpy as np

from dpverify.theory.exact_rows import clean_distribution
from dpverify.theory.rr import kron_apply
from dpverify.theory.worst_lp import WorstLp

WORK = np.longdouble

__all__ = ["best_candidate", "candidate_rules", "rule_worst"]


def rule_worst(lp: WorstLp, rule: np.ndarray) -> float:
    """min over the block's rows of acc_Q (a Kronecker channel), in extended precision."""
    assert lp.channel.factors is not None
    factors = [np.asarray(f, dtype=WORK) for f in lp.channel.factors]
    acc = (kron_apply(factors, np.asarray(rule, dtype=WORK), WORK)[lp.rows]
           * np.asarray(lp.gain, dtype=WORK)).sum(axis=1)
    return float(acc.min())


def candidate_rules(lp: WorstLp, prior: np.ndarray | None) -> list[np.ndarray]:
    """The constant rules, one per output, and the Bayes rule of `prior` (masses on the
    block's rows) when one is given."""
    n, m = lp.channel.columns, lp.m
    out = []
    for y in range(m):
        rule = np.zeros((n, m))
        rule[:, y] = 1.0
        out.append(rule)
    if prior is not None and np.isfinite(prior).all() and prior.sum() > 0:
        assert lp.channel.factors is not None
        full = np.zeros((n, m), dtype=WORK)
        full[lp.rows] = np.asarray(clean_distribution(prior), dtype=WORK)[:, None] \
            * np.asarray(lp.gain, dtype=WORK)
        z = kron_apply([np.asarray(f, dtype=WORK).T for f in lp.channel.factors], full, WORK)
        bayes = np.zeros((n, m))
        bayes[np.arange(n), np.argmax(z, axis=1)] = 1.0
        out.append(bayes)
    return out


def best_candidate(lp: WorstLp, prior: np.ndarray | None, lower: float
                   ) -> tuple[float, np.ndarray] | None:
    """(its worst case, the rule) of the best candidate rule when it beats `lower`, the
    worst case of the rule in hand; else None."""
    best = None
    for rule in candidate_rules(lp, prior):
        value = rule_worst(lp, rule)
        if value > lower and (best is None or value > best[0]):
            best = (value, rule)
    return best
