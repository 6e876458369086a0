"""The checker of `dpverify-certificate/1`: certificates on all 2^k inputs of a problem on
bits (docs/theory.md, "Certificates"; docs/format.md, the certificate format).

A certificate for agent A, accuracy acc, proves  value <= OPT <= bound, where OPT is the
best accuracy of any interactive protocol that is DP at the spec's lambdas:

* upper (KOV 2015, proof of Thm 3.1; theory.md): for every corner s and label l,
      sum_x T_s[x] mu[x] >= sum_x T_s[x] prior[x] gain(x, l)                       (C)
  with T_s = c_{s_1} (x) ... (x) c_{s_k}, c_0 = (lam, 1) / (1 + lam), c_1 = (1, lam) / (1 + lam),
  lam = upper.lambdas >= the spec's lambdas (the DP cone only grows); prior a distribution
  (uniform for the average). Then bound = sum(mu).
* lower: randomized response at lower.lambdas <= the spec's lambdas (so it is DP) with the
  certificate's decision rule; value is its exact accuracy, recomputed here.

Exactness: (C) is multiplied by prod_i q_i (1 + lam_i) > 0 (lam_i = p_i / q_i) and by a
common denominator D > 0 of mu, prior*gain, so that it becomes an integer inequality
    sum_x W_s[x] MU[x] >= sum_x W_s[x] R_l[x],   W_s[x] = prod_i (p_i if x_i == s_i else q_i)
and sum_x W_s[x] v[x] for all s at once is (x)_i [[p_i, q_i], [q_i, p_i]] applied to v.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpverify.checker.common import (
    FORMAT,
    CheckFailed,
    CheckResult,
    check_levels,
    common_denominator,
    decision_rules,
    declared_value,
    final_status,
    get_field,
    matrix,
    prior_mu_bound,
    read_header,
    read_outputs,
    show,
    spec_gains,
    spec_values,
    vector,
)


def check_bits(spec, cert: dict) -> CheckResult:
    """The steps, in order; each raises CheckFailed (or CertificateFormatError) on the
    first problem it finds."""
    head = read_header(spec, cert, FORMAT)
    agent, k = head.agent, spec.parties
    outputs, gain = gain_table(spec, cert, agent)
    up = vector(head.upper, "lambdas", k, "upper.")
    lo = vector(head.lower, "lambdas", k, "lower.")
    check_levels(spec, up, lo, list(range(k)), [f"party {i + 1}" for i in range(k)])
    bound = upper_bound(spec, agent.party, head.accuracy, head.upper, up, outputs, gain)
    value = lower_bound(spec, agent.party, head.accuracy, head.lower, lo, gain)
    return final_status(spec, head.status, value, bound, up, lo)


def gain_table(spec, cert: dict, agent) -> tuple[list[Fraction], list[list[Fraction]]]:
    """The certificate's outputs and gain table must be the spec's, tabulated here."""
    k, n = spec.parties, 1 << spec.parties
    spec_outputs, rows = spec_gains(spec, agent, spec_values(spec, agent))
    outputs = read_outputs(cert, spec_outputs)
    m = len(outputs)
    gain = matrix(get_field(cert, "gain", list, ""), n, m, "gain")
    for x in range(n):
        for j in range(m):
            if gain[x][j] != rows[x][j]:
                raise CheckFailed(f"gain[{x}][{j}] = {show(gain[x][j])} but the spec gives "
                                  f"{show(rows[x][j])} (input {x:0{k}b}, output "
                                  f"{show(outputs[j])})")
    return outputs, gain


def corner_sums(pq: list[tuple[int, int]], v: list[int]) -> list[int]:
    """out[s] = sum_x prod_i (p_i if x_i == s_i else q_i) * v[x], by k passes of 2x2 mixing.

    Input order is big-endian (x_1 is the most significant bit), as in every dpverify table.
    """
    v = list(v)
    k = len(pq)
    for i, (p, q) in enumerate(pq):
        step = 1 << (k - 1 - i)  # the bit of party i + 1
        for base in range(0, len(v), 2 * step):
            for j in range(base, base + step):
                a, b = v[j], v[j + step]
                v[j], v[j + step] = p * a + q * b, q * a + p * b
    return v


def label_parts(k: int, party: int) -> list[list[int]]:
    """The inputs each part of a label ranges over: all of them for the observer; those
    with own bit 0, then 1, for party i."""
    n = 1 << k
    if party == 0:
        return [list(range(n))]
    own = [(x >> (k - party)) & 1 for x in range(n)]
    return [[x for x in range(n) if own[x] == b] for b in (0, 1)]


def upper_bound(spec, party: int, accuracy: str, upper: dict, up: list[Fraction],
                outputs: list[Fraction], gain: list[list[Fraction]]) -> Fraction:
    """prior a distribution (uniform for the average), bound = sum(mu), and for every
    corner s and label l the inequality (C): sum_x T_s[x] mu[x] >= sum_x T_s[x] prior[x]
    gain(x, l). For a party, gain(x, (y0, y1)) = w(f(x), y_{x_i}), so the right-hand side
    of (y0, y1) is that of y0 over {x_i = 0} plus that of y1 over {x_i = 1}."""
    k, n, m = spec.parties, 1 << spec.parties, len(outputs)
    prior, mu, bound = prior_mu_bound(upper, [1] * n, k, accuracy)
    parts = label_parts(k, party)
    pq = [(v.numerator, v.denominator) for v in up]
    flat = list(mu)
    for part in parts:
        for y in range(m):
            vec = [Fraction(0)] * n
            for x in part:
                vec[x] = prior[x] * gain[x][y]
            flat.extend(vec)
    ints, den = common_denominator(flat)
    lhs = corner_sums(pq, ints[:n])
    # rhs[p][y][s]: sum_x W_s[x] prior[x] gain(x, y) over part p, numerators over den
    rhs = [[corner_sums(pq, ints[n * (1 + p * m + y):n * (2 + p * m + y)]) for y in range(m)]
           for p in range(len(parts))]
    labels = [(j,) for j in range(m)] if party == 0 else \
        [(a, b) for a in range(m) for b in range(m)]
    for label in labels:
        for s in range(n):
            right = sum(rhs[p][y][s] for p, y in enumerate(label))
            if lhs[s] < right:
                scale = den * math.prod(p + q for p, q in pq)
                name = ", ".join(show(outputs[y]) for y in label)
                raise CheckFailed(f"corner inequality fails at corner s = {s:0{k}b}, label "
                                  f"({name}): sum_x T_s mu = {show(Fraction(lhs[s], scale))} "
                                  f"< sum_x T_s prior gain = {show(Fraction(right, scale))}")
    return bound


def lower_bound(spec, party: int, accuracy: str, lower: dict, lo: list[Fraction],
                gain: list[list[Fraction]]) -> Fraction:
    """RR at lower.lambdas with the decision rule (rows distributions), its accuracy
    recomputed here: acc[x] = sum_y gain[x][y] sum_tau P[x, tau] Q_b[tau, y] (b the party's
    own bit), then the mean (average) or the minimum (worst); it must equal lower.value."""
    k, n, m = spec.parties, 1 << spec.parties, len(gain[0])
    rules = decision_rules(lower, party, n, m)
    pq_lo = [(v.numerator, v.denominator) for v in lo]
    scale_lo = math.prod(p + q for p, q in pq_lo)
    ints, den_q = common_denominator([q for rule in rules for row in rule for q in row])
    # mixed[b][y][x] = sum_tau P[x, tau] Q_b[tau, y] (numerators over den_q * scale_lo);
    # P is symmetric, so the corner sums of a column of Q give it
    mixed = [[corner_sums(pq_lo, [ints[(b * n + tau) * m + y] for tau in range(n)])
              for y in range(m)] for b in range(len(rules))]
    acc: list[Fraction] = []
    for x in range(n):
        b = 0 if party == 0 else (x >> (k - party)) & 1
        total = sum((gain[x][y] * mixed[b][y][x] for y in range(m)), Fraction(0))
        acc.append(total / (den_q * scale_lo))
    value = min(acc) if accuracy == "worst" else sum(acc, Fraction(0)) / n
    return declared_value(lower, value, f"the decision rule's {accuracy} accuracy under "
                                        "randomized response")

