"""Exact upper and lower bounds of a certificate (theory.md, "Certificates"; KOV 2015,
Theorem 3.1).

Upper bound. For a prior pi on inputs and mu on inputs, if for every corner s (a column
T_s of S = S_1 (x) ... (x) S_k) and every label l
    sum_x T_s[x] mu[x] >= sum_x T_s[x] pi[x] gain(x, l)                          (C)
then, by multilinearity, (C) holds for every rank-one DP tensor, and sum(mu) bounds the
accuracy under pi of every DP protocol, hence its worst-case accuracy too.

Construction (S symmetric, rows and columns summing to 1): v[s] = max_l (S (pi * g_l))[s]
and mu = S^-1 v. Then S^T mu = v, so (C) holds with equality at the maximising label, and
sum(mu) = 1^T S^-1 v = sum(v). For a party the labels are pairs (y0, y1) with
gain(x, (y0, y1)) = w(f(x), y_{x_i}), and the maximum separates per own bit:
v[s] = sum_b max_y (S (pi * 1[x_i = b] * g_y))[s]. sum(v) is the accuracy under pi of RR
with the Bayes rule for pi.

Lower bound: RR with an explicit rule, its accuracy computed exactly (KOV eqs. 2-6).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.theory.certificates.format import BRACKET, PROVED, UNPROVED, Certificate
from dpverify.theory.exact import (
    Scaled,
    first_argmax,
    row_max,
    rr_apply,
    rr_inverse_apply,
)
from dpverify.theory.units import units_of


def own_bits(k: int, party: int) -> np.ndarray:
    """The party-th bit (1-based, x1 most significant) of every input."""
    return (np.arange(1 << k) >> (k - party)) & 1


def _parts(k: int, party: int) -> list[np.ndarray | None]:
    """Masks of the inputs each part of the label maximum ranges over (theory.md: a party's
    label (y0, y1) separates per own bit)."""
    if party == 0:
        return [None]
    bits = own_bits(k, party)
    return [bits == 0, bits == 1]


def weighted_gain(gain: Scaled, prior: Scaled, mask: np.ndarray | None) -> Scaled:
    """prior[x] * gain[x, y] (zero outside mask) as one scaled matrix."""
    num = prior.num[:, None] * gain.num
    if mask is not None:
        num = np.where(mask[:, None], num, 0)
    return Scaled(num.astype(object), prior.den * gain.den)


# --------------------------------------------------------------------------- upper bound


def label_maxima(lambdas: Sequence[Fraction], gain: Scaled, party: int,
                 prior: Scaled) -> Scaled:
    """v[s] = max over labels of sum_x T_s[x] pi[x] gain(x, label) (theory.md, Certificates).

    For a party, the maximum over pairs (y0, y1) is the sum of the per-own-bit maxima.
    """
    k = int(gain.num.shape[0]).bit_length() - 1
    parts = [rr_apply(lambdas, weighted_gain(gain, prior, mask)) for mask in _parts(k, party)]
    total = sum((row_max(scores.num) for scores in parts[1:]), row_max(parts[0].num))
    return Scaled(total, parts[0].den)  # every part has the same denominator


def upper_from_prior(lambdas: Sequence[Fraction], gain: Scaled, party: int,
                     prior: Sequence[Fraction]) -> tuple[list[Fraction], Fraction]:
    """mu = S^-1 v and bound = sum(mu) = sum(v) for the given exact prior."""
    v = label_maxima(lambdas, gain, party, Scaled.from_fractions(list(prior)))
    mu = rr_inverse_apply(lambdas, v)
    bound = mu.total()
    return mu.fractions(), bound


def check_upper(lambdas: Sequence[Fraction], gain: Scaled, party: int,
                prior: Sequence[Fraction], mu: Sequence[Fraction], bound: Fraction,
                uniform: bool) -> str:
    """The construction's own check of (C): S mu (forward transform) against every label's
    right-hand side; '' when it holds, else the first failure."""
    n = gain.num.shape[0]
    if any(p < 0 for p in prior) or sum(prior) != 1:
        return "the prior is not a distribution"
    if uniform and any(p != Fraction(1, n) for p in prior):
        return "the prior is not uniform"
    if sum(mu) != bound:
        return "bound != sum(mu)"
    lhs = rr_apply(lambdas, Scaled.from_fractions(list(mu)))
    v = label_maxima(lambdas, gain, party, Scaled.from_fractions(list(prior)))
    # lhs.num / lhs.den >= v.num / v.den for every corner
    for s, (a, b) in enumerate(zip(lhs.num.tolist(), v.num.tolist(), strict=False)):
        if a * v.den < b * lhs.den:
            return (f"corner {s}: sum_x T_s mu = {float(Fraction(a, lhs.den)):.17g} < "
                    f"{float(Fraction(b, v.den)):.17g}")
    return ""


# --------------------------------------------------------------------------- lower bound


def input_accuracies(lambdas: Sequence[Fraction], gain: Scaled, party: int,
                     decision) -> Scaled:
    """acc[x] = sum_tau P_RR[x, tau] sum_y Q[tau, y] w(f(x), y) exactly (KOV eqs. 2-6).

    A party decides from (tau, x_i): input x uses Q[x_i].
    """
    k = int(gain.num.shape[0]).bit_length() - 1
    q = Scaled.from_fractions(decision)
    if party == 0:
        u = rr_apply(lambdas, q)
        num = (gain.num * u.num).sum(axis=1)
        return Scaled(num, gain.den * u.den)
    bits = own_bits(k, party)
    u0 = rr_apply(lambdas, Scaled(q.num[0], q.den))
    u1 = rr_apply(lambdas, Scaled(q.num[1], q.den))
    mixed = np.where(bits[:, None] == 1, u1.num, u0.num)
    num = (gain.num * mixed).sum(axis=1)
    return Scaled(num, gain.den * u0.den)


def rule_value(lambdas: Sequence[Fraction], gain: Scaled, party: int, decision,
               worst: bool, relevant: np.ndarray | None = None) -> Fraction:
    """The exact accuracy of RR with `decision`: average over all inputs, or the minimum
    over the relevant ones (default all)."""
    acc = input_accuracies(lambdas, gain, party, decision)
    n = acc.num.shape[0]
    if worst:
        vals = acc.num if relevant is None else acc.num[relevant]
        return Fraction(int(min(vals.tolist())), acc.den)
    return Fraction(int(sum(acc.num.tolist())), acc.den * n)


def check_lower(lambdas: Sequence[Fraction], gain: Scaled, party: int, decision,
                value: Fraction, worst: bool) -> str:
    rows = decision if party == 0 else [r for half in decision for r in half]
    for tau, row in enumerate(rows):
        if any(q < 0 for q in row) or sum(row) != 1:
            return f"decision row {tau} is not a distribution"
    got = rule_value(lambdas, gain, party, decision, worst)
    return "" if got == value else (f"declared value {float(value):.17g} != recomputed "
                                    f"{float(got):.17g}")


def average_rule(lambdas: Sequence[Fraction], gain: Scaled, party: int):
    """RR's optimal average-case rule: argmax_y sum_x P[x, tau] w(f(x), y) (KOV eq. 5), per
    own bit for a party (eq. 2); ties to the first output."""
    k = int(gain.num.shape[0]).bit_length() - 1
    m = gain.num.shape[1]
    ones = Scaled.from_ints([1] * (1 << k))
    rules = []
    for mask in _parts(k, party):
        scores = rr_apply(lambdas, weighted_gain(gain, ones, mask)).num.tolist()
        rule = []
        for row in scores:
            best = first_argmax(row)
            rule.append(tuple(Fraction(int(j == best)) for j in range(m)))
        rules.append(tuple(rule))
    return rules[0] if party == 0 else tuple(rules)


# --------------------------------------------------------------------------- certificates


def _status(lower: Sequence[Fraction], upper: Sequence[Fraction], value: Fraction,
            bound: Fraction, exact_lambdas: bool) -> str:
    if value > bound:
        return UNPROVED
    if exact_lambdas and tuple(lower) == tuple(upper) and value == bound:
        return PROVED
    return BRACKET


def average_certificate(agent: str, outputs, gain_exact, party: int,
                        lower: Sequence[Fraction], upper: Sequence[Fraction],
                        exact_lambdas: bool) -> Certificate:
    """Uniform prior, mu = S^-1 v at the upper lambdas; the argmax rule at the lower ones."""
    units = units_of(gain_exact)  # see worst.worst_certificate
    gain = Scaled.from_fractions(units.exact)
    n = gain.num.shape[0]
    prior = tuple([Fraction(1, n)] * n)
    mu, bound = upper_from_prior(upper, gain, party, prior)
    decision = average_rule(lower, gain, party)
    value = rule_value(lower, gain, party, decision, worst=False)
    return finish(agent, "average", outputs, gain_exact, Scaled.from_fractions(gain_exact),
                  party, lower, upper, prior, units.dual_to_user(mu, prior),
                  units.to_user(bound), decision, units.to_user(value), exact_lambdas,
                  uniform=True, notes=())


def finish(agent, accuracy, outputs, gain_exact, gain, party, lower, upper, prior, mu,
            bound, decision, value, exact_lambdas, uniform, notes) -> Certificate:
    problems = [check_upper(upper, gain, party, prior, mu, bound, uniform),
                check_lower(lower, gain, party, decision, value, accuracy == "worst")]
    status = _status(lower, upper, value, bound, exact_lambdas)
    failed = [p for p in problems if p]
    if failed:
        status = UNPROVED
        notes = tuple(notes) + tuple(f"self-check failed: {p}" for p in failed)
    return Certificate(
        agent=agent, accuracy=accuracy, outputs=tuple(outputs),
        gain=tuple(tuple(Fraction(w) for w in row) for row in gain_exact),
        upper_lambdas=tuple(upper), prior=tuple(prior), mu=tuple(mu), bound=bound,
        lower_lambdas=tuple(lower), decision=decision, value=value, status=status,
        notes=tuple(notes))

