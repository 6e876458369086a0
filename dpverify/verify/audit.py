"""Audits of explicit protocols (`kind = "protocol"`; docs/theory.md, "Protocol audits").

For a protocol file: the privacy levels the protocol actually achieves (exact for exact
kernels, theory/protocol.py), and for each agent and accuracy its accuracy under its
optimal decision rule, computed from the transcripts alone (verify/protocol_rules.py),
against the relaxed optimum (KOV 2015, Theorem 3.1; what `verify` reports) at the claimed
levels and at the achieved ones. Verdicts, in normalised units (gains mapped to [0, 1], so
the tolerance is relative to their range):

* `contradiction`: the protocol's accuracy (what an explicit rule achieves) exceeds the
  relaxed optimum at its *own achieved* levels by more than --tol. The relaxation bounds
  every protocol that meets those levels, so this is a bug, reported loudly.
* `not-private`: a party's achieved level exceeds the claimed one.
* `optimal`: the protocol reaches the bound at the claimed levels within --tol.
* `suboptimal`: its accuracy (an upper bound on it, from the dual prior) is below the
  bound by more than --tol. The normal case for a private protocol, not an error.
* `error`: a bound or a value could not be computed or decided.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpverify.lp import solve
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.protocol_model import ProtocolSpec
from dpverify.spec.tables import tabulate
from dpverify.theory.decision import party_label_gains
from dpverify.theory.protocol import (
    Level,
    Transcripts,
    achieved_lambdas,
    level_epsilon,
    rr_transcripts,
    transcript_labels,
    transcripts,
)
from dpverify.theory.rr import rr_channel
from dpverify.verify.audit_result import AuditResult, efficiency, rational_text
from dpverify.verify.lps import PointFamily, relaxed_lp
from dpverify.verify.multiparty import check_size, verify_agent
from dpverify.verify.options import VerifyOptions
from dpverify.verify.protocol_rules import BRACKET, ProtocolValue, protocol_value
from dpverify.verify.result import AgentResult, ProblemResult, Verdict
from dpverify.verify.units import Units, units_of

# Exact transcripts up to this many entries of P (inputs x transcripts); floats beyond.
EXACT_CELLS = 1 << 18
# Achieved levels above this are bounded with the party's factor unconstrained (the
# identity): a larger DP cone, so a still valid, if weaker, upper bound (a float LP keeps
# no entry below 1/(1 + lambda) anyway).
UNBOUNDED_LEVEL = 1e12


@dataclass(frozen=True)
class Privacy:
    """The levels a protocol achieves, and whether each meets the claimed one."""

    achieved: tuple[Level, ...]
    private: tuple[bool, ...]
    misses: tuple[str, ...]  # each party that misses its claimed level, and by how much
    notes: tuple[str, ...]  # claims exceeded within --tol

    @property
    def all_private(self) -> bool:
        return all(self.private)


def claimed_epsilon(spec: ProtocolSpec, i: int) -> float:
    if spec.epsilons_exact is not None:
        return float(spec.epsilons_exact[i])
    assert spec.lambdas_exact is not None  # the spec has one of the two
    return level_epsilon(spec.lambdas_exact[i])


def privacy(spec: ProtocolSpec, tr: Transcripts, tol: float) -> Privacy:
    """Achieved levels against the claimed ones: exactly when both are exact rationals
    (`lambda` claims, exact kernels), else in epsilon within `tol` (e^epsilon is irrational,
    and float kernels carry rounding), with a note whenever the claim is exceeded at all."""
    achieved = achieved_lambdas(tr)
    private: list[bool] = []
    misses: list[str] = []
    notes: list[str] = []
    for i, level in enumerate(achieved):
        claim = claimed_epsilon(spec, i)
        eps = level_epsilon(level)
        if isinstance(level, Fraction) and spec.lambdas_exact is not None:
            ok = level <= spec.lambdas_exact[i]
        else:
            ok = eps <= claim + tol
            if ok and eps > claim:
                notes.append(f"party {i + 1}: achieved epsilon {eps:.17g} exceeds the claimed "
                             f"{claim:.17g} by {eps - claim:.3g}, within --tol")
        if not ok:
            shown = "inf" if eps == math.inf else f"{eps:.12g}"
            misses.append(f"party {i + 1}: achieved epsilon {shown} > claimed {claim:.12g}")
        private.append(ok)
    return Privacy(achieved, tuple(private), tuple(misses), tuple(notes))


def level_json(level: Level) -> Any:
    """An achieved lambda in JSON: "p/q" when exact, a float otherwise, "inf" unbounded."""
    if level == math.inf:
        return "inf"
    return rational_text(level) if isinstance(level, Fraction) else float(level)


def _header(spec: ProtocolSpec, tr: Transcripts, priv: Privacy) -> dict[str, Any]:
    claimed: list[Any] = ([rational_text(v) for v in spec.lambdas_exact]
                          if spec.lambdas_exact is not None else list(spec.lambdas))
    return {
        "parties": spec.parties, "claimed_lambdas": claimed,
        "achieved_lambdas": [level_json(v) for v in priv.achieved],
        "achieved_epsilons": [("inf" if e == math.inf else e)
                              for e in (level_epsilon(v) for v in priv.achieved)],
        "private": priv.all_private, "private_by_party": list(priv.private),
        "transcripts": tr.count, "exact": tr.exact,
        **({"privacy_notes": list(priv.misses + priv.notes)}
           if priv.misses or priv.notes else {}),
    }


def audit_protocol(spec: ProtocolSpec, options: VerifyOptions) -> ProblemResult:
    """Audit one protocol file: one result per agent and accuracy."""
    claimed = spec.claimed()
    if claimed.binary:
        check_size(claimed, options)
    else:  # more than two symbols: the ray-product LP (docs/theory.md, section 6)
        from dpverify.verify.multisymbol import check_symbol_size

        check_symbol_size(claimed, options)
    exact = spec.exact and spec.num_inputs * spec.num_transcripts <= EXACT_CELLS
    tr = transcripts(spec, exact=exact)
    priv = privacy(spec, tr, options.tol)
    labels = tuple(transcript_labels(tr.sizes))
    results = [_audit_agent(spec, agent, accuracy, tr, priv, labels, options)
               for agent in spec.agents for accuracy in spec.accuracies]
    return ProblemResult(spec.name, spec.source, spec.kind, tuple(results),
                         _header(spec, tr, priv))


def _units(spec: ProtocolSpec, agent: AgentSpec) -> Units:
    return units_of(tabulate(spec.claimed(), agent).gain_exact)


def _bound(spec: ProtocolSpec, agent: AgentSpec, accuracy: Accuracy, levels: Sequence[Level],
           units: Units, options: VerifyOptions) -> tuple[float | None, str]:
    """The relaxed optimum (user units) at finite `levels` (verify_agent: `verify`'s value,
    settled exactly when its floats disagree), or with unbounded parties (the identity
    factor, checked against RR written as a protocol). (None, why) when undecided."""
    if all(v != math.inf and v <= UNBOUNDED_LEVEL for v in levels):
        bound, _, why = relaxed_bound(spec.at_levels(tuple(Fraction(v) for v in levels)),
                                      agent, accuracy, options)
        if bound is not None:
            return bound, ""
        return None, f"the relaxed bound at the achieved levels is undecided ({why})"
    if not spec.claimed().binary:
        return None, ("the relaxed bound with unbounded parties is computed for bits only, "
                      "not for alphabets > 2")
    return _unbounded_bound(agent, accuracy, levels, units, options)


def relaxed_bound(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                  options: VerifyOptions) -> tuple[float | None, float | None, str]:
    """(the relaxed optimum, RR's value, why the bound is None): for bits what `verify`
    decides (verify_agent); for more symbols the exact ray-product bound (an upper bound
    whether or not m-ary RR reaches it; verify/multisymbol.py)."""
    if not spec.binary:
        from dpverify.verify.multisymbol import symbol_bound

        return symbol_bound(spec, agent, accuracy, options)
    result: AgentResult = verify_agent(spec, agent, accuracy, options)
    bound = result.relaxed_optimum if result.verdict is Verdict.OPTIMAL else None
    return bound, result.rr_value, result.reason


def _unbounded_bound(agent: AgentSpec, accuracy: Accuracy, levels: Sequence[Level],
                     units: Units, options: VerifyOptions) -> tuple[float | None, str]:
    worst = accuracy is Accuracy.WORST
    free = [v == math.inf or v > UNBOUNDED_LEVEL for v in levels]
    factors = tuple(np.eye(2) if f else rr_channel(float(v)) for v, f in zip(levels, free,
                                                                               strict=True))
    label_gains = units.unit if agent.party == 0 else party_label_gains(units.unit,
                                                                        agent.party)[0]
    sol = solve(relaxed_lp(label_gains, [PointFamily(factors=factors)], worst,
                           options.form).lp, options.backend, time_limit=options.time_limit,
                threads=options.threads, feasibility_tol=1e-10)
    rr_levels = [math.inf if f else v for v, f in zip(levels, free, strict=True)]
    rr = protocol_value(rr_transcripts(rr_levels), units.unit, None, agent.party, worst, options)
    if not sol.optimal or not rr.ok:
        return None, "the relaxed bound with unbounded parties did not solve"
    if abs(sol.objective - rr.value) > options.tol:
        return None, (f"the relaxed bound with unbounded parties ({sol.objective:.12g}) and "
                      f"randomized response ({rr.value:.12g}) disagree (normalised units)")
    return units.user(sol.objective), ""


def _audit_agent(spec: ProtocolSpec, agent: AgentSpec, accuracy: Accuracy, tr: Transcripts,
                 priv: Privacy, labels: tuple[str, ...], options: VerifyOptions
                 ) -> AuditResult:
    start = time.perf_counter()
    units = _units(spec, agent)
    worst = accuracy is Accuracy.WORST
    bound_c, rr_c, why_c = relaxed_bound(spec.claimed(), agent, accuracy, options)
    same = spec.lambdas_exact is not None and tuple(priv.achieved) == spec.lambdas_exact
    bound_a, why_a = (bound_c, "") if same else _bound(spec, agent, accuracy, priv.achieved,
                                                       units, options)
    value = protocol_value(tr, units.unit, units.exact if tr.exact else None,
                           agent.party, worst, options)
    verdict, reason = decide(value, units.normalised(bound_c), units.normalised(bound_a),
                             priv, options.tol, f"the relaxed bound at the claimed levels is "
                                                f"undecided: {why_c}")
    if bound_a is None:  # no contradiction test: say why
        reason = "; ".join(r for r in (reason, why_a) if r)
    protocol = units.user(value.value) if value.ok else None
    exact_value = (units.lo + units.span * value.exact) if value.exact is not None else None
    low, high = units.user(value.lower), units.user(value.upper)
    bounds = (low, high) if value.method == BRACKET and low is not None and \
        high is not None else None
    rule = None
    if value.ok:
        rule = value.rule[0] if agent.party == 0 else value.rule
    return AuditResult(
        agent.name, accuracy.value, protocol, bound_c, bound_a, rr_c,
        efficiency(protocol, bound_c), verdict,
        time.perf_counter() - start, reason=reason, method=value.method,
        protocol_value_exact=exact_value,
        protocol_value_bounds=bounds,
        rule=rule, outputs=tabulate(spec.claimed(), agent).outputs, transcripts=labels)


def decide(value: ProtocolValue, bound: float | None, achieved_bound: float | None,
           priv: Privacy, tol: float, no_bound: str = "no bound") -> tuple[Verdict, str]:
    """The verdict of one result (module docstring); every value in normalised units.
    `no_bound` says why `bound` is None."""
    if not value.ok:
        return Verdict.ERROR, value.failure
    if achieved_bound is not None and value.lower > achieved_bound + tol:
        return Verdict.CONTRADICTION, (
            f"CONTRADICTION: an explicit decision rule on this protocol reaches "
            f"{value.lower:.12g}, above the relaxed optimum {achieved_bound:.12g} at the "
            f"protocol's own achieved levels (by {value.lower - achieved_bound:.3g} of the "
            "gains' range). Kairouz-Oh-Viswanath Theorem 3.1 makes that impossible, so "
            "dpverify has a bug (in the audit or the LP): please report it")
    if not priv.all_private:
        return Verdict.NOT_PRIVATE, ("misses the claimed privacy level: "
                                     + "; ".join(priv.misses))
    if bound is None:
        return Verdict.ERROR, no_bound
    if value.lower >= bound - tol:
        return Verdict.OPTIMAL, ""
    if value.upper < bound - tol:
        return Verdict.SUBOPTIMAL, ""
    return Verdict.ERROR, (
        f"undecided: the protocol's value is only known to lie in [{value.lower:.12g}, "
        f"{value.upper:.12g}], which straddles the bound {bound:.12g} minus --tol "
        "(normalised units)")


__all__ = ["audit_protocol", "decide", "privacy"]
