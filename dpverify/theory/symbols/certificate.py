"""Exact certificates for inputs with more than two symbols (`dpverify-mary-certificate/1`;
docs/theory.md, section 6.5; docs/format.md).

A certificate proves  value <= OPT <= bound  for one agent and accuracy, OPT being the best
accuracy of any interactive protocol that is DP at the problem's levels:

* upper: a prior pi on the inputs (uniform for the average) and mu on the inputs such that
  for every product of extreme rays T_s = r_{s_1} (x) ... (x) r_{s_k} and every label l
      sum_x T_s[x] mu[x] >= sum_x T_s[x] pi[x] gain(x, l)                           (C)
  By multilinearity (C) holds for every rank-one DP tensor (each factor is a non-negative
  combination of its party's rays), and summing over the columns of any DP protocol gives
  accuracy under pi <= sum(mu) (the argument of KOV 2015's corner lemma, theory.md 2.1,
  with rays in place of corners). The worst case is at most the accuracy under any pi.
* lower: a non-interactive protocol (one DP channel per party, `channels[i][a][o]`) and a
  decision rule on its outputs; `value` is their exact accuracy.

Construction of the upper bound: the float duals (mu, pi) of the ray-product LP, made
exact (pi clipped and normalised exactly) and repaired by the least uniform shift mu + c 1
that makes (C) hold exactly; since sum_x T_s[x] is positive, c = max over s of the largest
violation divided by sum_x T_s[x]. The bound grows by n c (about 1e-17 in practice).
Gains are normalised to [0, 1] here (w = lo + span w') and mapped back exactly: (C) is
linear in (mu, gain) with pi fixed, so mu = span mu' + lo pi, bound = span bound' + lo.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import ClassVar

import numpy as np

from dpverify.records import record
from dpverify.spec.alphabet import input_symbols
from dpverify.theory.certificates.format import (
    BRACKET,
    PROVED,
    UNPROVED,
    Certificate,
    nested_strings,
)
from dpverify.theory.exact_rows import snap
from dpverify.theory.symbols.rays import exact_ray_sums, integer_rays

FORMAT = "dpverify-mary-certificate/1"


def _scaled(values: Sequence[Fraction]) -> tuple[np.ndarray, int]:
    den = math.lcm(*(Fraction(v).denominator for v in values)) if values else 1
    num = np.array([Fraction(v).numerator * (den // Fraction(v).denominator) for v in values],
                   dtype=object)
    return num, den


def _parts(alphabets: Sequence[int], party: int) -> list[np.ndarray | None]:
    """The inputs each part of a label ranges over: all for the observer; one part per own
    symbol for party i (its label is a decision per own symbol)."""
    if party == 0:
        return [None]
    own = input_symbols(alphabets)[:, party - 1]
    return [own == a for a in range(alphabets[party - 1])]


def label_maxima(int_rays: Sequence[np.ndarray], alphabets: Sequence[int], party: int,
                 gain: Sequence[Sequence[Fraction]], prior: Sequence[Fraction]
                 ) -> tuple[np.ndarray, int]:
    """v[s] = max over labels of sum_x T_s[x] pi[x] gain(x, l) (integer rays), as integer
    numerators over one denominator. A party's maximum separates per own symbol."""
    n, width = len(gain), len(gain[0])
    parts = _parts(alphabets, party)
    flat = []
    for mask in parts:
        for y in range(width):
            flat += [prior[x] * gain[x][y] if mask is None or mask[x] else Fraction(0)
                     for x in range(n)]
    num, den = _scaled(flat)
    columns = num.reshape(len(parts) * width, n).T  # (n, parts * width)
    sums = exact_ray_sums(int_rays, columns)  # (S, parts * width)
    total = np.zeros(sums.shape[0], dtype=object)
    for p in range(len(parts)):
        block = sums[:, p * width:(p + 1) * width]
        total = total + np.array([max(row) for row in block.tolist()], dtype=object)
    return total, den


def repaired_upper(lambdas: Sequence[Fraction], alphabets: Sequence[int], party: int,
                   gain: Sequence[Sequence[Fraction]], prior: Sequence[Fraction],
                   mu: Sequence[float] | np.ndarray) -> tuple[list[Fraction], Fraction]:
    """(mu exact, bound = sum(mu)) such that (C) holds exactly for the rays at `lambdas`
    (module docstring): the float mu shifted by the least constant that repairs it, or,
    when they also satisfy (C) with a smaller sum, the small rationals nearest to the
    floats (an exact optimum, 47/72 rather than 47/72 + 1e-17, when the data are rational)."""
    rays = [integer_rays(m, lam) for m, lam in zip(alphabets, lambdas, strict=True)]
    rhs, rhs_den = label_maxima(rays, alphabets, party, gain, prior)
    weights = exact_ray_sums(rays, np.ones(len(mu), dtype=object))  # sum_x T_s[x] > 0
    candidates = []
    for exact_mu in ([Fraction(float(v)) for v in mu],
                     [snap(SNAP_DENOMINATOR)(float(v)) for v in mu]):
        mu_num, mu_den = _scaled(exact_mu)
        lhs = exact_ray_sums(rays, mu_num)
        shift = Fraction(0)
        for left, right, weight in zip(lhs.tolist(), rhs.tolist(), weights.tolist(),
                                       strict=True):
            violation = Fraction(right, rhs_den) - Fraction(left, mu_den)
            if violation > 0:
                shift = max(shift, violation / weight)
        repaired = [v + shift for v in exact_mu]
        candidates.append((sum(repaired, Fraction(0)), repaired))
    bound, best = min(candidates, key=lambda c: c[0])
    return best, bound


SNAP_DENOMINATOR = 10**6


def upper_holds(lambdas: Sequence[Fraction], alphabets: Sequence[int], party: int,
                gain: Sequence[Sequence[Fraction]], prior: Sequence[Fraction],
                mu: Sequence[Fraction]) -> bool:
    """The construction's own check of (C) on every product of rays."""
    rays = [integer_rays(m, lam) for m, lam in zip(alphabets, lambdas, strict=True)]
    mu_num, mu_den = _scaled(list(mu))
    lhs = exact_ray_sums(rays, mu_num)
    rhs, rhs_den = label_maxima(rays, alphabets, party, gain, prior)
    return all(left * rhs_den >= right * mu_den
               for left, right in zip(lhs.tolist(), rhs.tolist(), strict=True))


def protocol_accuracies(channels: Sequence[Sequence[Sequence[Fraction]]], decision,
                        gain: Sequence[Sequence[Fraction]], alphabets: Sequence[int],
                        party: int) -> list[Fraction]:
    """acc[x] = sum_o prod_i C_i[x_i][o_i] sum_y Q[o][y] gain[x][y] exactly (a party's rule
    is Q[x_party][o][y]); outputs o in mixed radix, party 1 first."""
    P = np.ones((1, 1), dtype=object)
    den = 1
    for C in channels:
        num, d = _scaled([v for row in C for v in row])
        P = np.kron(P, num.reshape(len(C), len(C[0])))
        den *= d
    rules = [decision] if party == 0 else list(decision)
    own = input_symbols(alphabets)[:, party - 1] if party else None
    out = []
    for x in range(P.shape[0]):
        rule = rules[0] if own is None else rules[int(own[x])]
        total = Fraction(0)
        for o, p in enumerate(P[x].tolist()):
            if p:
                total += p * sum((Fraction(q) * g for q, g in zip(rule[o], gain[x],
                                                                 strict=True)), Fraction(0))
        out.append(total / den)
    return out


@record(eq=False)
class SymbolCertificate(Certificate):
    """An exact certificate (module docstring) in the data type of the binary one
    (theory/certificates/format.py), with the alphabets and the lower bound's channels;
    `decision` is Q[o][y] (observer) or Q[a][o][y] (party with own symbol a)."""

    alphabets: tuple[int, ...] = ()
    channels: tuple = ()

    format_name: ClassVar[str] = FORMAT

    def _layout(self) -> dict:
        return {"alphabets": list(self.alphabets)}

    def _to_json(self, problem: str) -> dict:
        out = super()._to_json(problem)
        lower = out["lower"]
        out["lower"] = {"lambdas": lower["lambdas"], "channels": nested_strings(self.channels),
                        "decision": lower["decision"], "value": lower["value"]}
        return out


def certificate_status(value: Fraction, bound: Fraction, exact_lambdas: bool,
                       lower: Sequence[Fraction], upper: Sequence[Fraction]) -> str:
    if value > bound:
        return str(UNPROVED)
    if exact_lambdas and tuple(lower) == tuple(upper) and value == bound:
        return str(PROVED)
    return str(BRACKET)


