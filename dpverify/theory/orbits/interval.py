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
from dpverify.theory.interval import (
    PRECISION,
    ball,
    lower_of,
    orbit_transform,
    precision,
    upper_of,
)
from dpverify.theory.orbits.certificates import OrbitProblem

if TYPE_CHECKING:
    from flint import arb


def _parts(problem: OrbitProblem) -> list[list[bool] | None]:
    bits = problem.own_bits()
    if bits is None:
        return [None]
    return [[b == part for b in bits] for part in (0, 1)]


def _unit_balls(problem: OrbitProblem) -> list[list[arb]]:
    with precision(PRECISION):
        return [[ball(v) for v in row] for row in problem.units.exact]


def _scores(problem: OrbitProblem, lambdas, gains: list[list[arb]],
            masses: list[arb]) -> list[list[list[arb]]]:
    """Per part, per output y: the masses M (pi^ g'_y 1_part) on corner orbits."""
    from flint import arb  # lazy: python-flint when used

    m = len(problem.outputs)
    out = []
    with precision(PRECISION):
        for part in _parts(problem):
            columns = [[masses[w] * gains[w][y] if part is None or part[w] else arb(0)
                        for w in range(len(masses))] for y in range(m)]
            out.append(orbit_transform(problem.sizes, lambdas, columns))
    return out


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

    count = len(scores[0][0])
    rules = []
    with precision(PRECISION):
        total = arb(0)
        for part in scores:
            rule = []
            for j in range(count):
                top = max(col[j].lower() for col in part)  # exact ends, compared exactly
                tied = [y for y, col in enumerate(part) if col[j].upper() >= top]
                share = Fraction(1, len(tied))
                row = tuple(share if y in tied else Fraction(0) for y in range(len(part)))
                for y in tied:
                    total += ball(share) * part[y][j].lower()
                rule.append(row)
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
    decision = tuple(rules) if problem.own is not None else rules[0]
    hi, lo, status = declare(problem.units, bound, value)
    cert = IntervalCertificate(
        agent=agent, accuracy="average", outputs=problem.outputs,
        upper_lambdas=tuple(upper), prior=None, bound=hi, lower_lambdas=tuple(lower),
        decision=None, value=lo, status=status, classes=problem.classes,
        rule=_floats(decision, problem.own is not None))
    return cert, decision


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
    """A lower end of RR's accuracy with the rule (on corner orbits) on every input orbit."""
    from flint import arb  # lazy: python-flint when used

    space = problem.space(lower)
    sizes = space.orbit_sizes()
    m = len(problem.outputs)
    halves = [decision] if problem.own is None else list(decision)
    bits = problem.own_bits()
    gains = _unit_balls(problem)
    acc = [arb(0)] * space.count
    with precision(PRECISION):
        size_balls = [arb(s) for s in sizes]
        for b, half in enumerate(halves):
            columns = [[ball(half[j][y]) * size_balls[j] if half[j][y] else arb(0)
                        for j in range(space.count)] for y in range(m)]
            spread = orbit_transform(problem.sizes, lower, columns)
            for w in range(space.count):
                if bits is not None and bits[w] != b:
                    continue
                total = arb(0)
                for y in range(m):
                    total += gains[w][y] * spread[y][w]
                acc[w] = acc[w] + total / size_balls[w]
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
    if not party:
        return tuple(tuple(Fraction(v) for v in row) for row in decision)
    return tuple(tuple(tuple(Fraction(v) for v in row) for row in half) for half in decision)


def _floats(decision, party: bool) -> np.ndarray:
    rows = decision if not party else [r for half in decision for r in half]
    out = np.array([[float(v) for v in row] for row in rows], dtype=np.float64)
    return out if not party else out.reshape(2, -1, out.shape[1])


def orbit_count(problem: OrbitProblem) -> int:
    return math.prod(n + 1 for n in problem.sizes)


__all__ = ["average_interval", "orbit_count", "prior_bound", "rule_accuracies",
           "uniform_bound", "uniform_masses", "uniform_scores", "worst_interval"]
