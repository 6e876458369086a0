"""Closed forms drawn beside the computed values (docs/theory.md, "Closed forms").

Observer XOR of `k` bits, indicator gain, every party at the same `lambda = e^epsilon`
(Kairouz-Oh-Viswanath, Corollary 3.1), for the average and the worst case alike:

    sum_{i=0}^{floor(k/2)} C(k, 2i) lambda^(k-2i) / (1+lambda)^k  =  (1 + t^k) / 2,

with `t = (lambda - 1)/(lambda + 1) = tanh(epsilon/2)`: the binomial sum is
`((p + q)^k + (p - q)^k) / 2` for `p = lambda/(1+lambda)`, `q = 1/(1+lambda)`. The right-hand
side is the form computed here: no cancellation for small epsilon, no overflow for large.
Its small-epsilon expansion is `1/2 + 2^-(k+1) epsilon^k + O(epsilon^(k+1))`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from dpverify.spec.model import AgentSpec, MultipartySpec
from dpverify.spec.setting import Setting

CLOSED_FORM = "Corollary 3.1"
EXPANSION_MAX_EPSILON = 1.0  # where the expansion is drawn ("small epsilon")


def xor_closed_form(k: int, *, epsilon: float | Fraction | None = None,
                    lam: float | Fraction | None = None) -> float:
    """Corollary 3.1: the optimal accuracy of the observer's XOR of k bits at one level."""
    if epsilon is not None:
        t = math.tanh(float(epsilon) / 2)
    elif lam is not None:
        t = float((Fraction(lam) - 1) / (Fraction(lam) + 1)) if isinstance(lam, Fraction) \
            else (lam - 1) / (lam + 1)
    else:
        raise ValueError("give epsilon or lam")
    return (1 + t ** k) / 2


def small_epsilon_expansion(k: int, epsilon: float) -> float:
    """`1/2 + 2^-(k+1) epsilon^k`: the first terms of Corollary 3.1 in epsilon."""
    return 0.5 + 2.0 ** -(k + 1) * epsilon ** k


def is_xor_observer(agent: AgentSpec) -> bool:
    """The observer computes the XOR of every bit with the indicator gain and its two
    outputs: Corollary 3.1's setting."""
    f, gain = agent.function, agent.gain
    return (agent.party == 0 and f.kind == "named" and f.name == "xor"
            and gain.kind == "named" and gain.name == "indicator"
            and (agent.outputs is None or sorted(agent.outputs) == [0, 1]))


def closed_forms(spec: MultipartySpec) -> dict[str, float]:
    """The closed-form optimum of each agent that has one, by agent name (Corollary 3.1 is
    for bits under pure epsilon-DP: none in other settings, CLOSED_FORMS)."""
    return CLOSED_FORMS[spec.setting](spec)


def _no_closed_forms(spec: MultipartySpec) -> dict[str, float]:
    return {}


def _bits_closed_forms(spec: MultipartySpec) -> dict[str, float]:
    """Corollary 3.1: observer XOR under the indicator gain at one level."""
    if len(set(spec.lambdas)) != 1:
        return {}
    out: dict[str, float] = {}
    for agent in spec.agents:
        if not is_xor_observer(agent):
            continue
        if spec.epsilons_exact is not None:
            out[agent.name] = xor_closed_form(spec.parties, epsilon=spec.epsilons_exact[0])
        elif spec.lambdas_exact is not None:
            out[agent.name] = xor_closed_form(spec.parties, lam=spec.lambdas_exact[0])
    return out


# The closed forms of each setting of a multi-party problem (tests/test_codebase.py checks
# that it covers them).
CLOSED_FORMS: dict[Setting, Callable[[MultipartySpec], dict[str, float]]] = {
    Setting.BITS: _bits_closed_forms, Setting.SYMBOLS: _no_closed_forms,
    Setting.DELTA: _no_closed_forms, Setting.DELTA_SYMBOLS: _no_closed_forms,
}
