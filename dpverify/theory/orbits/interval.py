"""Interval certificates on orbits (`dpverify-orbit-interval-certificate/1`; docs/theory.md,
"Interval brackets" and "Symmetry").

The orbit certificate of theory/orbits/certificates.py, enclosed in arb balls instead of
exact integers: with the prior's masses pi^ on input orbits and the gains g' in [0, 1],
    bound = sum_J v^_J,  v^_J = sum over parts of max_y (M (pi^ g'_y 1_part))_J
(sum_W |W| mu_W = sum_J v^_J for mu^ = N v^: the bound needs no inverse transform), and
RR's accuracy with a rule Q on corner orbits, acc_W = sum_y g'(W, y) (M (|J| Q_y))_W / |W|,
averaged (the uniform prior's argmax rule: sum_J v^_J at the lower lambdas) or minimised.
M is applied by theory/interval.py's divide and conquer on arb polynomials, so a class of
10,000 parties takes about a second per column, where exact integers take minutes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpverify.theory.certificates.interval import IntervalCertificate, declare
from dpverify.theory.exact import lambda_pq
from dpverify.theory.interval import (
    PRECISION,
    ball,
    lower_of,
    orbit_transform,
    precision,
    upper_of,
)
from dpverify.theory.orbits.certificates import OrbitProblem
from dpverify.theory.per_object import PerObject

if TYPE_CHECKING:
    from flint import arb


def _own_rest(problem: OrbitProblem, lambdas) -> tuple[list[int], list]:
    """For a party: the other classes' sizes and lambdas (its own class left out)."""
    keep = [c for c in range(len(problem.sizes)) if c != problem.own]
    return [problem.sizes[c] for c in keep], [lambdas[c] for c in keep]


def _own_orbits(problem: OrbitProblem) -> list[list[int]]:
    """For a party: the orbits of own bit 0 and of own bit 1, each in order; the r-th of
    each has the r-th orbit of the other classes (mixed radix with one coordinate fixed)."""
    bits = problem.own_bits()
    assert bits is not None
    return [[w for w, bit in enumerate(bits) if bit == b] for b in (0, 1)]


def _unit_balls(problem: OrbitProblem) -> list[list[tuple[int, arb]]]:
    """The normalised gains as balls, sparse: per input orbit the (output, gain) of its
    non-zero gains (most of a `sum`'s 41 are 0), once per row object."""
    with precision(PRECISION):
        sparse = PerObject(lambda row: [(y, ball(v)) for y, v in enumerate(row) if v])
        return [sparse(row) for row in problem.units.exact]


def _columns(m: int, orbits: Sequence[int], gains: list[list[tuple[int, arb]]],
             masses: list[arb]) -> list[list[arb]]:
    """Per output y, the column masses[w] g'(w, y) over `orbits` (zeros shared)."""
    from flint import arb  # lazy: python-flint when used

    zero = arb(0)
    columns = [[zero] * len(orbits) for _ in range(m)]
    for i, w in enumerate(orbits):
        for y, g in gains[w]:
            columns[y][i] = masses[w] * g
    return columns


def _scores(problem: OrbitProblem, lambdas, gains: list[list[tuple[int, arb]]],
            masses: list[arb]) -> list[list[list[arb]]]:
    """Per part, per output y: the masses M (pi^ g'_y 1_part) on corner orbits (`gains`
    as _unit_balls). For a
    party, part b lives on the orbits of own bit b, where the own class's factor is the
    column b of its matrix (theory/orbits/space.py: the coefficients of A^b B^(1 - b),
    summing to 1), the same for every output: so the scores are given on the other
    classes' corner orbits, summed over the own corner bit (M of the other classes on the
    part's orbits; a maximum over outputs is the same on both own corner bits)."""
    m = len(problem.outputs)
    with precision(PRECISION):
        if problem.own is None:
            columns = _columns(m, range(len(masses)), gains, masses)
            return [orbit_transform(problem.sizes, lambdas, columns)]
        sizes, rest = _own_rest(problem, lambdas)
        return [orbit_transform(sizes, rest, _columns(m, orbits, gains, masses))
                for orbits in _own_orbits(problem)]


def _best_upper(scores: list[list[list[arb]]]) -> Fraction:
    """An upper end of sum_J sum_parts max_y scores: the balls' upper ends, summed in arb
    (outward rounded)."""
    from flint import arb  # lazy: python-flint when used

    count = len(scores[0][0])
    with precision(PRECISION):
        total = arb(0)
        for part in scores:
            for j in range(count):
                # the upper ends are exact binary numbers: arb compares them exactly
                total += max(col[j].upper() for col in part)
        return upper_of(total)


# Outputs whose scores' balls overlap the best one's are tied: the rule splits its mass
# evenly among them (any rule gives a valid lower bound; when the balls cannot tell the
# outputs apart, as for XOR at k = 10,000 where they differ by 3^-10000, an even split is
# as good as the exact argmax on average and is never far from it on any input).
def _best_lower(scores: list[list[list[arb]]]) -> tuple[Fraction, list]:
    """A lower end of RR's accuracy (the masses' sum, i.e. the average) with the rule that
    takes, on each corner orbit, the output of the largest lower end, split evenly with
    the outputs whose balls reach it; and that rule (per part: rows of Fractions)."""
    from flint import arb  # lazy: python-flint when used

    m = len(scores[0])
    rules = []
    rows: dict[tuple[int, ...], tuple] = {}  # one row object per set of tied outputs
    with precision(PRECISION):
        total = arb(0)
        for part in scores:
            rule = []
            for column in zip(*part, strict=True):
                top = max(c.lower() for c in column)  # exact ends, compared exactly
                tied = tuple(y for y, c in enumerate(column) if c.upper() >= top)
                if tied not in rows:
                    share = Fraction(1, len(tied))
                    rows[tied] = tuple(share if y in tied else Fraction(0) for y in range(m))
                lowers = arb(0)
                for y in tied:
                    lowers += column[y].lower()
                total += lowers / len(tied)
                rule.append(rows[tied])
            rules.append(tuple(rule))
        return lower_of(total), rules


def uniform_masses(problem: OrbitProblem, relevant: Sequence[int] | None = None
                   ) -> list[Fraction]:
    """The uniform prior's masses |W| / (number of inputs), on the relevant orbits."""
    sizes = problem.space([Fraction(1)] * len(problem.sizes)).orbit_sizes()
    chosen = range(len(sizes)) if relevant is None else relevant
    total = sum(sizes[w] for w in chosen)
    out = [Fraction(0)] * len(sizes)
    for w in chosen:
        out[w] = Fraction(sizes[w], total)
    return out


def _uniform_balls(problem: OrbitProblem) -> list[arb]:
    """The uniform prior's masses |W| / 2^k as balls."""
    from flint import arb  # lazy: python-flint when used

    sizes = problem.space([Fraction(1)] * len(problem.sizes)).orbit_sizes()
    with precision(PRECISION):
        total = arb(2) ** sum(problem.sizes)
        return [arb(s) / total for s in sizes]


def uniform_scores(problem: OrbitProblem, lambdas) -> list[list[list[arb]]]:
    """The uniform prior's scores (per part, per output) at the lambdas."""
    return _scores(problem, lambdas, _unit_balls(problem), _uniform_balls(problem))


def average_interval(agent: str, problem: OrbitProblem, lower, upper,
                     scores_up: list | None = None) -> tuple[IntervalCertificate, tuple]:
    """Uniform prior, RR's argmax rule at the lower lambdas (by the lower ends of the
    scores, ties split: `_best_lower`); with that rule (exact rows) for the worst case's
    uniform candidate. `scores_up`: uniform_scores at the upper lambdas, if computed."""
    up = scores_up if scores_up is not None else uniform_scores(problem, upper)
    bound = _best_upper(up)
    low = up if tuple(lower) == tuple(upper) else uniform_scores(problem, lower)
    value, rules = _best_lower(low)
    decision = _corner_rules(problem, rules)
    hi, lo, status = declare(problem.units, bound, value)
    cert = IntervalCertificate(
        agent=agent, accuracy="average", outputs=problem.outputs,
        upper_lambdas=tuple(upper), prior=None, bound=hi, lower_lambdas=tuple(lower),
        decision=None, value=lo, status=status, classes=problem.classes,
        rule=_floats(decision, problem.own is not None))
    return cert, decision


def argmax_decision(problem: OrbitProblem, scores: list) -> tuple:
    """The decision of RR's argmax rule of the scores (per part, per output: e.g.
    uniform_scores; ties split as in `_best_lower`)."""
    return _corner_rules(problem, _best_lower(scores)[1])


def _corner_rules(problem: OrbitProblem, rules: list) -> tuple:
    """The decision on every corner orbit from the rules of `_best_lower` on the corner
    orbits of _scores: for a party, part b's rule on the other classes' corner orbits
    holds on both own corner bits."""
    if problem.own is None:
        return rules[0]
    index = [0] * orbit_count(problem)
    for orbits in _own_orbits(problem):
        for r, j in enumerate(orbits):
            index[j] = r
    return tuple(tuple(rule[r] for r in index) for rule in rules)


def uniform_bound(problem: OrbitProblem, scores_up: list, bit: int | None) -> Fraction:
    """An upper end of the bound of the uniform prior on all inputs (bit None) or on the
    inputs with own bit `bit` (a party): twice the uniform prior's part of that bit."""
    if bit is None:
        return _best_upper(scores_up)
    return 2 * _best_upper([scores_up[bit]])


def prior_bound(problem: OrbitProblem, upper, prior_mass: Sequence[Fraction]) -> Fraction:
    """An upper end of the bound of a prior (its masses on the input orbits)."""
    with precision(PRECISION):
        masses = [ball(v) for v in prior_mass]
    return _best_upper(_scores(problem, upper, _unit_balls(problem), masses))


def rule_accuracies(problem: OrbitProblem, lower, decision) -> list[Fraction]:
    """A lower end of RR's accuracy with the rule (on corner orbits) on every input orbit.
    For a party, the rule of own bit b on the input orbits of own bit b: the own class's
    row b of its matrix (RR's p / (p + q) to keep the bit, q / (p + q) to flip it) merges
    the rule's two own corner bits, then M of the other classes."""
    from flint import arb  # lazy: python-flint when used

    sizes = problem.space(lower).orbit_sizes()
    m = len(problem.outputs)
    gains = _unit_balls(problem)
    acc = [arb(0)] * len(sizes)
    with precision(PRECISION):
        zero = arb(0)
        sparse = PerObject(lambda row: [(y, ball(q)) for y, q in enumerate(row) if q])

        def masses(terms) -> list[arb]:
            """sum of weight |J| Q[J] over the terms (weight, Q, J): a row over outputs."""
            out = [zero] * m
            for weight, rule, j in terms:
                for y, q in sparse(rule[j]):
                    out[y] = out[y] + weight * q * sizes[j]
            return out

        if problem.own is None:
            parts = [(list(range(len(sizes))),
                      [masses([(1, decision, j)]) for j in range(len(sizes))],
                      list(problem.sizes), list(lower))]
        else:
            p, q = lambda_pq(lower[problem.own])
            keep, flip = ball(Fraction(p, p + q)), ball(Fraction(q, p + q))
            own = _own_orbits(problem)
            parts = [(own[b], [masses([(keep, rule, j), (flip, rule, i)])
                               for j, i in zip(own[b], own[1 - b], strict=True)],
                      *_own_rest(problem, lower)) for b, rule in enumerate(decision)]
        for orbits, rows, classes, lams in parts:
            spread = orbit_transform(classes, lams, [list(c) for c in zip(*rows, strict=True)])
            for r, w in enumerate(orbits):
                total = zero
                for y, g in gains[w]:
                    total = total + g * spread[y][r]
                acc[w] = total / sizes[w]
        return [lower_of(a) for a in acc]


def worst_interval(agent: str, problem: OrbitProblem, lower, upper,
                   prior_mass: Sequence[Fraction] | None, decision,
                   notes: Sequence[str] = (), *, uniform_bit: int | None = None,
                   scores_up: list | None = None, value: Fraction | None = None
                   ) -> IntervalCertificate:
    """From exact prior masses (None: the uniform prior, on own bit `uniform_bit` for a
    party) and an exact rule: the bracket in arb balls. `scores_up` (the uniform prior's
    scores) and `value` (the rule's lower end) when already computed."""
    if prior_mass is None:
        scores_up = scores_up if scores_up is not None else uniform_scores(problem, upper)
        bound = uniform_bound(problem, scores_up, uniform_bit)
    else:
        bound = prior_bound(problem, upper, prior_mass)
    if value is None:
        value = min(rule_accuracies(problem, lower, decision))
    hi, lo, status = declare(problem.units, bound, value)
    party = problem.own is not None
    return IntervalCertificate(
        agent=agent, accuracy="worst", outputs=problem.outputs, upper_lambdas=tuple(upper),
        prior=None if prior_mass is None else tuple(Fraction(v) for v in prior_mass),
        bound=hi, lower_lambdas=tuple(lower), decision=_exact(decision, party), value=lo,
        status=status, notes=tuple(notes), classes=problem.classes,
        uniform_bit=uniform_bit, rule=_floats(decision, party))


def _exact(decision, party: bool) -> tuple:
    """The decision's rows as tuples of Fractions, once per row object (the argmax rule
    of _best_lower repeats one row object per set of tied outputs)."""
    exact = PerObject(lambda r: tuple(v if type(v) is Fraction else Fraction(v) for v in r))
    if not party:
        return tuple(exact(r) for r in decision)
    return tuple(tuple(exact(r) for r in half) for half in decision)


def _floats(decision, party: bool) -> np.ndarray:
    rows = decision if not party else [r for half in decision for r in half]
    floats = PerObject(lambda r: [float(v) for v in r])
    out = np.array([floats(r) for r in rows], dtype=np.float64)
    return out if not party else out.reshape(2, -1, out.shape[1])


def orbit_count(problem: OrbitProblem) -> int:
    return math.prod(n + 1 for n in problem.sizes)


__all__ = ["argmax_decision", "average_interval", "orbit_count", "prior_bound", "rule_accuracies",
           "uniform_bound", "uniform_masses", "uniform_scores", "worst_interval"]
