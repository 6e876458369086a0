"""The best non-interactive (epsilon_i, delta_i)-DP protocol: the product of the parties'
RR(epsilon_i, delta_i) with the agent's optimal decision rule (docs/theory.md, "Approximate
privacy").

Why it is optimal among non-interactive protocols, for every function, gain and accuracy:
in a non-interactive protocol party i publishes o_i ~ C_i(x_i) independently, and party i's
hockey-stick sum is sum_o max(0, C_i(o_i | a) - lambda C_i(o_i | b)) prod_{j != i}
C_j(o_j | x_j) = sum_{o_i} max(0, C_i(o_i | a) - lambda C_i(o_i | b)) (the other channels
sum to 1): the protocol is (epsilon_i, delta_i)-DP for party i exactly when C_i is. Each
such C_i is a post-processing G_i of RR(epsilon_i, delta_i) (Kairouz, Oh, Viswanath, *The
composition theorem for differential privacy*, Theorem 2.5), so the product protocol is the
product of RRs followed by the independent post-processings G_i, which every agent can
simulate: its optimal rule on the RR product does at least as well (average and worst
case alike).

The value is computed on the explicit protocol, exactly, by verifiers/protocol_value.py, as
an audit of the same protocol would. For an irrational lambda = e^epsilon it is bracketed
by the values at the rational brackets lo <= lambda <= hi: RR(lambda', delta) is a
post-processing of RR(lambda'', delta) for lambda' <= lambda'' (flip the said bit once more,
keep the reveals), so the value is non-decreasing in lambda; and RR at lo is
(epsilon, delta)-DP, an explicit protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from dpverify.records import record
from dpverify.theory.approx.rr import rr_delta_product
from dpverify.theory.units import Units
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.protocol_value import ProtocolValue, protocol_value


@record(eq=False)
class NonInteractive:
    """RR(epsilon_i, delta_i)'s value (normalised gains): lower (a protocol that meets the
    levels: at lambda_lo) <= the value at the true levels <= upper (at lambda_hi), exact;
    None with `failure` when it could not be computed exactly."""

    lower: Fraction | None
    upper: Fraction | None
    failure: str = ""


def rr_value(lambdas: Sequence[Fraction], deltas: Sequence[Fraction], units: Units,
             party: int, worst: bool, options: VerifyOptions) -> ProtocolValue:
    """The product of RR(epsilon_i, delta_i) at exact levels, valued under the agent's
    optimal rule (exact, or an exact bracket for a large worst case)."""
    tr = rr_delta_product([Fraction(v) for v in lambdas], [Fraction(d) for d in deltas])
    return protocol_value(tr, units.unit, units.exact, party, worst, options)


def noninteractive_value(lambdas_lo: Sequence[Fraction], lambdas_hi: Sequence[Fraction],
                         deltas: Sequence[Fraction], units: Units, party: int, worst: bool,
                         options: VerifyOptions) -> NonInteractive:
    """The best non-interactive value, exactly bracketed (module docstring)."""
    low = rr_value(lambdas_lo, deltas, units, party, worst, options)
    high = low if tuple(lambdas_lo) == tuple(lambdas_hi) else rr_value(
        lambdas_hi, deltas, units, party, worst, options)
    if low.lower_exact is None or high.upper_exact is None:
        return NonInteractive(None, None, low.failure or high.failure or "no exact value")
    return NonInteractive(low.lower_exact, high.upper_exact)
