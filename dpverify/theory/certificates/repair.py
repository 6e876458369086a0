"""Exact worst-case rules and priors recovered from float hints (complementary slackness).

RR's worst-case decision LP (KOV 2015, eqs. 4, 6) and its dual (a minimax prior) are solved
in floats; the solutions' supports give linear equations whose exact solution, when it
exists and checks, is an exact optimal rule or prior (LP complementary slackness). When it
does not, the caller falls back to the exact simplex (worst.py) or to the rationalised
hints, which still give a valid, weaker certificate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import fmpq, fmpq_mat

from dpverify.theory.certificates.bounds import (
    _weighted_gain,
    input_accuracies,
    own_bits,
)
from dpverify.theory.certificates.symmetry import Orbits, _lift_rule, _members
from dpverify.theory.exact import Scaled, from_fmpq, rr_apply
from dpverify.theory.rr import kron_apply, rr_channel

SUPPORT_TOL = 1e-9  # float LP values below this (relative) are taken as exact zeros
RATIONAL_DENOMINATOR = 10**9  # free variables are rationalised with at most this denominator
MAX_REPAIR_ROUNDS = 12


@dataclass(frozen=True, eq=False)
class WorstHint:
    """Float hints for one worst-case sub-problem (the observer, or a party's own bit b):
    `rule[o, y]` a decision rule per tau-orbit, `prior[a]` the prior mass of each relevant
    x-orbit (`x_orbits[a]`), or None when unknown."""

    rule: np.ndarray
    prior: np.ndarray | None
    x_orbits: np.ndarray



def _rat(x: float) -> Fraction:
    """A float hint as a small rational (never negative)."""
    if not math.isfinite(x) or x <= 0:
        return Fraction(0)
    return Fraction(x).limit_denominator(RATIONAL_DENOMINATOR)



def _solve_near(rows: list[list[Fraction]], rhs: list[Fraction],
                guess: Sequence[float]) -> list[Fraction] | None:
    """An exact solution of rows @ z = rhs near `guess`: free variables take the guess
    (rationalised), pivot variables are solved exactly. None if inconsistent."""
    u = len(guess)
    if not rows:
        return [_rat(g) for g in guess]
    entries = []
    for row, b in zip(rows, rhs):
        for v in list(row) + [b]:
            if isinstance(v, int):
                entries.append(fmpq(v))
            else:
                v = Fraction(v)
                entries.append(fmpq(v.numerator, v.denominator))
    R, rank = fmpq_mat(len(rows), u + 1, entries).rref()
    pivots = []
    for r in range(rank):
        c = next(c for c in range(u + 1) if R[r, c] != 0)
        if c == u:
            return None  # 0 = nonzero: inconsistent
        pivots.append(c)
    pivot_set = set(pivots)
    z = [Fraction(0)] * u
    for c in range(u):
        if c not in pivot_set:
            z[c] = _rat(float(guess[c]))
    for r, c in enumerate(pivots):
        acc = from_fmpq(R[r, u])
        for f in range(u):
            if f not in pivot_set:
                coef = R[r, f]
                if coef != 0:
                    acc -= from_fmpq(coef) * z[f]
        z[c] = acc
    return z


def _support(rule_row: np.ndarray) -> list[int]:
    top = float(np.max(rule_row))
    supp = [j for j, v in enumerate(rule_row) if v > SUPPORT_TOL * max(top, 1.0)]
    return supp or [int(np.argmax(rule_row))]



def _for_accuracy(rule: list, party: int):
    """A decision argument for input_accuracies: a party's sub-problem uses one half for
    both own bits (only the inputs with that bit are read)."""
    return rule if party == 0 else (rule, rule)


def _relevant(k: int, party: int, bit: int | None) -> np.ndarray | None:
    return None if bit is None else own_bits(k, party) == bit


def exact_worst_rule(lambdas: Sequence[Fraction], gain: Scaled, party: int, bit: int | None,
                     orbits: Orbits, hint: WorstHint) -> tuple[list | None, str]:
    """An exact worst-case rule for RR (KOV eq. 4; eq. 6 per own bit), constant on tau-orbits,
    from a float hint. Complementary slackness with the LP dual: every input in the prior's
    support is tight, acc[x] = t; the rule keeps the hint's support. Unknowns: the hint's
    fractional entries and t; solved exactly, then every other input is checked (acc >= t)
    and a violated one is made tight and the system solved again.

    Returns (rule[tau][y] over all tau, '') or (None, reason).
    """
    n, m = gain.num.shape
    supports = [_support(hint.rule[o]) for o in range(orbits.count)]
    frac = [o for o in range(orbits.count) if len(supports[o]) > 1]
    x_orbits = hint.x_orbits.tolist()
    det = [[Fraction(int(j == supports[o][0])) for j in range(m)] for o in range(orbits.count)]
    if not frac:
        return _lift_rule(orbits, det), ""
    for o in frac:
        det[o] = [Fraction(0)] * m
    det_acc = input_accuracies(lambdas, gain, party, _for_accuracy(_lift_rule(orbits, det), party))
    # A[x, c] = sum_{tau in orbit frac[c]} P[x, tau]: transforms of the orbits' indicators
    ind = np.zeros((n, len(frac)), dtype=object)
    for c, o in enumerate(frac):
        ind[:, c] = (orbits.ids == o).astype(np.int64).tolist()
    A = rr_apply(lambdas, Scaled(ind, 1))
    unknowns = [(c, o, y) for c, o in enumerate(frac) for y in supports[o]]
    guess = [float(hint.rule[o][y]) for _, o, y in unknowns] + [0.0]

    def acc_row(x: int) -> tuple[list[Fraction], Fraction]:
        gx = gain.num[x]
        row = [Fraction(int(A.num[x, c]) * int(gx[y]), A.den * gain.den) for c, _, y in unknowns]
        return row, Fraction(int(det_acc.num[x]), det_acc.den)

    tight = _prior_support(hint)
    if not tight:  # no prior: the inputs at the float minimum
        est = {}
        for a in x_orbits:
            row, const = acc_row(int(orbits.reps[a]))
            est[a] = float(const) + sum(float(r) * g for r, g in zip(row, guess))
        lo = min(est.values())
        tight = {a for a, v in est.items() if v <= lo + 1e-9 * max(1.0, abs(lo))}
    for _ in range(MAX_REPAIR_ROUNDS):
        rows, rhs = [], []
        for a in sorted(tight):
            row, const = acc_row(int(orbits.reps[a]))
            rows.append(row + [Fraction(-1)])
            rhs.append(-const)
        for c in range(len(frac)):
            rows.append([Fraction(int(cc == c)) for cc, _, _ in unknowns] + [Fraction(0)])
            rhs.append(Fraction(1))
        z = _solve_near(rows, rhs, guess)
        if z is None:
            return None, "the rule's complementary-slackness equations are inconsistent"
        if any(v < 0 for v in z[:-1]):
            return None, "the exact rule on the hint's support has a negative entry"
        full = [list(r) for r in det]
        for (_, o, y), v in zip(unknowns, z[:-1]):
            full[o][y] = v
        rule = _lift_rule(orbits, full)
        acc = input_accuracies(lambdas, gain, party, _for_accuracy(rule, party))
        t = z[-1]
        below = {a for a in x_orbits
                 if Fraction(int(acc.num[int(orbits.reps[a])]), acc.den) < t}
        if not below:
            return rule, ""
        tight |= below
    return None, "the rule's tight set did not settle"


def _prior_support(hint: WorstHint) -> set[int]:
    if hint.prior is None or not np.any(hint.prior > 0):
        return set()
    top = float(np.max(hint.prior))
    return {a for a, p in zip(hint.x_orbits.tolist(), hint.prior.tolist())
            if p > SUPPORT_TOL * top}


def exact_worst_prior(lambdas: Sequence[Fraction], gain: Scaled, party: int, bit: int | None,
                      orbits: Orbits, hint: WorstHint, near_ties: bool = True
                      ) -> tuple[list[Fraction] | None, str]:
    """An exact minimax prior (the dual of KOV eq. 4/6), constant on x-orbits, from a float
    hint. Complementary slackness: on every tau the rule's support maximises the score
    sum_x P[x, tau] pi[x] w(f(x), y), so the supported outputs tie. Unknowns: the prior
    pi_a of each input of x-orbit a in the hint's support; equations: sum pi = 1 and the
    ties (with `near_ties`, also the outputs whose float score is within 1e-9 of the tie);
    then every other output is checked (score <= the tie) and a violated one is tied and
    the system solved again. Returns (pi over all inputs, '') or (None, reason).
    """
    n, m = gain.num.shape
    k = n.bit_length() - 1
    mask = _relevant(k, party, bit)
    support = sorted(_prior_support(hint))
    if not support or hint.prior is None:
        return None, "no prior hint"
    members = _members(orbits)
    sizes = [int(orbits.sizes[a]) for a in support]
    mass_of = dict(zip(hint.x_orbits.tolist(), hint.prior.tolist()))
    guess = [float(mass_of[a]) / size for a, size in zip(support, sizes)]
    supports = [_support(hint.rule[o]) for o in range(orbits.count)]
    ties = {(o, y) for o in range(orbits.count) for y in supports[o][1:]}
    reps = orbits.reps
    if near_ties:
        ties |= _near_ties(lambdas, gain, orbits, mask, members, support, guess, supports)
    g_int = [[int(v) for v in gain.num[int(reps[a])]] for a in support]  # over gain.den
    columns: dict[int, list[int]] = {}  # K[a, o] = sum_{x in a} P[x, rep(o)] (over a den)
    cached_rows: dict[tuple[int, int], list[int]] = {}

    def fill_columns(needed: list[int]) -> None:
        new = [o for o in needed if o not in columns]
        if not new:
            return
        e = np.zeros((n, len(new)), dtype=object)
        for c, o in enumerate(new):
            e[int(reps[o]), c] = 1
        col = rr_apply(lambdas, Scaled(e, 1)).num
        for c, o in enumerate(new):
            columns[o] = [int(sum(col[members[a], c].tolist())) for a in support]

    for _ in range(MAX_REPAIR_ROUNDS):
        fill_columns(sorted({o for o, _ in ties}))
        rows: list[list] = [sizes]
        rhs: list = [1]
        for o, y in sorted(ties):
            if (o, y) not in cached_rows:
                y0 = supports[o][0]
                K = columns[o]
                cached_rows[(o, y)] = [K[i] * (g_int[i][y] - g_int[i][y0])
                                       for i in range(len(support))]
            rows.append(cached_rows[(o, y)])
            rhs.append(0)
        pi = _solve_near(rows, rhs, guess)
        if pi is None:
            return None, "the prior's complementary-slackness equations are inconsistent"
        if any(r < 0 for r in pi):
            return None, "the exact prior on the hint's support has a negative entry"
        prior = [Fraction(0)] * n
        for share, a in zip(pi, support):
            for x in members[a]:
                prior[x] = share
        scores = rr_apply(lambdas, _weighted_gain(gain, Scaled.from_fractions(prior), mask))
        added = set()
        for o in range(orbits.count):
            row = scores.num[int(reps[o])]
            y0 = supports[o][0]
            for y in range(m):
                if row[y] > row[y0] and (o, y) not in ties:
                    added.add((o, y))
        if not added:
            return prior, ""
        ties |= added
    return None, "the prior's ties did not settle"


def _near_ties(lambdas, gain: Scaled, orbits: Orbits, mask, members, support, guess,
               supports) -> set[tuple[int, int]]:
    """(o, y) whose float score at the hint's prior is within 1e-9 of the rule's output."""
    n, m = gain.num.shape
    prior = np.zeros(n)
    for share, a in zip(guess, support):
        prior[members[a]] = share
    g = np.array([[float(Fraction(int(v), gain.den)) for v in row] for row in gain.num.tolist()])
    if mask is not None:
        g = np.where(mask[:, None], g, 0.0)
    scores = kron_apply([rr_channel(float(lam)) for lam in lambdas], prior[:, None] * g)
    scale = 1e-9 * max(float(np.max(np.abs(scores))), 1e-300)
    out = set()
    for o in range(orbits.count):
        row = scores[int(orbits.reps[o])]
        y0 = supports[o][0]
        for y in range(m):
            if y != y0 and y not in supports[o] and row[y] >= row[y0] - scale:
                out.add((o, y))
    return out


def rationalised_rule(orbits: Orbits, rule_hint: np.ndarray) -> list:
    """A fallback: the hint's rows as small rationals, normalised exactly."""
    rows = []
    for o in range(orbits.count):
        r = [_rat(float(v)) for v in rule_hint[o]]
        if sum(r) == 0:
            r = [Fraction(int(j == int(np.argmax(rule_hint[o])))) for j in range(len(r))]
        s = sum(r)
        rows.append([v / s for v in r])
    return _lift_rule(orbits, rows)


def rationalised_prior(orbits: Orbits, hint: WorstHint, n: int) -> list[Fraction] | None:
    """A fallback: the hint's prior as small rationals, normalised exactly (any distribution
    gives a valid upper bound, only a weaker one)."""
    if hint.prior is None:
        return None
    rho = [_rat(float(p)) for p in hint.prior]
    total = sum(rho)
    if total == 0:
        return None
    prior = [Fraction(0)] * n
    members = _members(orbits)
    for r, a in zip(rho, hint.x_orbits.tolist()):
        for x in members[a]:
            prior[x] = r / total / int(orbits.sizes[a])
    return prior


def uniform_prior(n: int, relevant: np.ndarray | None) -> list[Fraction]:
    idx = range(n) if relevant is None else np.flatnonzero(relevant).tolist()
    share = Fraction(1, len(idx))
    prior = [Fraction(0)] * n
    for x in idx:
        prior[x] = share
    return prior

