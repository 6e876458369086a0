"""The checker of interval certificates (`dpverify-interval-certificate/1` on all 2^k
inputs, `dpverify-orbit-interval-certificate/1` on orbits; docs/theory.md, "Interval
brackets"; docs/format.md).

Such a certificate declares value <= OPT <= bound and gives only what proves it: the
lambdas, a prior (none for the average: uniform) and a decision rule (none for the
average: RR's argmax rule, taken here from this checker's own scores). No mu: the bound of
a prior pi is sum_s v[s], v[s] = max over labels of sum_x T_s[x] pi[x] gain(x, label)
(theory.md 2.3: sum(mu) = sum(v) for mu = S^-1 v). Both ends are recomputed here, by this
checker's own outward-rounded arithmetic, on the gains mapped to [0, 1]
(g' = (g - lo) / span, lo and span the table's range: accuracies map by the same affine
map, rules and priors being distributions):

* all inputs: fixed point on Python integers. A non-negative number x in [0, 1] is the
  integer floor(x 2^F); S_i = [[p, q], [q, p]] / (p + q) is applied as
  floor((a lo + b hi) / 2^G) with a = floor(2^G p / (p + q)), b = floor(2^G q / (p + q)):
  every step rounds down and every weight is non-negative, so each computed entry is at
  most the exact one, and at most E = 2k + 2 units below it (the inputs' floor, then per
  pass at most 2^(F + 1 - G) <= 1/2 for the weights and 1 for the floor: the exact weights
  of a row sum to 1, so earlier errors are not amplified). The 2^k entries of a column
  are fields of W bits of one Python integer, so a pass is a few operations on it.
* orbits: python-flint's arb balls (outward rounded, with exponents that never under- or
  overflow), the classes' generating polynomials multiplied by divide and conquer.

Then bound >= lo + span (upper end) and value <= lo + span (lower end) are checked
exactly. Status `bracket` only: interval arithmetic never proves equality.
"""

from __future__ import annotations

import math
from fractions import Fraction

from flint import arb, arb_poly, ctx, fmpq

from dpverify.checker.common import (
    INTERVAL_FORMAT,
    ORBIT_INTERVAL_FORMAT,
    CertificateFormatError,
    CheckFailed,
    CheckResult,
    check_levels,
    decision_rules,
    gains_by_value,
    get_field,
    rational,
    read_header,
    read_outputs,
    show,
    spec_values,
    vector,
)
from dpverify.checker.orbits import orbit_table, read_classes

# F: fixed-point fraction bits. The average's error is 2k + 3 units per score whatever the
# outputs; a worst case's rule value adds up to one error per output (m (2k + 2) units),
# so it gets 10 bits more (the construction leaves 2^-46 of room: m up to about 25,000).
FRACTION_BITS = 56
WORST_BITS = 66  # (plus log2 of the inputs for a prior)
WEIGHT_GUARD = 2  # G = F + 2
ARB_BITS = 96  # arb's working precision on orbits


def check_interval(spec, cert: dict) -> CheckResult:
    """A certificate on all 2^k inputs, checked in fixed point."""
    head = read_header(spec, cert, INTERVAL_FORMAT)
    agent, k = head.agent, spec.parties
    # f(x) as (numerator, denominator) pairs: hashing a million Fractions takes seconds
    keys = [(v.numerator, v.denominator) for v in spec_values(spec, agent)]
    outputs, by_value = gains_by_value(spec, agent, [Fraction(*t) for t in set(keys)])
    read_outputs(cert, outputs)
    up = vector(head.upper, "lambdas", k, "upper.")
    lo = vector(head.lower, "lambdas", k, "lower.")
    check_levels(spec, up, lo, list(range(k)), [f"party {i + 1}" for i in range(k)])
    units = _Units(by_value)
    distinct = list(by_value)
    rows = [units.unit(v) for v in distinct]  # g' per distinct function value
    index = {(v.numerator, v.denominator): i for i, v in enumerate(distinct)}
    idx = [index[t] for t in keys]
    parts = _parts(k, agent.party)
    if head.accuracy == "average":
        _no_key(head.upper, "prior", "upper.")
        _no_key(head.lower, "decision", "lower.")
        bound, value = _average_bits(k, up, lo, rows, idx, parts)
    else:
        n = 1 << k
        prior = vector(head.upper, "prior", n, "upper.")
        if any(p < 0 for p in prior) or sum(prior) != 1:
            raise CheckFailed("upper.prior is not a distribution (entries >= 0 summing to 1)")
        rules = decision_rules(head.lower, agent.party, n, len(outputs))
        bound = _prior_bound_bits(k, up, prior, rows, idx, parts)
        value = _rule_value_bits(k, lo, rules, rows, idx, agent.party)
    return _conclude(head, units, bound, value)


def check_orbit_interval(spec, cert: dict) -> CheckResult:
    """A certificate on orbits of classes of parties, checked in arb balls."""
    head = read_header(spec, cert, ORBIT_INTERVAL_FORMAT)
    agent = head.agent
    classes = read_classes(spec, cert, agent.party)
    sizes = [len(c) for c in classes]
    weights = _orbit_weights(sizes)
    outputs, gain_rows = orbit_table(spec, agent, classes, weights)
    read_outputs(cert, outputs)
    up = vector(head.upper, "lambdas", len(classes), "upper.")
    lo = vector(head.lower, "lambdas", len(classes), "lower.")
    check_levels(spec, up, lo, [c[0] - 1 for c in classes],
                 [f"class {c} (party {cls[0]}, ...)" for c, cls in enumerate(classes)])
    units = _Units({i: tuple(row) for i, row in enumerate(gain_rows)})
    gain = [units.unit(i) for i in range(len(gain_rows))]
    own = None if agent.party == 0 else classes.index([agent.party])
    count = len(weights)
    mass = _orbit_sizes(sizes)
    parts = [None] if own is None else [[o[own] == b for o in weights] for b in (0, 1)]
    old = ctx.prec
    ctx.prec = ARB_BITS
    cache: dict = {}  # the classes' polynomial powers, for this certificate only
    try:
        if head.accuracy == "average":
            _no_key(head.upper, "masses", "upper.")
            _no_key(head.lower, "decision", "lower.")
            total = arb(2) ** spec.parties
            prior = [arb(s) / total for s in mass]
            scores_up = _orbit_scores(sizes, up, prior, gain, parts, cache)
            bound = _upper_sum(scores_up)
            scores_lo = scores_up if lo == up else _orbit_scores(sizes, lo, prior, gain,
                                                                  parts, cache)
            value = _lower_argmax_sum(scores_lo)
        else:
            prior = _worst_masses(head.upper, spec.parties, mass, own, weights)
            bound = _upper_sum(_orbit_scores(sizes, up, prior, gain, parts, cache))
            rules = decision_rules(head.lower, agent.party, count, len(outputs))
            value = _orbit_rule_value(sizes, lo, rules, gain, mass, own, weights, cache)
    finally:
        ctx.prec = old
    return _conclude(head, units, bound, value)


def _worst_masses(upper: dict, k: int, mass: list[int], own, weights) -> list[arb]:
    """upper.masses: a distribution over the input orbits, or `uniform` (masses |W| / 2^k),
    or for a party `uniform:own-bit-b` (twice that on the orbits of own bit b, else 0)."""
    raw = upper.get("masses")
    if isinstance(raw, str):
        total = arb(2) ** k
        if raw == "uniform":
            return [arb(s) / total for s in mass]
        for b in (0, 1):
            if raw == f"uniform:own-bit-{b}" and own is not None:
                return [2 * arb(s) / total if o[own] == b else arb(0)
                        for s, o in zip(mass, weights, strict=True)]
        raise CertificateFormatError("`upper.masses` is a list of rationals, `uniform`, or "
                                     "for a party `uniform:own-bit-0` or `uniform:own-bit-1`")
    masses = vector(upper, "masses", len(mass), "upper.")
    if any(p < 0 for p in masses) or sum(masses) != 1:
        raise CheckFailed("upper.masses is not a distribution over the input orbits "
                          "(entries >= 0 summing to 1)")
    return [_ball(p) for p in masses]


# ------------------------------------------------------------------ shared


class _Units:
    """The gains' range over every row (exact): g' = (g - lo) / span; a constant table
    has span 1."""

    def __init__(self, rows: dict):
        flat = [Fraction(v) for row in rows.values() for v in row]
        self.lo, hi = min(flat), max(flat)
        self.span = hi - self.lo if hi > self.lo else Fraction(1)
        self._rows = {key: tuple((Fraction(v) - self.lo) / self.span for v in row)
                      for key, row in rows.items()}

    def unit(self, key) -> tuple[Fraction, ...]:
        return self._rows[key]


def _no_key(obj: dict, key: str, where: str) -> None:
    if key in obj:
        raise CertificateFormatError(f"`{where}{key}` is not part of an average-case interval "
                                     "certificate (the prior is uniform, the rule RR's argmax)")


def _conclude(head, units: _Units, bound_unit: Fraction, value_unit: Fraction
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
    return CheckResult(True, f"bracket [{float(value):.17g}, {float(bound):.17g}] width "
                             f"{float(bound - value):.3g} (interval arithmetic)",
                       bracket=(value, bound))


# ------------------------------------------------------------------ all inputs: fixed point


def _parts(k: int, party: int) -> list[list[bool] | None]:
    if party == 0:
        return [None]
    shift = k - party
    return [[((x >> shift) & 1) == b for x in range(1 << k)] for b in (0, 1)]


class _Packed:
    """Columns of 2^k non-negative integers, each a field of `width` bytes of one Python
    integer (column c, input x at field c 2^k + x; x1 the most significant bit of x)."""

    def __init__(self, k: int, columns: list[list[int]], fraction: int, extra_bits: int = 0):
        self.k, self.count, self.fraction = k, len(columns), fraction
        self.guard = fraction + WEIGHT_GUARD
        bits = max(fraction + self.guard + 2, fraction + extra_bits + 2)
        self.width = (bits + 7) // 8
        w = self.width
        encoded: dict[int, bytes] = {}

        def encode(v: int) -> bytes:
            out = encoded.get(v)
            if out is None:
                out = encoded[v] = v.to_bytes(w, "little")
            return out

        self.value = int.from_bytes(b"".join([encode(v) for col in columns for v in col]),
                                    "little")

    def _fields(self, count: int, pattern: bytes) -> int:
        return int.from_bytes(pattern * count, "little")

    def transform(self, lambdas: list[Fraction]) -> None:
        """Every column times S = S_1 (x) ... (x) S_k, rounded down (module docstring)."""
        k, w, g = self.k, self.width, self.guard
        fields = self.count << k
        keep = self._fields(fields, ((1 << (8 * w - g)) - 1).to_bytes(w, "little"))
        for i, lam in enumerate(lambdas):
            p, q = lam.numerator, lam.denominator
            a, b = (p << g) // (p + q), (q << g) // (p + q)
            d = 1 << (k - 1 - i)  # the distance of party i + 1's bit
            shift = 8 * w * d
            low = self._fields(fields // (2 * d), b"\xff" * (w * d) + bytes(w * d))
            v = self.value
            swapped = ((v & low) << shift) | ((v >> shift) & low)
            self.value = ((a * v + b * swapped) >> g) & keep

    def combine(self, coef: list[list[int]]) -> list[int]:
        """Per output y, the packed column sum_c coef[c][y] column_c (coef >= 0; the fields
        hold it: `extra_bits`)."""
        n, w = 1 << self.k, self.width
        one = self._fields(n, b"\xff" * w)
        cols = [(self.value >> (8 * w * n * c)) & one for c in range(self.count)]
        return [sum(coef[c][y] * cols[c] for c in range(self.count) if coef[c][y])
                for y in range(len(coef[0]))]

    def unpack(self, packed: int) -> list[int]:
        """One packed column as a list of 2^k integers."""
        w, n = self.width, 1 << self.k
        raw = packed.to_bytes(n * w, "little")
        return [int.from_bytes(raw[i:i + w], "little") for i in range(0, len(raw), w)]


def _error_units(k: int) -> int:
    """E: the most a computed entry is below the exact one, in units 2^-F."""
    return 2 * k + 2


def _coefficients(rows: list[tuple[Fraction, ...]]) -> tuple[list[list[int]], int]:
    """g' rows over one common denominator: (integers >= 0, the denominator)."""
    den = math.lcm(*(g.denominator for row in rows for g in row))
    return [[int(g * den) for g in row] for row in rows], den


def _average_bits(k: int, up, lo, rows, idx: list[int], parts) -> tuple[Fraction, Fraction]:
    """Uniform prior: per part and output y the column floor(g'(x, y) 2^F) (1 unit below
    g' at most) transformed at the upper lambdas (E units more), the best score of each
    corner summed (times 2^-k, the prior). With E + 1 units per corner and part added,
    the bound; as computed (lower ends), the value of their argmax rule, moved to the
    lower lambdas by the coupling bound (one transform, not two)."""
    n, F = 1 << k, FRACTION_BITS
    m = len(rows[0])
    one = 1 << F
    units = [[(g.numerator << F) // g.denominator for g in row] for row in rows]
    total = 0
    for part in parts:
        columns = [[units[i][y] for i in idx] if part is None else
                   [units[i][y] if inside else 0 for i, inside in zip(idx, part, strict=True)]
                   for y in range(m)]
        packed = _Packed(k, columns, F)
        packed.transform(up)
        identity = [[int(c == y) for y in range(m)] for c in range(m)]
        scores = [packed.unpack(col) for col in packed.combine(identity)]
        total += sum(map(max, zip(*scores, strict=True))) if m > 1 else sum(scores[0])
    scale = Fraction(1, n * one)
    bound = (total + n * len(parts) * (_error_units(k) + 1)) * scale
    # The argmax rule of these (rounded-down) scores has accuracy at least total * scale at
    # the upper lambdas, and at the lower ones at most sum_i rho(lo_i) - rho(up_i) less
    # (rho = 1 / (1 + lambda): couple each party's flips; the gains are in [0, 1]).
    moved = sum((1 / (1 + a) - 1 / (1 + b) for a, b in zip(lo, up, strict=True)),
                Fraction(0))
    return bound, total * scale - moved


def halvings(top: Fraction) -> int:
    """The largest t >= 0 with top 2^t <= 1 (top > 0; top 2^t then lies in (1/2, 1] when
    top <= 1), from the bit lengths of its numerator and denominator: constant work
    however small a crafted prior makes top."""
    p, q = top.numerator, top.denominator
    e = q.bit_length() - p.bit_length()  # floor(log2(q / p)) is e or e - 1
    if e >= 0 and (p << e) > q:
        e -= 1
    return max(e, 0)


def _prior_bound_bits(k: int, up, prior: list[Fraction], rows, idx, parts) -> Fraction:
    """An upper end of sum_s sum_parts max_y S (prior g'_y 1_part)[s]: the columns scaled
    by 2^t (the largest entry in [1/2, 1]) with F + k fraction bits."""
    n, m = 1 << k, len(rows[0])
    top = max(prior[x] * max(rows[idx[x]]) for x in range(n))
    if top == 0:
        return Fraction(0)
    t = halvings(top)
    F = WORST_BITS + k
    scale = 2 ** (F + t)
    columns = []
    for part in parts:
        for y in range(m):
            columns.append([math.floor(prior[x] * rows[idx[x]][y] * scale)
                            if part is None or part[x] else 0 for x in range(n)])
    packed = _Packed(k, columns, F)
    packed.transform(up)
    identity = [[int(c == y) for y in range(len(columns))] for c in range(len(columns))]
    ts = [packed.unpack(col) for col in packed.combine(identity)]
    total = 0
    for p in range(len(parts)):
        total += sum(map(max, zip(*ts[p * m:(p + 1) * m], strict=True)))
    return Fraction(total + n * len(parts) * _error_units(k), scale)


def _rule_value_bits(k: int, lo, rules, rows, idx: list[int], party: int) -> Fraction:
    """A lower end of min_x sum_y g'(x, y) (S Q_(b(x), y))[x]: the rule's columns in fixed
    point rounded down, transformed (rounded down), weighted by the exact g' >= 0."""
    n, F = 1 << k, WORST_BITS
    m = len(rules[0][0])
    one = 1 << F
    columns = [[math.floor(rule[tau][y] * one) for tau in range(n)]
               for rule in rules for y in range(m)]
    packed = _Packed(k, columns, F)
    packed.transform(lo)
    identity = [[int(c == y) for y in range(len(columns))] for c in range(len(columns))]
    spread = [packed.unpack(col) for col in packed.combine(identity)]
    coef, den = _coefficients(rows)
    best = min(sum(coef[idx[x]][y] * spread[(0 if party == 0 else (x >> (k - party)) & 1)
                                            * m + y][x] for y in range(m))
               for x in range(n))
    return Fraction(best, den * one)


# ------------------------------------------------------------------ orbits: arb balls


def _orbit_weights(sizes: list[int]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for n in sizes:
        out = [o + (w,) for o in out for w in range(n + 1)]
    return out


def _ball(x: Fraction) -> arb:
    return arb(fmpq(x.numerator, x.denominator))


class _Powers:
    """A = (p z + q) / (p + q) and B = (p + q z) / (p + q) of one class, and their powers,
    computed once per certificate (nothing is kept between certificates)."""

    def __init__(self, p: int, q: int):
        s = _ball(Fraction(p + q))
        self.base = {"A": arb_poly([_ball(Fraction(q)) / s, _ball(Fraction(p)) / s]),
                     "B": arb_poly([_ball(Fraction(p)) / s, _ball(Fraction(q)) / s])}
        self.cache: dict[tuple[str, int], arb_poly] = {}

    def power(self, name: str, e: int) -> arb_poly:
        if e == 0:
            return arb_poly([1])
        if e == 1:
            return self.base[name]
        if (name, e) not in self.cache:
            self.cache[(name, e)] = self.power(name, e // 2) * self.power(name, e - e // 2)
        return self.cache[(name, e)]


def _class_mix(powers: _Powers, n: int, y: list[arb]) -> list[arb]:
    """sum_j y_j A^j B^(n - j), the masses' transform of one class (theory.md 2.8), split
    in halves recursively."""

    def half(lo: int, hi: int) -> arb_poly:
        if hi - lo == 1:
            return arb_poly([y[lo]])
        mid = (lo + hi) // 2
        return (half(lo, mid) * powers.power("B", hi - mid)
                + powers.power("A", mid - lo) * half(mid, hi))

    coeffs = half(0, n + 1).coeffs()
    return list(coeffs) + [arb(0)] * (n + 1 - len(coeffs))


def _orbit_apply(sizes: list[int], lambdas: list[Fraction], column: list[arb],
                 cache: dict) -> list[arb]:
    """M on masses (mixed radix, first class most significant), one class at a time;
    `cache` holds the classes' powers for this certificate."""
    values = list(column)
    stride = len(values)
    for n, lam in zip(sizes, lambdas, strict=True):
        p, q = lam.numerator, lam.denominator
        powers = cache.setdefault((p, q), _Powers(p, q))
        block = stride // (n + 1)
        stride = block
        for start in range(len(values)):
            if (start // block) % (n + 1) != 0:
                continue
            fiber = [values[start + w * block] for w in range(n + 1)]
            mixed = _class_mix(powers, n, fiber)
            for w in range(n + 1):
                values[start + w * block] = mixed[w]
    return values


def _orbit_sizes(sizes: list[int]) -> list[int]:
    """|W| = prod_c C(n_c, w_c) in orbit order (each class's binomials from the last)."""
    out = [1]
    for n in sizes:
        row = [1]
        for w in range(n):
            row.append(row[-1] * (n - w) // (w + 1))
        out = [a * c for a in out for c in row]
    return out


def _orbit_scores(sizes, lambdas, prior: list[arb], gain, parts, cache: dict
                  ) -> list[list[list[arb]]]:
    """Per part and output y, M (prior g'_y 1_part): the masses of the corner sums."""
    m = len(gain[0])
    g = [[_ball(v) for v in row] for row in gain]
    out = []
    for part in parts:
        out.append([_orbit_apply(sizes, lambdas, [
            prior[w] * g[w][y] if part is None or part[w] else arb(0)
            for w in range(len(prior))], cache) for y in range(m)])
    return out


def _upper(b: arb) -> Fraction:
    man, exp = b.upper().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def _lower(b: arb) -> Fraction:
    man, exp = b.lower().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def _upper_sum(scores) -> Fraction:
    """An upper end of sum over corner orbits and parts of the largest score (the balls'
    upper ends, added in arb: outward rounded)."""
    total = arb(0)
    for part in scores:
        for column in zip(*part, strict=True):
            total += max((c.upper() for c in column), key=_upper)
    return _upper(total)


def _lower_argmax_sum(scores) -> Fraction:
    """RR's rule taking, on each corner orbit, the output of largest lower end: its
    value is at least the sum of those lower ends."""
    total = arb(0)
    for part in scores:
        for column in zip(*part, strict=True):
            total += max((c.lower() for c in column), key=_lower)
    return _lower(total)


def _orbit_rule_value(sizes, lo, rules, gain, mass, own, weights, cache: dict) -> Fraction:
    """A lower end of min_W sum_y g'(W, y) (M (|J| Q_y))_W / |W|."""
    count, m = len(mass), len(gain[0])
    acc = [arb(0)] * count
    sizes_balls = [arb(s) for s in mass]
    for b, rule in enumerate(rules):
        for y in range(m):
            spread = _orbit_apply(sizes, lo, [_ball(rule[j][y]) * sizes_balls[j]
                                              if rule[j][y] else arb(0) for j in range(count)],
                                  cache)
            for w in range(count):
                if (own is None or weights[w][own] == b) and gain[w][y]:
                    acc[w] += _ball(gain[w][y]) * spread[w] / sizes_balls[w]
    return min(_lower(a) for a in acc)


__all__ = ["check_interval", "check_orbit_interval"]
