"""The checker of interval certificates (`dpverify-interval-certificate/1` on all 2^k
inputs, `dpverify-orbit-interval-certificate/1` on orbits; docs/theory.md 2.13;
docs/format.md).

Such a certificate declares value <= OPT <= bound and gives only what proves it: the
lambdas, a prior (none for the average: uniform) and a decision rule (none for the
average: RR's argmax rule, taken here from this checker's own scores). No mu: the bound of
a prior pi is sum_s v[s], v[s] = the right-hand side of (C) at s, the best label's score
(theory.md 2.3: (C) holds with equality for mu = S^-1 v, and sum(mu) = sum(v)). It is read
into the one representation of checker/core.py (the grid, the parts, the masses, the
right-hand sides per part and output, their best labels by core.best_scores), and both
ends are computed on the gains mapped to [0, 1] (g' = (g - lo) / span, lo and span the
table's range: accuracies map by the same affine map, rules and priors being
distributions) in outward-rounded arithmetic: fixed point on all inputs
(checker/fixedpoint.py), arb balls on orbits (checker/balls.py, through the transform of
checker/factors.py). Then bound >= lo + span (upper end) and value <= lo + span (lower
end) are checked exactly. Status `bracket` only: interval arithmetic never proves
equality.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from flint import arb, ctx

from dpverify.checker.balls import (
    ARB_BITS,
    ball,
    ball_sum,
    class_factors,
    label_scores,
    lower_end,
    rule_value,
    upper_end,
)
from dpverify.checker.claim import (
    INTERVAL_FORMAT,
    ORBIT_INTERVAL_FORMAT,
    CheckFailed,
    CheckResult,
    Header,
    bracket_result,
    distribution,
    party_names,
    read_header,
    read_levels,
    read_outputs,
    read_rules,
    unused,
)
from dpverify.checker.core import Grid, best_scores, class_grid
from dpverify.checker.fields import CertificateFormatError, Json, get_field, rational, show, vector
from dpverify.checker.fixedpoint import average_bits, prior_bound_bits, rule_value_bits
from dpverify.checker.orbits import class_names, orbit_grid, read_classes
from dpverify.checker.tabulation import gains_by_value, orbit_table, spec_values
from dpverify.spec.model import MultipartySpec

AVERAGE = "an average-case interval certificate (the prior is uniform, the rule RR's argmax)"


def check_interval(spec: MultipartySpec, cert: Json) -> CheckResult:
    """A certificate on all 2^k inputs, checked in fixed point."""
    head = read_header(spec, cert, INTERVAL_FORMAT)
    k = spec.parties
    # f(x) as (numerator, denominator) pairs: hashing a million Fractions takes seconds
    keys = [(v.numerator, v.denominator) for v in spec_values(spec, head.agent)]
    outputs, by_value = gains_by_value(spec, head.agent, [Fraction(*t) for t in set(keys)])
    read_outputs(cert, outputs)
    up, lo = read_levels(spec, head, list(range(k)), party_names(k))
    units = Units(by_value)
    distinct = list(by_value)
    rows = [units.unit(v) for v in distinct]  # g' per distinct function value
    index = {(v.numerator, v.denominator): i for i, v in enumerate(distinct)}
    idx = [index[t] for t in keys]
    grid = class_grid((1,) * k, head.agent.party - 1 if head.agent.party else None)
    if head.accuracy == "average":
        unused(head.upper, "prior", "upper.", AVERAGE)
        unused(head.lower, "decision", "lower.", AVERAGE)
        bound, value = average_bits(grid, up, lo, rows, idx)
    else:
        prior = vector(head.upper, "prior", 1 << k, "upper.")
        if not distribution(prior, grid.mass):
            raise CheckFailed("upper.prior is not a distribution (entries >= 0 summing to 1)")
        rules = read_rules(head.lower, grid.parts, 1 << k, len(outputs))
        bound = prior_bound_bits(grid, up, prior, rows, idx)
        value = rule_value_bits(grid, lo, rules, rows, idx)
    return conclude(head, units, bound, value)


def check_orbit_interval(spec: MultipartySpec, cert: Json) -> CheckResult:
    """A certificate on orbits of classes of parties, checked in arb balls."""
    head = read_header(spec, cert, ORBIT_INTERVAL_FORMAT)
    classes = read_classes(spec, cert, head.agent.party)
    grid = orbit_grid(classes, head.agent.party)
    outputs, gain_rows = orbit_table(spec, head.agent, classes, grid.points())
    read_outputs(cert, outputs)
    up, lo = read_levels(spec, head, [c[0] - 1 for c in classes], class_names(classes))
    units = Units({i: tuple(row) for i, row in enumerate(gain_rows)})
    gain = [units.unit(i) for i in range(len(gain_rows))]
    sizes = [len(c) for c in classes]
    old = ctx.prec
    ctx.prec = ARB_BITS
    try:
        rays = class_factors(sizes, up)
        if head.accuracy == "average":
            unused(head.upper, "masses", "upper.", AVERAGE)
            unused(head.lower, "decision", "lower.", AVERAGE)
            total = arb(2) ** spec.parties
            prior = [arb(s) / total for s in grid.mass]
            scores = label_scores(grid, rays, prior, gain)
            bound = upper_end(ball_sum(best_scores(scores, best_upper)))
            if lo != up:
                scores = label_scores(grid, class_factors(sizes, lo), prior, gain)
            value = lower_end(ball_sum(best_scores(scores, best_lower)))
        else:
            prior = worst_masses(head.upper, spec.parties, grid)
            bound = upper_end(ball_sum(best_scores(label_scores(grid, rays, prior, gain),
                                                   best_upper)))
            rules = read_rules(head.lower, grid.parts, len(grid.mass), len(outputs))
            value = rule_value(grid, class_factors(sizes, lo), rules, gain)
    finally:
        ctx.prec = old
    return conclude(head, units, bound, value)


def best_upper(column: Sequence[Any]) -> Any:
    """The largest upper end of a column of balls (an upper end of the best score)."""
    return max((c.upper() for c in column), key=upper_end)


def best_lower(column: Sequence[Any]) -> Any:
    """RR's rule takes, on each corner orbit, the output of largest lower end: its value
    is at least the sum of those lower ends."""
    return max((c.lower() for c in column), key=lower_end)


def worst_masses(upper: Json, k: int, grid: Grid) -> list[Any]:
    """upper.masses: a distribution over the input orbits, or `uniform` (masses |W| / 2^k),
    or for a party `uniform:own-bit-b` (twice that on the orbits of own bit b, else 0)."""
    raw = upper.get("masses")
    if isinstance(raw, str):
        total = arb(2) ** k
        if raw == "uniform":
            return [arb(s) / total for s in grid.mass]
        for b in (0, 1):
            if raw == f"uniform:own-bit-{b}" and grid.parts == 2:
                return [2 * arb(s) / total if part == b else arb(0)
                        for s, part in zip(grid.mass, grid.part, strict=True)]
        raise CertificateFormatError("`upper.masses` is a list of rationals, `uniform`, or "
                                     "for a party `uniform:own-bit-0` or `uniform:own-bit-1`")
    masses = vector(upper, "masses", len(grid.mass), "upper.")
    if not distribution(masses, [1] * len(masses)):
        raise CheckFailed("upper.masses is not a distribution over the input orbits "
                          "(entries >= 0 summing to 1)")
    return [ball(p) for p in masses]


class Units:
    """The gains' range over every row (exact): g' = (g - lo) / span; a constant table
    has span 1."""

    def __init__(self, rows: Mapping[Hashable, Sequence[Fraction]]):
        flat = [Fraction(v) for row in rows.values() for v in row]
        self.lo, hi = min(flat), max(flat)
        self.span = hi - self.lo if hi > self.lo else Fraction(1)
        self.rows = {key: tuple((Fraction(v) - self.lo) / self.span for v in row)
                     for key, row in rows.items()}

    def unit(self, key: Hashable) -> tuple[Fraction, ...]:
        return self.rows[key]


def conclude(head: Header, units: Units, bound_unit: Fraction, value_unit: Fraction
             ) -> CheckResult:
    """The declared ends against the enclosures (in the user's units)."""
    bound = rational(get_field(head.upper, "bound", (str, int), "upper."), "upper.bound")
    value = rational(get_field(head.lower, "value", (str, int), "lower."), "lower.value")
    if head.status != "bracket":
        raise CheckFailed(f"status {head.status!r}: an interval certificate proves a "
                          "bracket (status `bracket`)")
    proved_bound = units.lo + units.span * bound_unit
    proved_value = units.lo + units.span * value_unit
    if bound < proved_bound:
        raise CheckFailed(f"upper.bound = {show(bound)} is below the prior's bound, at most "
                          f"{show(proved_bound)} by this checker's arithmetic")
    if value > proved_value:
        raise CheckFailed(f"lower.value = {show(value)} is above the rule's accuracy, at "
                          f"least {show(proved_value)} by this checker's arithmetic")
    if value > bound:
        raise CheckFailed(f"value {show(value)} exceeds bound {show(bound)}")
    return bracket_result(value, bound, " (interval arithmetic)")
