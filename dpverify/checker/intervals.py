"""The checker of interval certificates (`dpverify-interval-certificate/1` on all 2^k
inputs, `dpverify-orbit-interval-certificate/1` on orbits; docs/theory.md 2.13,
docs/format.md).

Such a certificate declares value <= OPT <= bound and gives only what proves it: the
lambdas, a prior (none for the average: uniform) and a decision rule (none for the
average: RR's argmax rule of this checker's own scores). No mu: the bound of a prior is
sum_s v[s], v[s] the right-hand side of (C) at s (core.best_scores of core.right_columns'
transforms), since (C) holds with equality for mu = S^-1 v and sum(mu) = sum(v) (theory.md
2.3). Both ends are computed on the gains mapped to [0, 1] (g' = (g - lo) / span over the
table's range: accuracies map by the same affine map) in outward-rounded arithmetic:
fixed point on all inputs (checker/fixedpoint.py), arb balls on orbits (here, through
factors.transform with a class factor in balls). Then bound >= lo + span (upper end) and
value <= lo + span (lower end) are checked exactly. Status `bracket` only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from flint import arb, arb_poly, ctx, fmpq

from dpverify.checker import claim, core, factors, fixedpoint
from dpverify.checker.fields import (
    CertificateFormatError,
    Json,
    Matrix,
    get_field,
    rational,
    show,
    vector,
)
from dpverify.checker.orbits import class_names, orbit_grid, read_classes
from dpverify.checker.tabulation import gains_by_value, orbit_table, spec_values
from dpverify.spec.model import MultipartySpec

ARB_BITS = 96  # arb's working precision on orbits
AVERAGE = "an average-case interval certificate (the prior is uniform, the rule RR's argmax)"


def check_interval(spec: MultipartySpec, cert: Json) -> claim.CheckResult:
    """A certificate on all 2^k inputs, checked in fixed point."""
    head = claim.read_header(spec, cert, claim.INTERVAL_FORMAT)
    k = spec.parties
    # f(x) as (numerator, denominator) pairs: hashing a million Fractions takes seconds
    keys = [(v.numerator, v.denominator) for v in spec_values(spec, head.agent)]
    outputs, by_value = gains_by_value(spec, head.agent, [Fraction(*t) for t in set(keys)])
    claim.read_outputs(cert, outputs)
    up, lo = claim.read_levels(spec, head, list(range(k)), claim.party_names(k))
    units = Units(by_value)
    index = {(v.numerator, v.denominator): i for i, v in enumerate(by_value)}
    rows, idx = [units.rows[v] for v in by_value], [index[t] for t in keys]
    grid = core.class_grid((1,) * k, head.agent.party - 1 if head.agent.party else None)
    if head.accuracy == "average":
        claim.unused(head.upper, "prior", "upper.", AVERAGE)
        claim.unused(head.lower, "decision", "lower.", AVERAGE)
        bound, value = fixedpoint.average_bits(grid, up, lo, rows, idx)
    else:
        prior = vector(head.upper, "prior", 1 << k, "upper.")
        if not claim.distribution(prior, grid.mass):
            raise claim.CheckFailed("upper.prior is not a distribution (entries >= 0 summing "
                                    "to 1)")
        rules = claim.read_rules(head.lower, grid.parts, 1 << k, len(outputs))
        bound = fixedpoint.prior_bound_bits(grid, up, prior, rows, idx)
        value = fixedpoint.rule_value_bits(grid, lo, rules, rows, idx)
    return conclude(head, units, bound, value)


def check_orbit_interval(spec: MultipartySpec, cert: Json) -> claim.CheckResult:
    """A certificate on orbits of classes of parties, checked in arb balls."""
    head = claim.read_header(spec, cert, claim.ORBIT_INTERVAL_FORMAT)
    classes = read_classes(spec, cert, head.agent.party)
    grid = orbit_grid(classes, head.agent.party)
    outputs, gain_rows = orbit_table(spec, head.agent, classes, grid.points())
    claim.read_outputs(cert, outputs)
    up, lo = claim.read_levels(spec, head, [c[0] - 1 for c in classes], class_names(classes))
    units = Units(dict(enumerate(gain_rows)))
    gain = [units.rows[i] for i in range(len(gain_rows))]
    sizes = [len(c) for c in classes]
    old = ctx.prec
    ctx.prec = ARB_BITS
    try:
        rays = tuple(BallClass(n, lam) for n, lam in zip(sizes, up, strict=True))
        rr = tuple(BallClass(n, lam) for n, lam in zip(sizes, lo, strict=True)) \
            if lo != up else rays
        if head.accuracy == "average":
            claim.unused(head.upper, "masses", "upper.", AVERAGE)
            claim.unused(head.lower, "decision", "lower.", AVERAGE)
            prior = [arb(s) / arb(2) ** spec.parties for s in grid.mass]
            scores = label_scores(grid, rays, prior, gain)
            bound = upper_end(ball_sum(core.best_scores(scores, best_upper)))
            scores = scores if rr is rays else label_scores(grid, rr, prior, gain)
            value = lower_end(ball_sum(core.best_scores(scores, best_lower)))
        else:
            prior = worst_masses(head.upper, spec.parties, grid)
            bound = upper_end(ball_sum(core.best_scores(label_scores(grid, rays, prior, gain),
                                                        best_upper)))
            rules = claim.read_rules(head.lower, grid.parts, len(grid.mass), len(outputs))
            value = rule_value(grid, rr, rules, gain)
    finally:
        ctx.prec = old
    return conclude(head, units, bound, value)


def worst_masses(upper: Json, k: int, grid: core.Grid) -> list[Any]:
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
    if not claim.distribution(masses, [1] * len(masses)):
        raise claim.CheckFailed("upper.masses is not a distribution over the input orbits "
                                "(entries >= 0 summing to 1)")
    return [ball(p) for p in masses]


class Units:
    """The gains' range over every row (exact): g' = (g - lo) / span; a constant table
    has span 1."""

    def __init__(self, rows: Mapping[Any, Sequence[Fraction]]):
        flat = [Fraction(v) for row in rows.values() for v in row]
        self.lo, hi = min(flat), max(flat)
        self.span = hi - self.lo if hi > self.lo else Fraction(1)
        self.rows = {key: tuple((Fraction(v) - self.lo) / self.span for v in row)
                     for key, row in rows.items()}


def conclude(head: claim.Header, units: Units, bound_unit: Fraction, value_unit: Fraction
             ) -> claim.CheckResult:
    """The declared ends against the enclosures (in the user's units)."""
    bound = rational(get_field(head.upper, "bound", (str, int), "upper."), "upper.bound")
    value = rational(get_field(head.lower, "value", (str, int), "lower."), "lower.value")
    if head.status != "bracket":
        raise claim.CheckFailed(f"status {head.status!r}: an interval certificate proves a "
                                "bracket (status `bracket`)")
    proved_bound = units.lo + units.span * bound_unit
    proved_value = units.lo + units.span * value_unit
    if bound < proved_bound:
        raise claim.CheckFailed(f"upper.bound = {show(bound)} is below the prior's bound, at "
                                f"most {show(proved_bound)} by this checker's arithmetic")
    if value > proved_value:
        raise claim.CheckFailed(f"lower.value = {show(value)} is above the rule's accuracy, "
                                f"at least {show(proved_value)} by this checker's arithmetic")
    if value > bound:
        raise claim.CheckFailed(f"value {show(value)} exceeds bound {show(bound)}")
    return claim.bracket_result(value, bound, " (interval arithmetic)")


# ------------------------------------------------------------------ orbits: arb balls


def ball(x: Fraction) -> Any:
    return arb(fmpq(x.numerator, x.denominator))


def upper_end(b: Any) -> Fraction:
    man, exp = b.upper().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def lower_end(b: Any) -> Fraction:
    man, exp = b.lower().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def best_upper(column: Sequence[Any]) -> Any:
    """The largest upper end of a column of balls (an upper end of the best score)."""
    return max((c.upper() for c in column), key=upper_end)


def best_lower(column: Sequence[Any]) -> Any:
    """RR's rule takes, on each corner orbit, the output of largest lower end: its value
    is at least the sum of those lower ends."""
    return max((c.lower() for c in column), key=lower_end)


class BallClass:
    """factors.ClassOrbits in balls, normalised: a class of n parties at lambda = p / q,
    sum_j y_j A^j B^(n - j) with A = (p z + q) / (p + q), B = (p + q z) / (p + q), split in
    halves recursively (theory.md 2.8). The powers of A and B are kept for this
    certificate only."""

    def __init__(self, n: int, lam: Fraction):
        p, q = lam.numerator, lam.denominator
        s = ball(Fraction(p + q))
        self.n, self.points, self.size, self.scale = n, n + 1, n + 1, 1
        self.base = {"A": arb_poly([ball(Fraction(q)) / s, ball(Fraction(p)) / s]),
                     "B": arb_poly([ball(Fraction(p)) / s, ball(Fraction(q)) / s])}
        self.powers: dict[tuple[str, int], Any] = {}

    def power(self, name: str, e: int) -> Any:
        if e <= 1:
            return self.base[name] if e else arb_poly([1])
        if (name, e) not in self.powers:
            self.powers[(name, e)] = self.power(name, e // 2) * self.power(name, e - e // 2)
        return self.powers[(name, e)]

    def mix(self, chunks: list[list[Any]]) -> list[list[Any]]:
        fibers = [self.fiber(list(y)) for y in zip(*chunks, strict=True)]
        return [list(column) for column in zip(*fibers, strict=True)]

    def fiber(self, y: list[Any]) -> list[Any]:
        def half(lo: int, hi: int) -> Any:
            if hi - lo == 1:
                return arb_poly([y[lo]])
            mid = (lo + hi) // 2
            return half(lo, mid) * self.power("B", hi - mid) + \
                self.power("A", mid - lo) * half(mid, hi)

        coeffs = half(0, self.n + 1).coeffs()
        return list(coeffs) + [arb(0)] * (self.n + 1 - len(coeffs))


def label_scores(grid: core.Grid, axes: Sequence[factors.Factor], prior: Sequence[Any],
                 gain: Sequence[Sequence[Fraction]]) -> list[list[list[Any]]]:
    """Per part b and output y, M (prior g'_y 1_part): core.right_columns in balls."""
    g = [[ball(v) for v in row] for row in gain]
    return [[factors.transform(axes, [p * row[y] if part == b else arb(0)
                              for p, row, part in zip(prior, g, grid.part, strict=True)])
             for y in range(len(gain[0]))] for b in range(grid.parts)]


def ball_sum(best: Sequence[Sequence[Any]]) -> Any:
    """The sum, in arb (outward rounded), over parts and corner orbits."""
    total = arb(0)
    for value in (v for part in best for v in part):
        total += value
    return total


def rule_value(grid: core.Grid, axes: Sequence[factors.Factor], rules: list[Matrix],
               gain: Sequence[Sequence[Fraction]]) -> Fraction:
    """A lower end of min_W sum_y g'(W, y) (M (|J| Q_y))_W / |W|: core.accuracy in balls."""
    count, m = len(grid.mass), len(gain[0])
    acc = [arb(0)] * count
    sizes = [arb(s) for s in grid.mass]
    for b, rule in enumerate(rules):
        for y in range(m):
            spread = factors.transform(axes, [ball(rule[j][y]) * sizes[j] if rule[j][y]
                                              else arb(0) for j in range(count)])
            for w in range(count):
                if grid.part[w] == b and gain[w][y]:
                    acc[w] += ball(gain[w][y]) * spread[w] / sizes[w]
    return min(lower_end(a) for a in acc)
