"""Exact certificates on orbits, for symmetric problems at any number of parties
(`dpverify-orbit-certificate/1`; docs/theory.md, "Symmetry" and "Certificates").

The certificate of theory/certificates (a prior pi and mu over the 2^k inputs, one corner
inequality per corner and label) averaged over the symmetry group: pi and mu are constant
on orbits, and the inequality of a corner s depends on s only through its orbit J:

    sum_W M[W, J] mu_W  >=  sum_W M[W, J] pi_W gain(W, l)      for every orbit J, label l  (C)

(theory/orbits/space.py for M). By multilinearity (C) then holds for every rank-one DP tensor, and
bound = sum_x mu_x = sum_W |W| mu_W bounds the accuracy of every DP protocol under pi, hence
its worst-case accuracy; with pi uniform it bounds the average accuracy (KOV 2015, proof of
Theorem 3.1). The lower bound is randomized response with a rule constant on corner orbits,
its accuracy computed exactly on orbits.

A party agent's own party is a class of its own (n = 1): its label (y0, y1) separates per
own bit, as in theory/certificates/bounds.py.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from fractions import Fraction
from typing import ClassVar

import numpy as np

from dpverify.records import record
from dpverify.theory.certificates.format import BRACKET, PROVED, UNPROVED, Certificate
from dpverify.theory.exact import first_argmax, row_max
from dpverify.theory.orbits.space import OrbitArray, OrbitSpace, apply_m, apply_n, masses
from dpverify.theory.units import Units, units_of

FORMAT = "dpverify-orbit-certificate/1"


@record(eq=False)
class OrbitCertificate(Certificate):
    """A Certificate whose `prior` and `mu` are per-input values on each input orbit and
    whose `decision[J][y]` (a party: `decision[b][J][y]`) is a rule on each corner orbit
    of the `classes`; `gain` has one row per input orbit and the lambdas one entry per
    class."""

    classes: tuple[tuple[int, ...], ...] = ()

    format_name: ClassVar[str] = FORMAT

    def _layout(self) -> dict:
        return {"classes": [list(c) for c in self.classes]}


# --------------------------------------------------------------------------- problem


@record(eq=False)
class OrbitProblem:
    """One agent's problem on orbits: the classes, the agent's gains on every input orbit
    (`gain[W][y]`, normalised to [0, 1] inside: w = lo + span w'), and the own party's
    class (`own`, a class of one party) for a party agent, else None."""

    classes: tuple[tuple[int, ...], ...]
    outputs: tuple[Fraction, ...]
    gain: tuple[tuple[Fraction, ...], ...]
    own: int | None

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(c) for c in self.classes)

    def space(self, lambdas: Sequence[Fraction]) -> OrbitSpace:
        return OrbitSpace(self.sizes, tuple(Fraction(v) for v in lambdas))

    @functools.cached_property
    def units(self) -> Units:
        """The gains' units (theory/units.py): w = lo + span w'."""
        return units_of(self.gain)

    @functools.cached_property
    def unit_gain(self) -> OrbitArray:
        """The normalised gains w' on the input orbits, exactly."""
        return OrbitArray.from_fractions(self.units.exact)

    def own_bits(self) -> list[int] | None:
        """The own party's bit in every input orbit (a party agent), else None."""
        if self.own is None:
            return None
        space = OrbitSpace(self.sizes, (Fraction(1),) * len(self.sizes))
        return [space.weights(o)[self.own] for o in range(space.count)]


def part_masks(problem: OrbitProblem) -> list[np.ndarray | None]:
    """The input orbits each part of a label ranges over (theory/certificates/bounds.py)."""
    bits = problem.own_bits()
    if bits is None:
        return [None]
    arr = np.array(bits)
    return [arr == 0, arr == 1]


def label_scores(problem: OrbitProblem, space: OrbitSpace, gain: OrbitArray,
                 prior_mass: OrbitArray) -> list[OrbitArray]:
    """Per part, the masses of the scores: |J| sum_W M[W, J] pi_W gain(W, y), over the
    part's inputs (= M (pi^ gain_y), with pi^ the prior's masses)."""
    weighted = gain.num * prior_mass.num[:, :1]
    out = []
    for mask in part_masks(problem):
        num = weighted if mask is None else np.where(mask[:, None], weighted, 0)
        out.append(apply_m(space, OrbitArray(num.astype(object), gain.den * prior_mass.den)))
    return out


def best_labels(parts: list[OrbitArray]) -> OrbitArray:
    """v^_J = sum over parts of max_y scores^_J[y]: the masses of the best label's right-hand
    side of (C) (a positive factor |J| per row leaves the maximum where it is)."""
    v = sum((row_max(p.num) for p in parts[1:]), row_max(parts[0].num))
    return OrbitArray(np.array(v, dtype=object)[:, None], parts[0].den)


def upper_from_scores(space: OrbitSpace, parts: list[OrbitArray]
                      ) -> tuple[OrbitArray, Fraction, OrbitArray]:
    """mu^ = N v^ (the masses of mu = S^-1 v), the bound sum_W mu^_W = sum_x mu_x (=
    sum_J v^_J), and v^: (C) holds with equality at the best label."""
    v = best_labels(parts)
    mu = apply_n(space, v)
    return mu, Fraction(sum(int(m) for m in mu.num[:, 0].tolist()), mu.den), v


def upper_from_prior(problem: OrbitProblem, space: OrbitSpace, gain: OrbitArray,
                     prior_mass: OrbitArray) -> tuple[OrbitArray, Fraction, OrbitArray]:
    return upper_from_scores(space, label_scores(problem, space, gain, prior_mass))


def check_upper(space: OrbitSpace, mu: OrbitArray, v: OrbitArray) -> str:
    """(C) for every corner orbit at its best label, on masses: M mu^ >= v^, exactly (''
    or the first failure). The independent checker (dpverify/checker/orbits.py) checks
    every label from scratch."""
    lhs = apply_m(space, mu)
    for j, (a, b) in enumerate(zip(lhs.num[:, 0].tolist(), v.num[:, 0].tolist(), strict=True)):
        if a * v.den < b * lhs.den:
            short = Fraction(b, v.den) - Fraction(a, lhs.den)
            return f"corner orbit {space.weights(j)}: (C) fails by {float(short):.3g}"
    return ""


def rule_value(problem: OrbitProblem, space: OrbitSpace, gain: OrbitArray, decision,
               worst: bool) -> Fraction:
    """RR's exact accuracy with a rule constant on corner orbits: acc_W = sum_y gain(W, y)
    (S Q_y)_W, whose masses are M (|J| Q_y); averaged over the inputs or minimised."""
    sizes = space.orbit_sizes()
    halves = [decision] if problem.own is None else list(decision)
    spread = [apply_m(space, masses(OrbitArray.from_fractions(h), sizes)) for h in halves]
    bits = problem.own_bits()
    acc = []
    for w in range(space.count):
        r = spread[0 if bits is None else bits[w]]
        total = sum(int(g) * int(q) for g, q in zip(gain.num[w].tolist(), r.num[w].tolist(),
                                                    strict=True))
        acc.append(Fraction(total, gain.den * r.den * sizes[w]))
    if worst:
        return min(acc)
    return sum((a * s for a, s in zip(acc, sizes, strict=True)), Fraction(0)) / 2 ** space.parties


def average_value(v: OrbitArray) -> Fraction:
    """sum_J v^_J: RR's average accuracy with the argmax rule, when v^ = best_labels of the
    score masses under the uniform prior (which carry the prior 2^-k)."""
    return Fraction(sum(int(a) for a in v.num[:, 0].tolist()), v.den)


def argmax_rule(problem: OrbitProblem, parts: list[OrbitArray]):
    """RR's optimal average-case rule on corner orbits from the uniform prior's scores
    (KOV eq. 5; per own bit, eq. 2); ties to the first output."""
    rules = []
    for scores in parts:
        rule = []
        for row in scores.num.tolist():
            best = first_argmax(row)
            rule.append(tuple(Fraction(int(y == best)) for y in range(len(row))))
        rules.append(tuple(rule))
    return rules[0] if problem.own is None else tuple(rules)


# --------------------------------------------------------------------------- certificates


def status(value: Fraction, bound: Fraction, exact_lambdas: bool) -> str:
    if value > bound:
        return str(UNPROVED)
    return str(PROVED) if exact_lambdas and value == bound else str(BRACKET)


def finish(agent: str, accuracy: str, problem: OrbitProblem, lower, upper,
           prior_mass: OrbitArray, mu: OrbitArray, bound: Fraction, v: OrbitArray, decision,
           value: Fraction, exact: bool, notes: tuple[str, ...] = ()) -> OrbitCertificate:
    """Check (C) at the best labels (normalised units), map the bounds back to the user's
    gains (mu = span mu' + lo pi, bound = span bound' + lo, value = span value' + lo), and
    build the certificate, with per-input values (masses / |W|)."""
    units = problem.units
    up = problem.space(upper)
    failure = check_upper(up, mu, v)
    sizes = up.orbit_sizes()
    pi = [Fraction(int(p), prior_mass.den * s) for p, s in
          zip(prior_mass.num[:, 0].tolist(), sizes, strict=True)]
    mu_user = units.dual_to_user([Fraction(int(m), mu.den * s) for m, s in
                                  zip(mu.num[:, 0].tolist(), sizes, strict=True)], pi)
    bound, value = units.to_user(bound), units.to_user(value)
    result = status(value, bound, exact)
    if failure:
        result = str(UNPROVED)
        notes = (*notes, f"self-check failed: {failure}")
    return OrbitCertificate(
        agent=agent, accuracy=accuracy, outputs=problem.outputs, classes=problem.classes,
        gain=problem.gain, upper_lambdas=tuple(upper), prior=tuple(pi), mu=tuple(mu_user),
        bound=bound, lower_lambdas=tuple(lower), decision=decision, value=value,
        status=result, notes=tuple(notes))


def average_certificate(agent: str, problem: OrbitProblem, lower, upper,
                        exact: bool) -> OrbitCertificate:
    """Uniform prior 2^-k (masses |W| / 2^k), mu = S^-1 v at the upper lambdas; the argmax
    rule at the lower ones, whose value is sum_J v^_J there."""
    gain = problem.unit_gain
    up = problem.space(upper)
    prior = OrbitArray(np.array(up.orbit_sizes(), dtype=object)[:, None], 2 ** up.parties)
    parts = label_scores(problem, up, gain, prior)
    mu, bound, v = upper_from_scores(up, parts)
    low = problem.space(lower)
    if tuple(lower) != tuple(upper):
        parts = label_scores(problem, low, gain, prior)
    return finish(agent, "average", problem, lower, upper, prior, mu, bound, v,
                  argmax_rule(problem, parts), average_value(best_labels(parts)), exact)


def worst_certificate(agent: str, problem: OrbitProblem, lower, upper, exact: bool,
                      prior_mass: Sequence[Fraction], decision,
                      notes: tuple[str, ...] = ()) -> OrbitCertificate:
    """From a prior (its mass on each input orbit, summing to 1) and a rule (exact
    rationals, rows distributions): the bound at the upper lambdas, the rule's worst-case
    value at the lower ones. Both are exact whatever the prior and the rule; they meet
    when both are optimal (LP duality)."""
    gain = problem.unit_gain
    up = problem.space(upper)
    prior = OrbitArray.from_fractions([[Fraction(m)] for m in prior_mass])
    mu, bound, v = upper_from_prior(problem, up, gain, prior)
    value = rule_value(problem, problem.space(lower), gain, decision, worst=True)
    return finish(agent, "worst", problem, lower, upper, prior, mu, bound, v, decision, value,
                  exact, notes)
