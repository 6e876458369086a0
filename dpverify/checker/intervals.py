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

import functools
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from flint import arb, arb_mat, arb_poly, ctx, fmpq

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
MATRIX_CLASS = 128  # a class of at most this many parties is mixed by its matrix
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
    # a gain depends on f only: rows of the same Fraction objects, converted once
    units = Units({tuple(map(id, row)): row for row in gain_rows})
    keys = [tuple(map(id, row)) for row in gain_rows]
    own = classes.index([head.agent.party]) if head.agent.party else None
    old = ctx.prec
    ctx.prec = ARB_BITS
    try:
        balls = {key: [ball(v) for v in row] for key, row in units.rows.items()}
        gain = [balls[key] for key in keys]
        rays = tuple(BallClass(len(c), lam) for c, lam in zip(classes, up, strict=True))
        rr = tuple(BallClass(len(c), lam) for c, lam in zip(classes, lo, strict=True)) \
            if lo != up else rays

        def scores(axes: Sequence[BallClass], prior: Sequence[Any]) -> Any:
            parts = core.best_scores(label_scores(grid, axes, prior, gain, own), best)
            return sum((v for part in parts for v in part), arb(0))  # outward rounded

        if head.accuracy == "average":
            claim.unused(head.upper, "masses", "upper.", AVERAGE)
            claim.unused(head.lower, "decision", "lower.", AVERAGE)
            prior = [arb(s) / arb(2) ** spec.parties for s in grid.mass]
            bound = scores(rays, prior)
            value = bound if rr is rays else scores(rr, prior)
        else:
            bound = scores(rays, worst_masses(head.upper, spec.parties, grid))
            rules = claim.read_rules(head.lower, grid.parts, len(grid.mass), len(outputs))
            value = rule_value(grid, rr, rules, gain, own)
        bound, value = exact(bound.upper()), exact(value.lower())
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


def exact(x: Any) -> Fraction:
    """An end of a ball (upper() or lower(): a binary floating-point number), exactly."""
    man, exp = x.man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def best(column: Sequence[Any]) -> Any:
    """A ball holding a column's largest value (arb's max): its lower end is at most the
    score of the output of largest lower end, which RR's rule takes on that corner orbit."""
    return functools.reduce(arb.max, column)


class BallClass:
    """factors.ClassOrbits in balls, normalised: a class of n parties at lambda = p / q,
    F[a][s] = [z^s] A^a B^(n - a), A = (p z + q) / (p + q), B = (p + q z) / (p + q)
    (theory.md 2.8): up to MATRIX_CLASS parties an arb_mat, mixing all fibers in one
    product; above, each fiber's sum_a y_a A^a B^(n - a) split in halves recursively."""

    def __init__(self, n: int, lam: Fraction):
        p, q = lam.numerator, lam.denominator
        self.n, self.points, self.size, self.scale = n, n + 1, n + 1, 1
        a, b = ball(Fraction(q, p + q)), ball(Fraction(p, p + q))
        self.base = {"A": arb_poly([a, b]), "B": arb_poly([b, a])}
        self.power = functools.cache(lambda name, e: self.base[name] ** e)
        if n <= MATRIX_CLASS:
            self.rows = [[poly[s] for s in range(n + 1)] for poly in
                         (self.power("A", j) * self.power("B", n - j) for j in range(n + 1))]
            self.matrix = arb_mat(self.rows).transpose()

    def mix(self, chunks: list[list[Any]]) -> list[list[Any]]:
        if self.n <= MATRIX_CLASS:  # out[s][f] = sum_a F[a][s] chunks[a][f], rigorous in C
            return (self.matrix * arb_mat(chunks)).tolist()
        fibers = [self.fiber(list(y)) for y in zip(*chunks, strict=True)]
        return [list(column) for column in zip(*fibers, strict=True)]

    def fiber(self, y: list[Any]) -> list[Any]:
        def half(lo: int, hi: int) -> Any:
            if hi - lo == 1:
                return arb_poly([y[lo]])
            mid = (lo + hi) // 2
            return half(lo, mid) * self.power("B", hi - mid) + \
                self.power("A", mid - lo) * half(mid, hi)

        total = half(0, self.n + 1)
        return [total[s] for s in range(self.n + 1)]


def label_scores(grid: core.Grid, axes: Sequence[BallClass], prior: Sequence[Any],
                 gain: Sequence[Sequence[Any]], own: int | None) -> list[list[list[Any]]]:
    """Per part b and output y, M (prior g'_y 1_part): core.right_columns in balls. A
    party's part b lives on own bit b, where the own class's factor is its row F[b],
    positive and the same for every output: the best scores summed over the own corner
    bit are those of F[b] summed (a 1 x 1 factor)."""
    out = []
    for b in range(grid.parts):
        part = [factors.Dense([[f.rows[b][0] + f.rows[b][1]]]) if c == own else f
                for c, f in enumerate(axes)]
        out.append([factors.transform(part, [p * row[y] for p, row, x in zip(
            prior, gain, grid.part, strict=True) if x == b]) for y in range(len(gain[0]))])
    return out


def rule_value(grid: core.Grid, axes: Sequence[BallClass], rules: list[Matrix],
               gain: Sequence[Sequence[Any]], own: int | None) -> Any:
    """A ball below min_W sum_y g'(W, y) (M (|J| Q_y))_W / |W|: core.accuracy in balls; for
    a party, the rule of own bit b on the input orbits of own bit b only (the own class's
    factor: column b of its F)."""
    acc, zero = [arb(0)] * len(grid.mass), arb(0)
    balls: dict[int, Any] = {}  # each entry's ball once, by its id (alive in `rules`)

    def entry(x: Fraction) -> Any:
        return balls[id(x)] if id(x) in balls else balls.setdefault(id(x), ball(x))

    for b, rule in enumerate(rules):
        part = [factors.Dense([[r[b]] for r in f.rows]) if c == own else f
                for c, f in enumerate(axes)]
        spread = [factors.transform(part, [entry(row[y]) * s if row[y] else zero for row, s
                                           in zip(rule, grid.mass, strict=True)])
                  for y in range(len(gain[0]))]
        for i, w in enumerate(w for w, x in enumerate(grid.part) if x == b):
            acc[w] = sum((g * spread[y][i] for y, g in enumerate(gain[w])), zero) / grid.mass[w]
    return functools.reduce(arb.min, acc)
