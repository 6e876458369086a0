"""The checker of certificates for inputs with more than two symbols
(`dpverify-mary-certificate/1`; docs/theory.md 6.2-6.5, docs/format.md): one axis per party
(its m_i symbols). In order: the alphabets, outputs and gains are the spec's; the levels;
(C'') of theory.md 6.5 for every product of extreme rays and label (core.check_dual, one
factor per party: its 2^m_i - 2 rays with entries in {q_i, p_i}, lambda_i = p_i / q_i,
both used, built here from that definition; (C'') is homogeneous in each ray); one channel
per party, DP at lower.lambdas (this format's extra check), a rule on the product of their
outputs and the exact accuracy (core.accuracy); the status.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpverify.checker import claim, core
from dpverify.checker.factors import Dense, transposed
from dpverify.checker.fields import CertificateFormatError, Json, Matrix, get_field, matrix, show
from dpverify.checker.tabulation import spec_gains, spec_values
from dpverify.spec.model import MultipartySpec


def check_symbols(spec: MultipartySpec, cert: Json) -> claim.CheckResult:
    head = claim.read_header(spec, cert, claim.MARY_FORMAT)
    k, alphabets = spec.parties, list(spec.alphabets)
    if get_field(cert, "alphabets", list, "") != alphabets:
        raise claim.CheckFailed(f"the certificate's alphabets differ from the spec's "
                                f"{alphabets}")
    outputs, rows = spec_gains(spec, head.agent, spec_values(spec, head.agent))
    claim.read_outputs(cert, outputs)
    if matrix(get_field(cert, "gain", list, ""), len(rows), len(outputs), "gain") != rows:
        raise claim.CheckFailed("the gain table differs from the spec's")
    gain = tuple(tuple(row) for row in rows)
    up, lo = claim.read_levels(spec, head, list(range(k)), claim.party_names(k))
    grid = core.party_grid(alphabets, head.agent.party)
    prior, mu, bound = claim.read_bound(head.upper, grid.mass, head.accuracy)
    rays = tuple(ray_factor(m, lam) for m, lam in zip(alphabets, up, strict=True))

    def describe(s: int, label: tuple[int, ...], left: Fraction, right: Fraction) -> str:
        return (f"the ray inequality fails at the product of rays {ray_names(alphabets, s)}: "
                "sum_x T_s mu < the largest sum_x T_s prior gain over the labels")

    core.check_dual(core.Dual(grid, rays, tuple(prior), gain, (core.Term(rays, tuple(mu)),)),
                    describe)
    channels = read_channels(alphabets, head.lower, lo)
    outputs_of_all = math.prod(len(c[0]) for c in channels)
    rules = claim.read_rules(head.lower, grid.parts, outputs_of_all, len(outputs))
    protocol = core.Protocol(grid, tuple(channel_factor(c) for c in channels),
                             (1,) * outputs_of_all, tuple(rules), gain)
    value = claim.declared_value(head.lower, core.accuracy(protocol, head.accuracy),
                                 f"the protocol's {head.accuracy} accuracy with the decision "
                                 "rule")
    return claim.final_status(spec, head.status, value, bound, up, lo)


def ray_factor(m: int, lam: Fraction) -> Dense:
    """The extreme rays of an m-symbol party's DP cone at lam = p / q (theory.md 6.2): ray
    j (1 <= j <= 2^m - 2) has entry p at symbol a when bit m - 1 - a of j is set, else q;
    F[a][j - 1] is that entry."""
    p, q = lam.numerator, lam.denominator
    return Dense([[p if (j >> (m - 1 - a)) & 1 else q for j in range(1, (1 << m) - 1)]
                  for a in range(m)])


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
    """lower.channels: per party m_i rows (its symbols), each a distribution."""
    raw = get_field(lower, "channels", list, "lower.")
    if len(raw) != len(alphabets):
        raise CertificateFormatError(f"`lower.channels` needs {len(alphabets)} channels")
    out = []
    for i, (m, lam) in enumerate(zip(alphabets, lo, strict=True)):
        width = len(raw[i][0]) if isinstance(raw[i], list) and raw[i] and \
            isinstance(raw[i][0], list) else 0
        C = matrix(raw[i], m, width, f"lower.channels[{i}]")
        if width == 0 or any(v < 0 for row in C for v in row) or any(sum(r) != 1 for r in C):
            raise claim.CheckFailed(f"lower.channels[{i}]: rows must be distributions")
        out.append(dp_channel(C, i, lam))
    return out


def dp_channel(C: Matrix, i: int, lam: Fraction) -> Matrix:
    """Channel i, if every column's max is at most lam times its min (KOV 2015, eq. (7))."""
    for o, column in enumerate(zip(*C, strict=True)):
        if max(column) > lam * min(column):
            raise claim.CheckFailed(f"lower.channels[{i}] is not DP at lower.lambdas[{i}] = "
                                    f"{show(lam)}: column {o} has max {show(max(column))} > "
                                    f"lambda * min {show(lam * min(column))}")
    return C


def channel_factor(channel: Matrix) -> Dense:
    """A channel (rows its symbols) as integers over one denominator, read backwards."""
    ints, den = core.integer_columns(channel)
    return transposed(ints, den)
