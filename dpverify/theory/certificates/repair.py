"""Exact worst-case rules and priors recovered from float hints (complementary slackness).

RR's worst-case decision LP (KOV 2015, eqs. 4, 6) and its dual (a minimax prior) are solved
in floats; the solutions' supports give linear equations whose exact solution, when it
exists and checks, is an exact optimal rule or prior (LP complementary slackness). When it
does not, the caller falls back to the exact simplex (worst.py) or to the rationalised
hints, which still give a valid, weaker certificate.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.policy import FLINT_RREF_ENTRIES
from dpverify.records import record
from dpverify.spec.symmetric import Orbits, lift_rule, orbit_members
from dpverify.theory.certificates.bounds import (
    input_accuracies,
    own_bits,
    weighted_gain,
)
from dpverify.theory.exact import Scaled, from_fmpq, product_words, rr_apply, to_fmpq
from dpverify.theory.exact_rows import (
    LARGEST,
    dyadic,
    exact_distribution,
    exact_stochastic,
    has_mass,
    snap,
)
from dpverify.theory.rr import kron_apply, rr_channel

SUPPORT_TOL = 1e-9  # float LP values below this (relative) are taken as exact zeros
RATIONAL_DENOMINATOR = 10**9  # free variables are rationalised with at most this denominator
MAX_REPAIR_ROUNDS = 12
ZERO = Fraction(0)


@record(eq=False)
class WorstHint:
    """Float hints for one worst-case sub-problem (the observer, or a party's own bit b):
    `rule[o, y]` a decision rule per tau-orbit, `prior[a]` the prior mass of each relevant
    x-orbit (`x_orbits[a]`), or None when unknown."""

    rule: np.ndarray
    prior: np.ndarray | None
    x_orbits: np.ndarray



def _rat(x: float) -> Fraction:
    """A float hint as a small rational (never negative; theory/exact_rows.py's rounding)."""
    if not math.isfinite(x) or x <= 0:
        return Fraction(0)
    return snap(RATIONAL_DENOMINATOR)(x)



def _rref(rows: list[list], rhs: list, width: int) -> list[list[Fraction]]:
    """The nonzero rows of the reduced row echelon form of [rows | rhs] (unique, so the
    same in either arithmetic): in Fractions for a small system, by python-flint for a
    large one (policy.FLINT_RREF_ENTRIES, benchmarks/bench_rref.py) or when python-flint
    is loaded already (a verification that solves only small systems does not load it)."""
    if len(rows) * (width + 1) > FLINT_RREF_ENTRIES or "flint" in sys.modules:
        return rref_flint(rows, rhs, width)
    return rref_fractions(rows, rhs, width)


def rref_fractions(rows: list[list], rhs: list, width: int) -> list[list[Fraction]]:
    """_rref by Gauss-Jordan elimination in Fractions."""
    m = [[Fraction(v) for v in [*row, b]] for row, b in zip(rows, rhs, strict=True)]
    rank = 0
    for c in range(width + 1):
        pivot = next((r for r in range(rank, len(m)) if m[r][c]), None)
        if pivot is None:
            continue
        m[rank], m[pivot] = m[pivot], m[rank]
        top = m[rank]
        inverse = 1 / top[c]
        top[c:] = [v * inverse for v in top[c:]]
        for r, row in enumerate(m):
            factor = row[c]
            if r != rank and factor:
                row[c:] = [v - factor * t for v, t in zip(row[c:], top[c:], strict=True)]
        rank += 1
        if rank == len(m):
            break
    return m[:rank]


def rref_flint(rows: list[list], rhs: list, width: int) -> list[list[Fraction]]:
    """_rref by python-flint's exact fmpq_mat."""
    from flint import fmpq_mat  # lazy: python-flint only where a large system is solved

    entries = [to_fmpq(v) for row, b in zip(rows, rhs, strict=True) for v in [*row, b]]
    reduced, rank = fmpq_mat(len(rows), width + 1, entries).rref()
    return [[from_fmpq(reduced[r, c]) if reduced[r, c] != 0 else ZERO
             for c in range(width + 1)] for r in range(rank)]


def _solve_near(rows: list[list], rhs: list,
                guess: Sequence[float]) -> list[Fraction] | None:
    """An exact solution of rows @ z = rhs near `guess`: free variables take the guess
    (rationalised), pivot variables are solved exactly. None if inconsistent."""
    u = len(guess)
    if not rows:
        return [_rat(g) for g in guess]
    reduced = _rref(rows, rhs, u)
    pivots = [next(c for c, v in enumerate(row) if v) for row in reduced]
    if u in pivots:
        return None  # 0 = nonzero: inconsistent
    free = [c for c in range(u) if c not in set(pivots)]
    z = [ZERO] * u
    for c in free:
        z[c] = _rat(float(guess[c]))
    for row, c in zip(reduced, pivots, strict=True):
        z[c] = row[u] - sum((row[f] * z[f] for f in free if row[f]), ZERO)
    return z


def _support(rule_row: np.ndarray) -> list[int]:
    top = float(np.max(rule_row))
    supp = [j for j, v in enumerate(rule_row) if v > SUPPORT_TOL * max(top, 1.0)]
    return supp or [int(np.argmax(rule_row))]



def for_accuracy(rule: list, party: int):
    """A decision argument for input_accuracies: a party's sub-problem uses one half for
    both own bits (only the inputs with that bit are read)."""
    return rule if party == 0 else (rule, rule)


def relevant_mask(k: int, party: int, bit: int | None) -> np.ndarray | None:
    """The inputs of a sub-problem: every input (None) for the observer, else the party's
    inputs with own bit `bit` (KOV eq. 4)."""
    return None if bit is None else own_bits(k, party) == bit


class _RuleSystem:
    """The exact rule's unknowns (the hint's fractional entries, then t) and equations."""

    def __init__(self, lambdas, gain: Scaled, party: int, orbits: Orbits, hint: WorstHint):
        n, m = gain.num.shape
        self.lambdas, self.gain, self.party, self.orbits = lambdas, gain, party, orbits
        supports = [_support(hint.rule[o]) for o in range(orbits.count)]
        self.frac = [o for o in range(orbits.count) if len(supports[o]) > 1]
        self.det = [[Fraction(int(j == supports[o][0])) for j in range(m)]
                    for o in range(orbits.count)]
        for o in self.frac:
            self.det[o] = [Fraction(0)] * m
        rule = lift_rule(orbits, self.det)
        self.det_acc = input_accuracies(lambdas, gain, party, for_accuracy(rule, party))
        # A[x, c] = sum_{tau in orbit frac[c]} P[x, tau]: transforms of the orbits' indicators
        ind = np.zeros((n, len(self.frac)), dtype=object)
        for c, o in enumerate(self.frac):
            ind[:, c] = (orbits.ids == o).astype(np.int64).tolist()
        self.A = rr_apply(lambdas, Scaled(ind, 1))
        self.unknowns = [(c, o, y) for c, o in enumerate(self.frac) for y in supports[o]]
        self.guess = [float(hint.rule[o][y]) for _, o, y in self.unknowns] + [0.0]

    def acc_row(self, a: int) -> tuple[list[Fraction], Fraction]:
        """acc[rep(a)] = row @ (unknown entries) + const."""
        x = int(self.orbits.reps[a])
        gx, A, den = self.gain.num[x], self.A, self.A.den * self.gain.den
        row = [Fraction(int(A.num[x, c]) * int(gx[y]), den) for c, _, y in self.unknowns]
        return row, Fraction(int(self.det_acc.num[x]), self.det_acc.den)

    def initial_tight(self, hint: WorstHint) -> set[int]:
        """The prior's support, or (no prior) the x-orbits at the float minimum."""
        tight = _prior_support(hint)
        if tight:
            return tight
        est = {}
        for a in hint.x_orbits.tolist():
            row, const = self.acc_row(a)
            est[a] = float(const) + sum(float(r) * g for r, g in zip(row, self.guess,
                                                                  strict=False))
        lo = min(est.values())
        return {a for a, v in est.items() if v <= lo + 1e-9 * max(1.0, abs(lo))}

    def equations(self, tight: set[int]) -> tuple[list[list[Fraction]], list[Fraction]]:
        """acc[a] = t on the tight orbits; each fractional row of the rule sums to 1."""
        rows, rhs = [], []
        for a in sorted(tight):
            row, const = self.acc_row(a)
            rows.append([*row, Fraction(-1)])
            rhs.append(-const)
        for c in range(len(self.frac)):
            rows.append([Fraction(int(cc == c)) for cc, _, _ in self.unknowns] + [Fraction(0)])
            rhs.append(Fraction(1))
        return rows, rhs

    def rule(self, z: list[Fraction]) -> list:
        full = [list(r) for r in self.det]
        for (_, o, y), v in zip(self.unknowns, z[:-1], strict=True):
            full[o][y] = v
        return lift_rule(self.orbits, full)

    def below(self, rule: list, t: Fraction, x_orbits: list[int]) -> set[int]:
        """The x-orbits whose exact accuracy under `rule` is below t."""
        acc = input_accuracies(self.lambdas, self.gain, self.party,
                               for_accuracy(rule, self.party))
        return {a for a in x_orbits
                if Fraction(int(acc.num[int(self.orbits.reps[a])]), acc.den) < t}


def exact_worst_rule(lambdas: Sequence[Fraction], gain: Scaled, party: int, bit: int | None,
                     orbits: Orbits, hint: WorstHint) -> tuple[list | None, str]:
    """An exact worst-case rule for RR (KOV eq. 6; eq. 4 per own bit), constant on tau-orbits,
    from a float hint. Complementary slackness with the LP dual: every input in the prior's
    support is tight, acc[x] = t; the rule keeps the hint's support. Unknowns: the hint's
    fractional entries and t; solved exactly, then every other input is checked (acc >= t)
    and a violated one is made tight and the system solved again.

    Returns (rule[tau][y] over all tau, '') or (None, reason).
    """
    system = _RuleSystem(lambdas, gain, party, orbits, hint)
    if not system.frac:
        return lift_rule(orbits, system.det), ""
    tight = system.initial_tight(hint)
    for _ in range(MAX_REPAIR_ROUNDS):
        z = _solve_near(*system.equations(tight), system.guess)
        if z is None:
            return None, "the rule's complementary-slackness equations are inconsistent"
        if any(v < 0 for v in z[:-1]):
            return None, "the exact rule on the hint's support has a negative entry"
        rule = system.rule(z)
        below = system.below(rule, z[-1], hint.x_orbits.tolist())
        if not below:
            return rule, ""
        tight |= below
    return None, "the rule's tight set did not settle"


def _prior_support(hint: WorstHint) -> set[int]:
    if hint.prior is None or not np.any(hint.prior > 0):
        return set()
    top = float(np.max(hint.prior))
    return {a for a, p in zip(hint.x_orbits.tolist(), hint.prior.tolist(), strict=False)
            if p > SUPPORT_TOL * top}


class _PriorSystem:
    """The exact prior's unknowns (the prior mass of one input of each x-orbit in the hint's
    support) and the tie equations, with the transforms they need cached."""

    def __init__(self, lambdas, gain: Scaled, orbits: Orbits, hint: WorstHint,
                 support: list[int]):
        self.lambdas, self.gain, self.orbits, self.support = lambdas, gain, orbits, support
        self.members = orbit_members(orbits)
        self.sizes = [int(orbits.sizes[a]) for a in support]
        self.supports = [_support(hint.rule[o]) for o in range(orbits.count)]
        self.g_int = [[int(v) for v in gain.num[int(orbits.reps[a])]] for a in support]
        self.columns: dict[int, list[int]] = {}  # K[a, o] = sum_{x in a} P[x, rep(o)]
        self.cached: dict[tuple[int, int], list[int]] = {}

    def fill_columns(self, needed: set[int]) -> None:
        new = sorted(o for o in needed if o not in self.columns)
        if not new:
            return
        e = np.zeros((self.gain.num.shape[0], len(new)), dtype=object)
        for c, o in enumerate(new):
            e[int(self.orbits.reps[o]), c] = 1
        col = rr_apply(self.lambdas, Scaled(e, 1)).num
        for c, o in enumerate(new):
            self.columns[o] = [int(sum(col[self.members[a], c].tolist())) for a in self.support]

    def equations(self, ties: set[tuple[int, int]]) -> tuple[list[list], list]:
        """sum pi = 1, and score(o, y) = score(o, y0) for every tie (y0: o's first output)."""
        self.fill_columns({o for o, _ in ties})
        rows: list[list] = [self.sizes]
        rhs: list = [1]
        for o, y in sorted(ties):
            if (o, y) not in self.cached:
                y0, K = self.supports[o][0], self.columns[o]
                self.cached[(o, y)] = [K[i] * (self.g_int[i][y] - self.g_int[i][y0])
                                       for i in range(len(self.support))]
            rows.append(self.cached[(o, y)])
            rhs.append(0)
        return rows, rhs

    def prior(self, pi: list[Fraction]) -> list[Fraction]:
        out = [Fraction(0)] * self.gain.num.shape[0]
        for share, a in zip(pi, self.support, strict=True):
            for x in self.members[a]:
                out[x] = share
        return out

    def violations(self, prior: list[Fraction], mask, ties) -> set[tuple[int, int]]:
        """(o, y) with a score above the rule's output y0 that is not yet tied."""
        scores = rr_apply(self.lambdas,
                          weighted_gain(self.gain, Scaled.from_fractions(prior), mask))
        added = set()
        for o in range(self.orbits.count):
            row = scores.num[int(self.orbits.reps[o])]
            y0 = self.supports[o][0]
            added |= {(o, y) for y in range(len(row)) if row[y] > row[y0] and (o, y) not in ties}
        return added


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
    k = gain.num.shape[0].bit_length() - 1
    mask = relevant_mask(k, party, bit)
    support = sorted(_prior_support(hint))
    if not support or hint.prior is None:
        return None, "no prior hint"
    system = _PriorSystem(lambdas, gain, orbits, hint, support)
    mass_of = dict(zip(hint.x_orbits.tolist(), hint.prior.tolist(), strict=True))
    guess = [float(mass_of[a]) / size for a, size in zip(support, system.sizes, strict=True)]
    ties = {(o, y) for o in range(orbits.count) for y in system.supports[o][1:]}
    if near_ties:
        ties |= _near_ties(lambdas, gain, orbits, mask, system.members, support, guess,
                           system.supports)
    for _ in range(MAX_REPAIR_ROUNDS):
        pi = _solve_near(*system.equations(ties), guess)
        if pi is None:
            return None, "the prior's complementary-slackness equations are inconsistent"
        if any(r < 0 for r in pi):
            return None, "the exact prior on the hint's support has a negative entry"
        prior = system.prior(pi)
        added = system.violations(prior, mask, ties)
        if not added:
            return prior, ""
        ties |= added
    return None, "the prior's ties did not settle"


def _near_ties(lambdas, gain: Scaled, orbits: Orbits, mask, members, support, guess,
               supports) -> set[tuple[int, int]]:
    """(o, y) whose float score at the hint's prior is within 1e-9 of the rule's output."""
    n, m = gain.num.shape
    prior = np.zeros(n)
    for share, a in zip(guess, support, strict=False):
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


# The fallbacks round to multiples of 2^-DYADIC_BITS: one common denominator, so the
# exact transforms of a rule or a prior on 2^12 inputs stay small integers (Fraction's
# limit_denominator gives each entry its own denominator, and their lcm explodes).
DYADIC_BITS = 60


def rationalised_rule(orbits: Orbits, rule_hint: np.ndarray) -> list:
    """A fallback: the hint's rows rounded to multiples of 2^-DYADIC_BITS, each made an
    exact distribution by giving its largest entry what the row lacks (or has too much)
    (theory/exact_rows.py)."""
    rows = exact_stochastic(rule_hint[:orbits.count], rounding=dyadic(DYADIC_BITS),
                            completion=LARGEST)
    return lift_rule(orbits, rows)


def rationalised_prior(orbits: Orbits, hint: WorstHint, n: int) -> list[Fraction] | None:
    """A fallback: the hint's prior rounded to multiples of 2^-DYADIC_BITS, normalised
    exactly (any distribution gives a valid upper bound, only a weaker one); None without
    a prior or its mass."""
    if hint.prior is None or not has_mass(hint.prior):
        return None
    mass = exact_distribution(hint.prior, rounding=dyadic(DYADIC_BITS))
    prior = [Fraction(0)] * n
    members = orbit_members(orbits)
    for share, a in zip(mass, hint.x_orbits.tolist(), strict=False):
        for x in members[a]:  # the orbit's mass, shared equally by its members
            prior[x] = share / int(orbits.sizes[a])
    return prior


def repair_unknowns(hint: WorstHint) -> int:
    """The unknowns of the exact repair of a hint: its fractional rule entries and the
    inputs (orbits) in its prior's support."""
    fractional = sum(len(s) for s in map(_support, hint.rule) if len(s) > 1)
    return fractional + len(_prior_support(hint))


def rule_repair_work(orbits: Orbits, hint: WorstHint, lambdas: Sequence[Fraction]) -> int:
    """The row reduction of the rule's first repair (exact_worst_rule), in operations on
    64-bit words: equations x unknowns x min(both) x the words of the lambdas' products.
    Its equations are the tight orbits (the prior's support; without a prior, at most every
    relevant x-orbit) and one sum per fractional tau-orbit; its unknowns the fractional
    entries and t. Measured (python-flint, lambdas from epsilon, 6-7 parties): 1.4e6 took
    35 ms, 5.1e6 to 3.8e7 took 0.8-3.5 s, and each of those failed (docs/benchmarks.md)."""
    supports = [_support(hint.rule[o]) for o in range(orbits.count)]
    fractional = [len(s) for s in supports if len(s) > 1]
    tight = len(_prior_support(hint)) or len(hint.x_orbits)
    equations, unknowns = tight + len(fractional), sum(fractional) + 1
    return equations * unknowns * min(equations, unknowns) * product_words(lambdas)


def uniform_prior(n: int, relevant: np.ndarray | None) -> list[Fraction]:
    idx = range(n) if relevant is None else np.flatnonzero(relevant).tolist()
    share = Fraction(1, len(idx))
    prior = [Fraction(0)] * n
    for x in idx:
        prior[x] = share
    return prior

