"""Audits of explicit count mechanisms (`dpverify audit` on a [mechanism] file with a
[consumer]; docs/theory.md, "Auditing a count mechanism").

For a mechanism x[i, r] and one consumer (Gupte-Sundararajan minimax, or Bayesian):

* its exact privacy level alpha* (the largest alpha for which x is alpha-DP, GS
  Definition 2), and whether it meets the claimed alpha;
* the consumer's loss under its best post-processing of x (minimax: the best randomised
  T, GS section 4.2, bracketed by the dual prior; Bayes: the best deterministic remap);
* the optimal alpha-DP mechanism's loss for the consumer, at the claimed alpha and at
  alpha* (the count verifier's LP, what `verify` reports), and the geometric mechanism's;
* whether x can be derived from the geometric mechanism (GS Theorem 2, as `derive`).

Losses are minimised; the verdicts mirror the protocol audit's (`optimal`, `suboptimal`,
`not-private`, `contradiction` when the mechanism's explicit loss is below the optimum at
its own alpha*, `error`).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from fractions import Fraction

import numpy as np

from dpverify.reasons import ReasonCode
from dpverify.spec.count_model import CountSpec
from dpverify.spec.mechanism_audit import MechanismAudit
from dpverify.theory.count.geometric import (
    as_exact_array,
    bayes_remap,
    derive,
    minimax_loss,
    privacy_level,
)
from dpverify.theory.units import Units
from dpverify.verifiers.audit.result import MechanismResult, rational_text
from dpverify.verifiers.count.lps import best_post_processing, geometric_bound
from dpverify.verifiers.count.result import CountResult
from dpverify.verifiers.count.verifier import loss_units, verify_count
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import Bracket, ProblemResult, Verdict

EXACT_LEVEL_N = 200  # the exact alpha* up to this n (floats beyond)


def exact_privacy_level(rows: list[list[Fraction]]) -> Fraction:
    """alpha* = min over adjacent rows and columns of min/max (GS Definition 2): the
    largest alpha with alpha x[i+1, r] <= x[i, r] and alpha x[i, r] <= x[i+1, r]; columns
    where both are 0 constrain nothing. Exact."""
    best = Fraction(1)
    for a, b in zip(rows, rows[1:], strict=False):
        for u, v in zip(a, b, strict=True):
            hi = max(u, v)
            if hi > 0:
                best = min(best, min(u, v) / hi)
    return best


def _level(audit: MechanismAudit) -> float | Fraction:
    mech = audit.mechanism
    if mech.exact and mech.n <= EXACT_LEVEL_N:
        return exact_privacy_level([list(r) for r in mech.matrix])
    return privacy_level(np.array([[float(v) for v in r] for r in mech.matrix]))


def _private(audit: MechanismAudit, level: float | Fraction, tol: float) -> bool:
    """alpha* >= alpha claimed: exactly when both are exact, else in epsilon within tol."""
    mech = audit.mechanism
    if isinstance(level, Fraction) and mech.alpha_exact is not None:
        return level >= mech.alpha_exact
    if level <= 0:
        return mech.alpha <= 0
    claimed = (float(mech.epsilon_exact) if mech.epsilon_exact is not None
               else (math.inf if mech.alpha == 0 else -math.log(mech.alpha)))
    return -math.log(float(level)) <= claimed + tol


def _optimum(consumer: CountSpec, options: VerifyOptions) -> tuple[float | None, float | None,
                                                                   str]:
    """(the optimal alpha-DP mechanism's loss, the geometric mechanism's, why not)."""
    result = verify_count(consumer, options).results[0]
    assert isinstance(result, CountResult)
    if result.verdict is Verdict.ERROR:
        return None, None, f"the optimal mechanism's loss is undecided: {result.reason}"
    return result.mechanism_optimum, result.geometric_value, ""


def _loss_of(audit: MechanismAudit, units: Units, options: VerifyOptions
             ) -> tuple[float, float, np.ndarray] | str:
    """The consumer's loss under its best post-processing of x, as (lower, upper, T) in
    user units: upper is the loss of x T for an explicit T, lower a bound from the prior."""
    consumer = audit.consumer
    unit = units.unit
    x = np.array([[float(v) for v in row] for row in audit.mechanism.matrix])
    N = x.shape[0]
    if consumer.prior is not None:
        prior = np.array([float(p) for p in consumer.prior])
        value, remap = bayes_remap(x, unit, prior)
        T = np.zeros((N, N))
        T[np.arange(N), remap] = 1.0
        low = high = float(value)
    else:
        found = best_post_processing(x, unit, consumer.side_information,
                                     options.solver())
        if found.T is None or found.q is None:
            return "the best post-processing LP did not solve"
        T = found.T
        high = float(minimax_loss(x @ T, unit, consumer.side_information))
        low = min(high, geometric_bound(x, unit, found.q))
    low_user, high_user = units.user_array(np.array([low, high])).tolist()
    return low_user, high_user, T


def audit_mechanism(audit: MechanismAudit, options: VerifyOptions) -> ProblemResult:
    start = time.perf_counter()
    mech, consumer = audit.mechanism, audit.consumer
    level = _level(audit)
    private = _private(audit, level, options.tol)
    if mech.exact and mech.alpha_exact is not None:
        derivation = derive(as_exact_array(mech.matrix), mech.alpha_exact)
    else:
        derivation = derive(np.array([[float(v) for v in r] for r in mech.matrix]),
                            mech.alpha, options.tol)
    header = {"n": mech.n,
              "claimed_alpha": (rational_text(mech.alpha_exact) if mech.alpha_exact is not None
                                else mech.alpha),
              "achieved_alpha": (rational_text(level) if isinstance(level, Fraction)
                                 else float(level)),
              "private": private, "derivable": derivation.derivable}
    optimal, geometric, why = _optimum(consumer, options)
    if isinstance(level, Fraction) and level == mech.alpha_exact:
        achieved_opt, why_a = optimal, why
    else:
        at_level = replace(consumer, alpha=float(level), alpha_exact=Fraction(level),
                           epsilon_exact=None)
        achieved_opt, _, why_a = _optimum(at_level, options)
    # the loss's units over the rows that matter, as the optimum's (verify_count): the
    # tolerance is relative to that range, not to rows outside the side information
    units = loss_units(consumer)
    loss = _loss_of(audit, units, options)
    verdict, reason = Verdict.ERROR, why or (loss if isinstance(loss, str) else "")
    code: ReasonCode | None = ReasonCode.BOUND_UNDECIDED if why else ReasonCode.SOLVER_FAILED
    low = high = None
    T = None
    if not isinstance(loss, str):
        low, high, T = loss
        verdict, reason, code = decide(low, high, optimal, achieved_opt, private,
                                       units.user_width(options.tol), why)
    if achieved_opt is None and why_a:
        reason = "; ".join(r for r in (reason, why_a) if r)
    code = code if code is not None or not reason else ReasonCode.NOTE
    eff = None
    if high is not None and optimal is not None:
        eff = 1.0 if high == optimal == 0 else (optimal / high if high > 0 else None)
    result = MechanismResult("consumer", consumer.accuracy, high, optimal, achieved_opt,
                             geometric, eff, verdict, time.perf_counter() - start,
                             reason=reason, post_processing=T, code=code if reason else None,
                             loss_bounds=Bracket.of(low, high) if low != high else None)
    return ProblemResult(mech.name, mech.source, "mechanism", (result,), header,
                         setting=mech.setting)


def decide(low: float, high: float, optimal: float | None, achieved: float | None,
           private: bool, t: float, no_bound: str) -> tuple[Verdict, str, ReasonCode | None]:
    """The verdict, its reason and the reason's code; losses and the tolerance `t` in user
    units (the tolerance relative to the range of the loss on the rows that matter,
    theory/units.py)."""
    if achieved is not None and high < achieved - t:
        return Verdict.CONTRADICTION, (
            f"CONTRADICTION: post-processing this mechanism reaches loss {high:.12g}, below "
            f"the optimal loss {achieved:.12g} of every mechanism at its own privacy level: "
            "impossible (the LP's optimum bounds every such mechanism), so dpverify has a "
            "bug: please report it"), ReasonCode.CONTRADICTION
    if not private:
        return (Verdict.NOT_PRIVATE, "the mechanism misses its claimed privacy level alpha",
                ReasonCode.NOT_PRIVATE)
    if optimal is None:
        return Verdict.ERROR, no_bound, ReasonCode.BOUND_UNDECIDED
    if high <= optimal + t:
        return Verdict.OPTIMAL, "", None
    if low > optimal + t:
        return Verdict.SUBOPTIMAL, "", None
    return Verdict.ERROR, (f"undecided: the mechanism's loss lies in [{low:.12g}, "
                           f"{high:.12g}], which straddles the optimum {optimal:.12g} plus "
                           "--tol"), ReasonCode.BRACKET_TOO_WIDE
