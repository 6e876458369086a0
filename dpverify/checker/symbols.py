"""The checker of certificates for inputs with more than two symbols
(`dpverify-mary-certificate/1`; docs/theory.md, section 6.5; docs/format.md).

A certificate proves value <= OPT <= bound, OPT the best accuracy of any interactive
protocol that is DP at the spec's levels:

1. the alphabets, outputs and gains are the spec's, recomputed here;
2. lambdas: upper.lambdas >= the spec's levels (the DP cone only grows), 1 <= lower.lambdas
   <= the spec's (common.check_levels: exact, or a rigorous bracket of e^eps);
3. upper: prior a distribution (uniform for the average), bound = sum(mu), and for every
   product of extreme rays s and every label l
       sum_x T_s[x] mu[x] >= sum_x T_s[x] prior[x] gain(x, l)                       (C)
   with T_s[x] = prod_i ray_{s_i}[x_i], each ray a vector with entries in {q_i, p_i}
   (lambda_i = p_i / q_i scaled by q_i > 0; (C) is homogeneous in each ray) that uses both
   values, built here from its definition. A party's label is a decision per own symbol,
   and the right-hand side is a sum over own symbols of terms in one decision each, so
   checking sum over own symbols of the maximum over decisions checks every label;
4. lower: one channel per party (rows distributions, every column max <= lower.lambdas
   min: DP), a decision rule on the product of their outputs (rows distributions), and
   their accuracy recomputed: the mean (average) or the minimum (worst) over the inputs
   of sum_o prod_i C_i[x_i][o_i] sum_y Q[o][y] gain[x][y] must equal lower.value;
5. the status (common.final_status).
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpverify.checker.common import (
    MARY_FORMAT,
    CertificateFormatError,
    CheckFailed,
    CheckResult,
    check_levels,
    common_denominator,
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


def check_symbols(spec, cert: dict) -> CheckResult:
    """The steps of the module docstring, in order; each raises CheckFailed (or
    CertificateFormatError) on the first problem it finds."""
    head = read_header(spec, cert, MARY_FORMAT)
    agent, k = head.agent, spec.parties
    alphabets = list(spec.alphabets)
    if get_field(cert, "alphabets", list, "") != alphabets:
        raise CheckFailed(f"the certificate's alphabets differ from the spec's {alphabets}")
    gain = _gains(spec, cert, agent, math.prod(alphabets))
    up = vector(head.upper, "lambdas", k, "upper.")
    lo = vector(head.lower, "lambdas", k, "lower.")
    check_levels(spec, up, lo, list(range(k)), [f"party {i + 1}" for i in range(k)])
    bound = _upper(alphabets, agent, head.accuracy, head.upper, up, gain)
    value = _lower(alphabets, agent, head.accuracy, head.lower, lo, gain)
    return final_status(spec, head.status, value, bound, up, lo)


def _gains(spec, cert: dict, agent, n: int) -> list[list[Fraction]]:
    outputs, rows = spec_gains(spec, agent, spec_values(spec, agent))
    read_outputs(cert, outputs)
    gain = matrix(get_field(cert, "gain", list, ""), n, len(outputs), "gain")
    if rows != gain:
        raise CheckFailed("the gain table differs from the spec's")
    return gain


def _symbols(alphabets: list[int], x: int) -> list[int]:
    """The symbols of input x, x1 first (mixed radix)."""
    out = []
    for m in reversed(alphabets):
        out.append(x % m)
        x //= m
    return out[::-1]


def _ray_sums(alphabets: list[int], pq: list[tuple[int, int]], v: list[int]) -> list[int]:
    """out[s] = sum_x prod_i ray_{s_i}[x_i] v[x] over every product of rays s (mixed radix,
    party 1 first), one party at a time. Ray j of an m-symbol party (1 <= j <= 2^m - 2)
    has entry p at symbol a when bit m - 1 - a of j is set, else q."""
    dims = list(alphabets)
    for i, (p, q) in enumerate(pq):
        m = dims[i]
        rays = [[p if (j >> (m - 1 - a)) & 1 else q for a in range(m)]
                for j in range(1, (1 << m) - 1)]
        left, right = math.prod(dims[:i]), math.prod(dims[i + 1:])
        out = [0] * (left * len(rays) * right)
        for a_left in range(left):
            for s, ray in enumerate(rays):
                base = (a_left * len(rays) + s) * right
                for a, weight in enumerate(ray):
                    start = (a_left * m + a) * right
                    for r in range(right):
                        out[base + r] += weight * v[start + r]
        v, dims[i] = out, len(rays)
    return v


def _upper(alphabets: list[int], agent, accuracy: str, upper: dict, up: list[Fraction],
           gain: list[list[Fraction]]) -> Fraction:
    n, width = len(gain), len(gain[0])
    prior, mu, bound = prior_mu_bound(upper, [1] * n, len(alphabets), accuracy)
    own = [_symbols(alphabets, x)[agent.party - 1] if agent.party else 0 for x in range(n)]
    parts = alphabets[agent.party - 1] if agent.party else 1
    flat = list(mu)
    for a in range(parts):
        for y in range(width):
            flat += [prior[x] * gain[x][y] if own[x] == a else Fraction(0) for x in range(n)]
    ints, den = common_denominator(flat)
    pq = [(v.numerator, v.denominator) for v in up]
    lhs = _ray_sums(alphabets, pq, ints[:n])
    rhs = [_ray_sums(alphabets, pq, ints[n * (1 + c):n * (2 + c)]) for c in range(parts * width)]
    for s, left in enumerate(lhs):
        right = sum(max(rhs[a * width + y][s] for y in range(width)) for a in range(parts))
        if left < right:
            raise CheckFailed(f"the ray inequality fails at the product of rays "
                              f"{_rays(alphabets, s)}: sum_x T_s mu < the largest "
                              "sum_x T_s prior gain over the labels")
    return bound


def _rays(alphabets: list[int], s: int) -> str:
    """Product of rays number s as text, each ray its entries: (lam, 1, 1) x (1, lam, lam)."""
    out = []
    for m in reversed(alphabets):
        j = s % ((1 << m) - 2) + 1
        s //= (1 << m) - 2
        out.append("(" + ", ".join("lam" if (j >> (m - 1 - a)) & 1 else "1"
                                   for a in range(m)) + ")")
    return " x ".join(reversed(out))


def _channels(alphabets: list[int], lower: dict, lo: list[Fraction]) -> list[list[list[Fraction]]]:
    raw = get_field(lower, "channels", list, "lower.")
    if len(raw) != len(alphabets):
        raise CertificateFormatError(f"`lower.channels` needs {len(alphabets)} channels")
    out = []
    for i, (m, lam) in enumerate(zip(alphabets, lo, strict=True)):
        width = len(raw[i][0]) if isinstance(raw[i], list) and raw[i] and \
            isinstance(raw[i][0], list) else 0
        C = matrix(raw[i], m, width, f"lower.channels[{i}]")
        if width == 0 or any(v < 0 for row in C for v in row) or any(sum(r) != 1 for r in C):
            raise CheckFailed(f"lower.channels[{i}]: rows must be distributions")
        for o, column in enumerate(zip(*C, strict=True)):
            if max(column) > lam * min(column):
                raise CheckFailed(f"lower.channels[{i}] is not DP at lower.lambdas[{i}] = "
                                  f"{show(lam)}: column {o} has max {show(max(column))} > "
                                  f"lambda * min {show(lam * min(column))}")
        out.append(C)
    return out


def _lower(alphabets: list[int], agent, accuracy: str, lower: dict, lo: list[Fraction],
           gain: list[list[Fraction]]) -> Fraction:
    n, width = len(gain), len(gain[0])
    channels = _channels(alphabets, lower, lo)
    T = math.prod(len(C[0]) for C in channels)
    raw = get_field(lower, "decision", list, "lower.")
    blocks = alphabets[agent.party - 1] if agent.party else 1
    if agent.party and len(raw) != blocks:
        raise CertificateFormatError(f"`lower.decision` of a party needs {blocks} blocks")
    rules = [matrix(raw, T, width, "lower.decision")] if not agent.party else \
        [matrix(raw[a], T, width, f"lower.decision[{a}]") for a in range(blocks)]
    if any(q < 0 for rule in rules for row in rule for q in row) or \
            any(sum(row) != 1 for rule in rules for row in rule):
        raise CheckFailed("a row of lower.decision is not a distribution")
    acc = []
    for x in range(n):
        symbols = _symbols(alphabets, x)
        rule = rules[symbols[agent.party - 1] if agent.party else 0]
        row = [Fraction(1)]
        for C, a in zip(channels, symbols, strict=True):
            row = [p * c for p in row for c in C[a]]
        acc.append(sum((p * sum((q * g for q, g in zip(rule[o], gain[x], strict=True)),
                                Fraction(0)) for o, p in enumerate(row) if p), Fraction(0)))
    value = min(acc) if accuracy == "worst" else sum(acc, Fraction(0)) / n
    return declared_value(lower, value, f"the protocol's {accuracy} accuracy with the "
                                        "decision rule")
