"""The checker of certificates for inputs with more than two symbols
(`dpverify-mary-certificate/1`; docs/theory.md 6.2-6.5; docs/format.md).

A certificate proves value <= OPT <= bound, OPT the best accuracy of any interactive
protocol that is DP at the spec's levels. One axis per party (its m_i symbols), and:

1. the alphabets, outputs and gains are the spec's, recomputed here;
2. lambdas: upper.lambdas >= the spec's levels (the DP cone only grows), 1 <= lower.lambdas
   <= the spec's (claim.read_levels: exact, or a rigorous bracket of e^eps);
3. upper: (C'') of theory.md 6.5 for every product of extreme rays and every label, by
   checker/core.py with one factor per party: its 2^m_i - 2 rays, each with entries in
   {q_i, p_i} (lambda_i = p_i / q_i; (C'') is homogeneous in each ray) that uses both
   values, built here from that definition (theory.md 6.2);
4. lower: one channel per party (rows distributions, every column max <= lower.lambdas
   min: DP, an extra check of this format), a decision rule on the product of their
   outputs, and their exact accuracy recomputed (core.accuracy);
5. the status (claim.final_status).
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpverify.checker.claim import (
    MARY_FORMAT,
    CheckFailed,
    CheckResult,
    declared_value,
    final_status,
    party_names,
    read_bound,
    read_header,
    read_levels,
    read_outputs,
    read_rules,
)
from dpverify.checker.core import Dual, Protocol, Term, accuracy, check_dual, party_grid
from dpverify.checker.factors import Dense, transposed
from dpverify.checker.fields import (
    CertificateFormatError,
    Json,
    Matrix,
    common_denominator,
    get_field,
    matrix,
    show,
)
from dpverify.checker.tabulation import spec_gains, spec_values
from dpverify.spec.model import MultipartySpec


def check_symbols(spec: MultipartySpec, cert: Json) -> CheckResult:
    """The steps of the module docstring, in order; each raises CheckFailed (or
    CertificateFormatError) on the first problem it finds."""
    head = read_header(spec, cert, MARY_FORMAT)
    k, alphabets = spec.parties, list(spec.alphabets)
    if get_field(cert, "alphabets", list, "") != alphabets:
        raise CheckFailed(f"the certificate's alphabets differ from the spec's {alphabets}")
    outputs, rows = spec_gains(spec, head.agent, spec_values(spec, head.agent))
    read_outputs(cert, outputs)
    gain = matrix(get_field(cert, "gain", list, ""), len(rows), len(outputs), "gain")
    if rows != gain:
        raise CheckFailed("the gain table differs from the spec's")
    gains = tuple(tuple(row) for row in gain)
    up, lo = read_levels(spec, head, list(range(k)), party_names(k))
    grid = party_grid(alphabets, head.agent.party)
    prior, mu, bound = read_bound(head.upper, grid.mass, head.accuracy)
    rays = tuple(ray_factor(m, lam) for m, lam in zip(alphabets, up, strict=True))

    def describe(s: int, label: tuple[int, ...], left: Fraction, right: Fraction) -> str:
        return (f"the ray inequality fails at the product of rays {ray_names(alphabets, s)}: "
                "sum_x T_s mu < the largest sum_x T_s prior gain over the labels")

    check_dual(Dual(grid, rays, tuple(prior), gains, (Term(rays, tuple(mu)),)), describe)
    channels = read_channels(alphabets, head.lower, lo)
    transcripts = math.prod(len(c[0]) for c in channels)
    rules = read_rules(head.lower, grid.parts, transcripts, len(outputs))
    factors = []
    for channel in channels:
        ints, den = common_denominator([v for row in channel for v in row])
        width = len(channel[0])
        factors.append(transposed([ints[r * width:(r + 1) * width]
                                   for r in range(len(channel))], den))
    protocol = Protocol(grid, tuple(factors), (1,) * transcripts, tuple(rules), gains)
    value = declared_value(head.lower, accuracy(protocol, head.accuracy),
                           f"the protocol's {head.accuracy} accuracy with the decision rule")
    return final_status(spec, head.status, value, bound, up, lo)


def ray_factor(m: int, lam: Fraction) -> Dense:
    """The extreme rays of an m-symbol party's DP cone at lam = p / q (theory.md 6.2): ray
    j (1 <= j <= 2^m - 2) has entry p at symbol a when bit m - 1 - a of j is set, else q.
    F[a][j - 1] = ray j's entry at symbol a."""
    p, q = lam.numerator, lam.denominator
    return Dense(tuple(tuple(p if (j >> (m - 1 - a)) & 1 else q for j in range(1, (1 << m) - 1))
                       for a in range(m)))


def ray_names(alphabets: list[int], s: int) -> str:
    """Product of rays number s as text, each ray its entries: (lam, 1, 1) x (1, lam, lam)."""
    out = []
    for m in reversed(alphabets):
        j = s % ((1 << m) - 2) + 1
        s //= (1 << m) - 2
        out.append("(" + ", ".join("lam" if (j >> (m - 1 - a)) & 1 else "1"
                                   for a in range(m)) + ")")
    return " x ".join(reversed(out))


def read_channels(alphabets: list[int], lower: Json, lo: list[Fraction]) -> list[Matrix]:
    """lower.channels: per party m_i rows (its symbols), rows distributions, and DP at
    lower.lambdas: every column's max <= lambda times its min."""
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
