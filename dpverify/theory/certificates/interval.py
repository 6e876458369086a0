"""Interval certificates: the bracket of a certificate proved in outward-rounded floating
point instead of exact rationals (docs/theory.md, "Interval brackets";
`dpverify-interval-certificate/1` on all 2^k inputs, `dpverify-orbit-interval-certificate/1`
on orbits, theory/orbits/interval.py).

The certificate of bounds.py proves value <= OPT <= bound from a prior pi and a rule Q:
    bound = sum_s v[s],  v[s] = max over labels of sum_x T_s[x] pi[x] gain(x, label)
(sum(mu) = sum(v) for mu = S^-1 v, theory.md 2.3: mu only makes the bound checkable by
the linear inequalities (C); the bound itself is sum(v)), and value = RR's accuracy at the
lower lambdas with Q. Both are computed here in floats with their rounding errors bounded
(theory/interval.py), on the gains in [0, 1] (theory/units.py), and declared outward: the
bound's upper end and the value's lower end, moved out by MARGIN (of the gains' span) so
that the independent checker's own enclosure (dpverify/checker/intervals.py) fits inside.
The bracket is then about 1e-12 wide, and still a proof.

The average case needs no rule in the certificate: the uniform prior's scores at the lower
lambdas give RR's argmax rule (KOV eqs. (2), (5)), whose accuracy is sum_tau max_y of
them; the checker takes the argmax of its own scores.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import field
from fractions import Fraction
from typing import ClassVar

import numpy as np

from dpverify.records import record
from dpverify.theory.certificates.bounds import own_bits
from dpverify.theory.certificates.format import BRACKET, UNPROVED, nested_strings
from dpverify.theory.exact import rational_string
from dpverify.theory.interval import (
    TINY,
    Budget,
    ceil_to,
    exact_sum,
    floor_to,
    kron_budget,
    kron_floats,
    lower_end,
    upper_end,
)
from dpverify.theory.units import Units, units_of

FORMAT = "dpverify-interval-certificate/1"
ORBIT_FORMAT = "dpverify-orbit-interval-certificate/1"
# The declared ends are moved outward by this much (normalised units: times the gains'
# span), beyond the construction's own error bound: room for the checker's arithmetic
# (fixed point at 2^-66 or arb balls, theory.md 2.13), so that it accepts what is proved.
MARGIN = Fraction(1, 1 << 46)


class Arithmetic(enum.StrEnum):
    """How a certificate's bracket was computed (a result's `proof.arithmetic`)."""

    EXACT = "exact"
    INTERVAL = "interval"


@record(eq=False)
class IntervalCertificate:
    """value <= OPT <= bound, proved in outward-rounded arithmetic (docs/format.md).

    `prior` is per input (all inputs) or the masses of the input orbits (`classes` set);
    None is the uniform prior (on the inputs of own bit `uniform_bit` when that is set).
    `decision` is Q[tau][y] (a party: Q[b][tau][y]) on inputs or corner orbits; None is
    RR's argmax rule at the lower lambdas (the average). `rule` is the decision as
    floats, for the result (not part of the certificate)."""

    agent: str
    accuracy: str
    outputs: tuple[Fraction, ...]
    upper_lambdas: tuple[Fraction, ...]
    prior: tuple[Fraction, ...] | None
    bound: Fraction
    lower_lambdas: tuple[Fraction, ...]
    decision: tuple | None
    value: Fraction
    status: str
    notes: tuple[str, ...] = ()
    classes: tuple[tuple[int, ...], ...] | None = None
    uniform_bit: int | None = None  # a worst case's uniform prior on this own bit (party)
    rule: np.ndarray | None = field(default=None, repr=False)
    # the size limit that kept the bracket from narrowing, in words naming the option that
    # raises it (the result's reason when the bracket is wider than --tol); not certified
    limit: str | None = field(default=None, repr=False)

    arithmetic: ClassVar[Arithmetic] = Arithmetic.INTERVAL

    @property
    def format_name(self) -> str:
        return FORMAT if self.classes is None else ORBIT_FORMAT

    @property
    def width(self) -> Fraction:
        return self.bound - self.value

    def to_json(self, problem: str) -> dict:
        upper: dict = {"lambdas": [rational_string(v) for v in self.upper_lambdas]}
        key = "masses" if self.classes is not None else "prior"
        if self.prior is not None:
            upper[key] = [rational_string(v) for v in self.prior]
        elif self.accuracy == "worst":  # the uniform prior, on all inputs or one own bit
            upper[key] = uniform_name(self.uniform_bit)
        upper["bound"] = rational_string(self.bound)
        lower: dict = {"lambdas": [rational_string(v) for v in self.lower_lambdas]}
        if self.decision is not None:
            lower["decision"] = nested_strings(self.decision)
        lower["value"] = rational_string(self.value)
        out: dict = {"format": self.format_name, "problem": problem, "agent": self.agent,
                     "accuracy": self.accuracy,
                     "outputs": [_json_output(y) for y in self.outputs]}
        if self.classes is not None:
            out["classes"] = [list(c) for c in self.classes]
        out.update({"upper": upper, "lower": lower, "status": str(self.status)})
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def uniform_name(bit: int | None) -> str:
    """The certificate's name of a uniform prior: on all inputs, or on one own bit's."""
    return "uniform" if bit is None else f"uniform:own-bit-{bit}"


def _json_output(y: Fraction):
    y = Fraction(y)
    return y.numerator if y.denominator == 1 else rational_string(y)


def declare(units: Units, bound: Fraction, value: Fraction) -> tuple[Fraction, Fraction, str]:
    """Normalised enclosures (an upper end of the bound, a lower end of the value) as the
    declared numbers in the user's units, moved out by MARGIN and rounded outward to short
    binary fractions; with the status (`bracket`, or `unproved` if they cross)."""
    hi, lo = ceil_to(bound + MARGIN), floor_to(value - MARGIN)
    status = BRACKET if lo <= hi else UNPROVED
    return units.to_user(hi), units.to_user(lo), str(status)


def _parts(k: int, party: int) -> list[np.ndarray | None]:
    if party == 0:
        return [None]
    bits = own_bits(k, party)
    return [bits == 0, bits == 1]


def _scores(lambdas: Sequence[Fraction], columns: np.ndarray,
            parts: list[np.ndarray | None]) -> list[np.ndarray]:
    """Per part, S (columns restricted to the part), in floats (n x m each)."""
    return [kron_floats(lambdas, columns if mask is None else columns * mask[:, None])
            for mask in parts]


def _best(parts: list[np.ndarray]) -> np.ndarray:
    """sum over parts of the largest score of each corner (one float sum for a party)."""
    total = parts[0].max(axis=1)
    for more in parts[1:]:
        total = total + more.max(axis=1)
    return total


def average_interval(agent: str, outputs, gain_exact, party: int,
                     lower: Sequence[Fraction], upper: Sequence[Fraction]
                     ) -> IntervalCertificate:
    """The average case (uniform prior, RR's argmax rule) in floats: the scores
    S (g_y 1_part) (g the gains in [0, 1], each float within u of the exact), whose best
    label sums to n times the bound at the upper lambdas and to n times the argmax rule's
    value at the lower ones."""
    units = units_of(gain_exact)
    g = units.unit
    n, m = g.shape
    k = n.bit_length() - 1
    parts = _parts(k, party)
    # the gain's rounding, the transform, the sum over the parts
    budget = kron_budget(k).then(1 + len(parts) - 1)
    total = budget.times(n * len(parts))
    up = _scores(upper, g, parts)
    bound = upper_end(exact_sum(_best(up)), total) / n
    low = up if tuple(lower) == tuple(upper) else _scores(lower, g, parts)
    value = lower_end(exact_sum(_best(low)), total) / n
    rule = np.stack([_argmax_rule(s) for s in low])
    hi, lo, status = declare(units, bound, value)
    return IntervalCertificate(
        agent=agent, accuracy="average", outputs=tuple(outputs),
        upper_lambdas=tuple(upper), prior=None, bound=hi, lower_lambdas=tuple(lower),
        decision=None, value=lo, status=status, rule=rule[0] if party == 0 else rule)


def _argmax_rule(scores: np.ndarray) -> np.ndarray:
    rule = np.zeros(scores.shape)
    rule[np.arange(scores.shape[0]), np.argmax(scores, axis=1)] = 1.0
    return rule


def prior_bound(lambdas: Sequence[Fraction], g: np.ndarray, party: int,
                prior: Sequence[Fraction]) -> Fraction:
    """An upper end of sum_s max_label sum_x T_s[x] pi[x] g(x, label) (normalised gains):
    the bound of the prior (module docstring), in floats with its error bounded."""
    n = g.shape[0]
    k = n.bit_length() - 1
    parts = _parts(k, party)
    pi = np.array([float(p) for p in prior])
    # pi's rounding, g's rounding, their product (and, if it underflows, TINY more; the
    # transform's rows keep it below 2 TINY); the transform; the sum over the parts
    budget = kron_budget(k).then(3 + len(parts) - 1, 2 * TINY)
    return upper_end(exact_sum(_best(_scores(lambdas, pi[:, None] * g, parts))),
                     budget.times(n * len(parts)))


def rule_value(lambdas: Sequence[Fraction], g: np.ndarray, party: int, decision,
               relevant: np.ndarray | None = None) -> Fraction:
    """A lower end of RR's worst-case accuracy with the rule (normalised gains):
    min_x sum_y g(x, y) (S Q_(b(x)))[x, y], in floats with its error bounded."""
    n, m = g.shape
    k = n.bit_length() - 1
    halves = [decision] if party == 0 else list(decision)
    spread = [kron_floats(lambdas, np.array([[float(v) for v in row] for row in half]))
              for half in halves]
    if party == 0:
        mixed = spread[0]
    else:
        bits = own_bits(k, party)
        mixed = np.where(bits[:, None] == 1, spread[1], spread[0])
    acc = (g * mixed).sum(axis=1)
    if relevant is not None:
        acc = acc[relevant]
    # Q's rounding, the transform, g's rounding, the product, at most m - 1 additions;
    # m terms, each with the transform's absolute error and one product's
    base = kron_budget(k)
    budget = Budget(base.roundings + 3 + m - 1, m * (base.absolute + 2 * TINY))
    return lower_end(float(acc.min()), budget)


def worst_interval(agent: str, outputs, gain_exact, party: int, lower: Sequence[Fraction],
                   upper: Sequence[Fraction], prior: Sequence[Fraction], decision,
                   notes: Sequence[str] = ()) -> IntervalCertificate:
    """The worst case from an exact prior (a distribution on the inputs) and an exact rule
    (rows distributions): the prior's bound at the upper lambdas, the rule's worst-case
    accuracy at the lower ones, each enclosed in floats."""
    units = units_of(gain_exact)
    g = units.unit
    bound = prior_bound(upper, g, party, prior)
    value = rule_value(lower, g, party, decision)
    hi, lo, status = declare(units, bound, value)
    rule = np.array([[[float(v) for v in row] for row in half] for half in
                     ([decision] if party == 0 else decision)])
    return IntervalCertificate(
        agent=agent, accuracy="worst", outputs=tuple(outputs), upper_lambdas=tuple(upper),
        prior=tuple(Fraction(p) for p in prior), bound=hi, lower_lambdas=tuple(lower),
        decision=_exact_decision(decision, party), value=lo, status=status,
        notes=tuple(notes), rule=rule[0] if party == 0 else rule)


def _exact_decision(decision, party: int) -> tuple:
    if party == 0:
        return tuple(tuple(Fraction(v) for v in row) for row in decision)
    return tuple(tuple(tuple(Fraction(v) for v in row) for row in half) for half in decision)


__all__ = ["FORMAT", "MARGIN", "ORBIT_FORMAT", "Arithmetic", "IntervalCertificate",
           "average_interval", "declare", "prior_bound", "rule_value", "worst_interval"]
