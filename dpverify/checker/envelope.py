"""The checker of `dpverify-envelope-certificate/1`: the envelope bound under approximate
privacy (docs/theory.md 7.10, docs/format.md), over every interactive protocol on bits
that is (epsilon_i, delta_i)-DP for each party; one axis per party (its bit). A reader into
the core (checker/core.py) plus one check of its own, the chords.

* upper: party i's rays at lam_i = upper.lambdas[i] = p_i / q_i, as in the delta format
  (checker/delta.py): c0, c1 and, with delta_i > 0, r0, r1; `b` one value per product of
  rays s (mixed radix, party 1 most significant). For every s and label l

      b(s) + sum_rows nu[row] H_s(row)  >=  sum_x prior[x] gain(x, l) T_s[x]          (E1)

  (core.check_dual: b is one more term of (C)'s left-hand side, on the identity of each
  party's rays; the hockey-stick terms are the delta format's), and for every party i with
  delta_i > 0 and every s with party i at a corner, its chords (the format's own check):

      b(c0) >= (lam - 1)/lam b(r0) + 1/lam b(c1),   b(c0) >= lam/(1 + lam) b(r0) + 1/(1 + lam) b(r1)
      b(c1) >= (lam - 1)/lam b(r1) + 1/lam b(c0),   b(c1) >= lam/(1 + lam) b(r1) + 1/(1 + lam) b(r0)
                                                                                       (E2)
  (the other parties' rays as in s); nu >= 0, the prior a distribution (uniform for the
  average), and bound = sum of b over the products of corners only + sum_rows nu delta_i.
* lower: the product of the parties' RR(epsilon_i, delta_i) at lower.lambdas with the rule
  on its 4^k transcripts, as in the delta format.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpverify.checker import claim, core
from dpverify.checker.bits import input_gains
from dpverify.checker.delta import (
    hockey_term,
    party_rays,
    product_name,
    read_deltas,
    read_nu,
    rr_lower,
)
from dpverify.checker.factors import Dense
from dpverify.checker.fields import Json, get_field, rational, show, vector
from dpverify.spec.model import MultipartySpec

CORNER_0, CORNER_1, REVEAL_0, REVEAL_1 = 0, 1, 2, 3


def check_envelope(spec: MultipartySpec, cert: Json) -> claim.CheckResult:
    head = claim.read_header(spec, cert, claim.ENVELOPE_FORMAT)
    k = spec.parties
    deltas = read_deltas(spec, cert)
    outputs, gain = input_gains(spec, cert, head)
    up, lo = claim.read_levels(spec, head, list(range(k)), claim.party_names(k))
    grid = core.party_grid((2,) * k, head.agent.party)
    counts = [4 if d > 0 else 2 for d in deltas]
    prior = claim.read_prior(head.upper, grid.mass, head.accuracy)
    b = vector(head.upper, "b", math.prod(counts), "upper.")
    nu = read_nu(head.upper, k, deltas)
    bound = rational(get_field(head.upper, "bound", (str, int), "upper."), "upper.bound")
    corners = [s for s in range(len(b)) if all(d <= CORNER_1 for d in digits(s, counts))]
    total = sum((b[s] for s in corners), Fraction(0)) + \
        sum((v * deltas[i - 1] for (i, _, _), v in nu.items()), Fraction(0))
    if total != bound:
        raise claim.CheckFailed(f"upper.bound = {show(bound)} but the sum of b over the "
                                f"products of corners + sum(nu delta) = {show(total)}")
    rays = [Dense(party_rays(lam, d), lam.numerator + lam.denominator)
            for lam, d in zip(up, deltas, strict=True)]
    identity = tuple(Dense([[int(a == s) for s in range(c)] for a in range(c)])
                     for c in counts)
    left = [core.Term(identity, tuple(b))] + [
        hockey_term(rays, i, up[i - 1], nu, k) for i in range(1, k + 1) if deltas[i - 1] > 0]

    def describe(s: int, label: tuple[int, ...], left: Fraction, right: Fraction) -> str:
        name = ", ".join(show(outputs[y]) for y in label)
        return (f"(E1) fails at the product of rays s = {s} ({product_name(s, counts)}), "
                f"label ({name}): b(s) + sum nu H_s = {show(left)} < sum_x T_s prior gain = "
                f"{show(right)}")

    core.check_dual(core.Dual(grid, tuple(rays), tuple(prior), gain, tuple(left)), describe)
    check_chords(b, counts, up)
    value = rr_lower(head, grid, lo, deltas, len(outputs), gain)
    return claim.final_status(spec, head.status, value, bound, up, lo)


def digits(s: int, counts: list[int]) -> list[int]:
    """The rays of product s, party 1 first."""
    out = []
    for c in reversed(counts):
        s, d = divmod(s, c)
        out.append(d)
    return out[::-1]


def check_chords(b: list[Fraction], counts: list[int], lambdas: list[Fraction]) -> None:
    """(E2) for every party with four rays and every product where it is at a corner."""
    for i, (c, lam) in enumerate(zip(counts, lambdas, strict=True)):
        if c < 4:
            continue
        stride = math.prod(counts[i + 1:])
        near, far = ((lam - 1) / lam, 1 / lam), (lam / (1 + lam), 1 / (1 + lam))
        rules = {CORNER_0: ((REVEAL_0, CORNER_1, near), (REVEAL_0, REVEAL_1, far)),
                 CORNER_1: ((REVEAL_1, CORNER_0, near), (REVEAL_1, REVEAL_0, far))}
        for s in range(len(b)):
            ray = (s // stride) % c
            for t1, t2, (w1, w2) in rules.get(ray, ()):
                base = s - ray * stride
                chord = w1 * b[base + t1 * stride] + w2 * b[base + t2 * stride]
                if b[s] < chord:
                    raise claim.CheckFailed(
                        f"(E2) fails at the product of rays s = {s} "
                        f"({product_name(s, counts)}), party {i + 1}: b(s) = {show(b[s])} < "
                        f"{show(w1)} b({product_name(base + t1 * stride, counts)}) + "
                        f"{show(w2)} b({product_name(base + t2 * stride, counts)}) = "
                        f"{show(chord)}")
