"""The checker of `dpverify-delta-certificate/1`: the four-ray bound under approximate
privacy (docs/theory.md, section 7.4; docs/format.md, "Certificates with delta").

A certificate for agent A, accuracy acc and parties that are (epsilon_i, delta_i)-DP
(KOV 2015, eq. (12)) proves  value <= OPT <= bound, OPT the best accuracy of any interactive
protocol at the spec's levels:

* upper (theory.md 7.4, the dual of the four-ray LP): every party's rays at
  lam_i = upper.lambdas[i] = p_i / q_i, normalised, are c0 = (lam, 1) / (1 + lam),
  c1 = (1, lam) / (1 + lam), and with delta_i > 0 also r0 = (1, 0), r1 = (0, 1). For every
  product of rays T_s = r_{s_1} (x) ... (x) r_{s_k} and every label l,

      sum_x T_s[x] (mu[x] - prior[x] gain(x, l)) + sum_rows nu[row] H_s(row) >= 0      (D)

  with one row per party i (delta_i > 0), own bit a (the direction a -> b = 1 - a) and
  x_-i, and H_s(row) = max(0, T_s(a, x_-i) - lam_i T_s(b, x_-i)), computed here from that
  definition; nu >= 0; prior a distribution (uniform for the average). Then
  bound = sum(mu) + sum_rows nu[row] delta_i(row).
* lower: the product of the parties' RR(epsilon_i, delta_i) (theory.md 7.2; outputs
  reveal 0, say 0, say 1, reveal 1) at lower.lambdas <= the spec's lambdas, so it meets the
  levels, with the certificate's decision rule on its 4^k transcripts; value is its exact
  accuracy, recomputed here.

Exactness: (D) is multiplied by Z = prod_i (p_i + q_i) and a common denominator D of mu,
prior * gain and nu / q_i, so that every term is an integer: W_s[x] = Z T_s[x] is the
product of the parties' integer rays (p, q), (q, p), (p + q, 0), (0, p + q).

Imports: the standard library and the rest of dpverify/checker only (the trusted base).
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpverify.checker.bits import gain_table, label_parts
from dpverify.checker.common import (
    CertificateFormatError,
    CheckFailed,
    CheckResult,
    check_levels,
    decision_rules,
    declared_value,
    final_status,
    get_field,
    rational,
    read_header,
    show,
    vector,
)

DELTA_FORMAT = "dpverify-delta-certificate/1"
RAY_NAMES = ("corner0", "corner1", "reveal0", "reveal1")
DIRECTIONS = {"0->1": 0, "1->0": 1}


def check_delta(spec, cert: dict) -> CheckResult:
    """The steps, in order; each raises CheckFailed (or CertificateFormatError) on the
    first problem it finds."""
    head = read_header(spec, cert, DELTA_FORMAT)
    agent, k = head.agent, spec.parties
    deltas = vector(cert, "deltas", k, "")
    own = [Fraction(d) for d in (getattr(spec, "deltas", ()) or (0,) * k)]
    if deltas != own:
        raise CheckFailed(f"deltas {[show(d) for d in deltas]} differ from the spec's "
                          f"{[show(d) for d in own]}")
    if any(not 0 <= d < 1 for d in deltas):
        raise CheckFailed("every delta must lie in [0, 1)")
    outputs, gain = gain_table(spec, cert, agent)
    up = vector(head.upper, "lambdas", k, "upper.")
    lo = vector(head.lower, "lambdas", k, "lower.")
    check_levels(spec, up, lo, list(range(k)), [f"party {i + 1}" for i in range(k)])
    bound = upper_bound(k, agent.party, head.accuracy, head.upper, up, deltas, outputs, gain)
    value = lower_bound(k, agent.party, head.accuracy, head.lower, lo, deltas, gain)
    return final_status(spec, head.status, value, bound, up, lo)


# ------------------------------------------------------------------ the rays and products


def kron(factors: list[list[list[int]]]) -> list[list[int]]:
    """table[x][s] = prod_i factors[i][x_i][s_i]: inputs big-endian (x_1 most significant),
    columns in mixed radix over each factor's columns (party 1 most significant)."""
    table = [[1]]
    for factor in factors:
        table = [[v * f for v in row for f in frow] for row in table for frow in factor]
    return table


def party_rays(lam: Fraction, delta: Fraction) -> list[list[int]]:
    """A party's rays as integers over p + q (lam = p / q), rows the bit: c0, c1, and with
    delta > 0 r0, r1."""
    p, q = lam.numerator, lam.denominator
    rays = [[p, q, p + q, 0], [q, p, 0, p + q]]
    return rays if delta > 0 else [row[:2] for row in rays]


def product_name(s: int, counts: list[int]) -> str:
    names = []
    for c in reversed(counts):
        names.append(RAY_NAMES[s % c])
        s //= c
    return " x ".join(reversed(names))


def read_nu(upper: dict, k: int, deltas: list[Fraction]) -> dict[tuple[int, int, int], Fraction]:
    """upper.nu: one entry per party i with delta_i > 0, direction a -> 1 - a and x_-i
    ("others": the other parties' bits, party order), each >= 0, each exactly once."""
    items = get_field(upper, "nu", list, "upper.")
    wanted = {(i, a, o) for i in range(1, k + 1) if deltas[i - 1] > 0 for a in (0, 1)
              for o in range(1 << (k - 1))}
    nu: dict[tuple[int, int, int], Fraction] = {}
    for j, item in enumerate(items):
        where = f"upper.nu[{j}]."
        party = get_field(item, "party", int, where)
        direction = get_field(item, "direction", str, where)
        others = get_field(item, "others", str, where)
        if direction not in DIRECTIONS:
            raise CertificateFormatError(f"`{where}direction` must be '0->1' or '1->0'")
        if len(others) != k - 1 or any(c not in "01" for c in others):
            raise CertificateFormatError(f"`{where}others` must be {k - 1} bits (x_-i)")
        key = (party, DIRECTIONS[direction], int(others, 2) if others else 0)
        if key not in wanted:
            raise CheckFailed(f"upper.nu[{j}]: no hockey-stick row for party {party} "
                              f"(delta = {show(deltas[party - 1]) if 1 <= party <= k else '-'})")
        if key in nu:
            raise CheckFailed(f"upper.nu[{j}]: the row of party {party}, {direction}, "
                              f"x_-i = {others or '()'} is given twice")
        value = rational(get_field(item, "value", (str, int), where), where + "value")
        if value < 0:
            raise CheckFailed(f"upper.nu[{j}] = {show(value)} is negative (nu >= 0)")
        nu[key] = value
    if len(nu) != len(wanted):
        raise CheckFailed(f"upper.nu has {len(nu)} rows, not {len(wanted)} (one per party "
                          "with delta > 0, direction and x_-i)")
    return nu


def with_bit(o: int, party: int, bit: int, k: int) -> int:
    """The input x with x_party = bit and the other parties' bits o (big-endian)."""
    low = k - party  # bits of the parties after `party`
    high = o >> low
    return (((high << 1) | bit) << low) | (o & ((1 << low) - 1))


def upper_bound(k: int, party: int, accuracy: str, upper: dict, up: list[Fraction],
                deltas: list[Fraction], outputs: list[Fraction],
                gain: list[list[Fraction]]) -> Fraction:
    """prior, mu, nu; bound = sum(mu) + sum(nu delta); (D) for every product and label
    (for each product, at the label that maximises the right-hand side: a party's label
    (y0, y1) takes the best y0 on {x_i = 0} and the best y1 on {x_i = 1})."""
    n, m = 1 << k, len(outputs)
    prior = vector(upper, "prior", n, "upper.")
    mu = vector(upper, "mu", n, "upper.")
    bound = rational(get_field(upper, "bound", (str, int), "upper."), "upper.bound")
    if any(p < 0 for p in prior) or sum(prior) != 1:
        raise CheckFailed("upper.prior is not a distribution (entries >= 0 summing to 1)")
    if accuracy == "average" and any(p != Fraction(1, n) for p in prior):
        raise CheckFailed(f"upper.prior must be uniform (1/{n}) for the average accuracy")
    nu = read_nu(upper, k, deltas)
    total = sum(mu, Fraction(0)) + sum((v * deltas[i - 1] for (i, _, _), v in nu.items()),
                                       Fraction(0))
    if total != bound:
        raise CheckFailed(f"upper.bound = {show(bound)} but sum(mu) + sum(nu delta) = "
                          f"{show(total)}")
    pq = [(v.numerator, v.denominator) for v in up]
    rows = sorted(nu)
    # every number over one denominator: mu, prior * gain, and nu / q_i (H carries 1 / q_i)
    flat = list(mu) + [prior[x] * gain[x][y] for x in range(n) for y in range(m)] + \
        [nu[r] / pq[r[0] - 1][1] for r in rows]
    den = math.lcm(*(v.denominator for v in flat))
    MU = [int(v * den) for v in mu]
    PG = [[int(prior[x] * gain[x][y] * den) for y in range(m)] for x in range(n)]
    NU = [int(nu[r] / pq[r[0] - 1][1] * den) for r in rows]
    counts = [4 if d > 0 else 2 for d in deltas]
    W = kron([party_rays(lam, d) for lam, d in zip(up, deltas, strict=True)])
    parts = label_parts(k, party)
    hockey = [(p, q, with_bit(o, i, a, k), with_bit(o, i, 1 - a, k), NU[j])
              for j, (i, a, o) in enumerate(rows) for p, q in [pq[i - 1]]]
    for s in range(math.prod(counts)):
        column = [W[x][s] for x in range(n)]
        left = sum(w * v for w, v in zip(column, MU, strict=True))
        for p, q, xa, xb, weight in hockey:  # nu H_s, H_s = max(0, T(a) - lam T(b))
            excess = q * column[xa] - p * column[xb]
            if excess > 0:
                left += weight * excess
        best = []
        right = 0
        for part in parts:
            scores = [sum(column[x] * PG[x][y] for x in part) for y in range(m)]
            y = max(range(m), key=scores.__getitem__)
            best.append(y)
            right += scores[y]
        if left < right:
            scale = den * math.prod(p + q for p, q in pq)
            label = ", ".join(show(outputs[y]) for y in best)
            raise CheckFailed(
                f"dual feasibility fails at the product of rays s = {s} "
                f"({product_name(s, counts)}), label ({label}): sum_x T_s mu + sum nu H_s = "
                f"{show(Fraction(left, scale))} < sum_x T_s prior gain = "
                f"{show(Fraction(right, scale))}")
    return bound


# ------------------------------------------------------------------ RR(epsilon, delta)


def rr_kernel(lam: Fraction, delta: Fraction) -> list[list[int]]:
    """RR(epsilon, delta) at lam = p / q, delta = r / t as integers over t (p + q); rows the
    bit, outputs (reveal 0, say 0, say 1, reveal 1) (KOV-C 2015; theory.md 7.2)."""
    p, q = lam.numerator, lam.denominator
    r, t = delta.numerator, delta.denominator
    return [[r * (p + q), (t - r) * p, (t - r) * q, 0],
            [0, (t - r) * q, (t - r) * p, r * (p + q)]]


def lower_bound(k: int, party: int, accuracy: str, lower: dict, lo: list[Fraction],
                deltas: list[Fraction], gain: list[list[Fraction]]) -> Fraction:
    """The product of RR(epsilon_i, delta_i) at lower.lambdas with the decision rule (rows
    distributions) on its 4^k transcripts, its accuracy recomputed here:
    acc[x] = sum_t P[x, t] sum_y Q_b[t, y] gain[x][y] (b the party's own bit), then the
    mean (average) or the minimum (worst); it must equal lower.value."""
    n, m, transcripts = 1 << k, len(gain[0]), 4 ** k
    rules = decision_rules(lower, party, transcripts, m)
    kernels = [rr_kernel(lam, d) for lam, d in zip(lo, deltas, strict=True)]
    P = kron(kernels)
    scale = math.prod(d.denominator * (lam.numerator + lam.denominator)
                      for lam, d in zip(lo, deltas, strict=True))
    qden = math.lcm(*(v.denominator for rule in rules for row in rule for v in row))
    Q = [[[int(v * qden) for v in row] for row in rule] for rule in rules]
    acc: list[Fraction] = []
    for x in range(n):
        b = 0 if party == 0 else (x >> (k - party)) & 1
        q_b = Q[b]
        total = Fraction(0)
        for y in range(m):
            mass = sum(P[x][t] * q_b[t][y] for t in range(transcripts) if P[x][t])
            total += gain[x][y] * mass
        acc.append(total / (scale * qden))
    value = min(acc) if accuracy == "worst" else sum(acc, Fraction(0)) / n
    return declared_value(lower, value, f"the decision rule's {accuracy} accuracy under the "
                                        "product of RR(epsilon_i, delta_i)")
