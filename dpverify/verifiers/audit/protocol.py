"""Audits of explicit protocols (`kind = "protocol"`; docs/theory.md, "Protocol audits").

For a protocol file: the privacy levels the protocol actually achieves (exactly, from one
walk of its prefix tree: theory/protocols/tree.py), and for each agent and accuracy its
accuracy under its optimal decision rule, computed from the transcripts alone, exactly on
the classes of transcripts (verifiers/protocol_value.py), against the relaxed optimum (KOV
2015, Theorem 3.1; what `verify` reports) at the claimed levels and at the achieved ones
(verifiers/audit/bounds.py). Verdicts, in normalised units (gains mapped to [0, 1], so the
tolerance is relative to their range); floats decide one only when they clear its line by
more than FLOAT_SLACK, and closer an exact value meets the bound's exact bracket (a
certificate checked independently), or the verdict is `error`:

* `contradiction`: the protocol's accuracy (what an explicit rule achieves) exceeds the
  relaxed optimum at its *own achieved* levels by more than --tol. The relaxation bounds
  every protocol that meets those levels, so this is a bug, reported loudly.
* `not-private`: a party's achieved level exceeds the claimed one (whether or not the
  value could be computed: the levels are exact).
* `optimal`: the protocol reaches the bound at the claimed levels within --tol.
* `suboptimal`: its accuracy (an upper bound on it, from the dual prior) is below the
  bound by more than --tol. The normal case for a private protocol, not an error.
* `error`: a bound or a value could not be computed or decided.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from dpverify.policy import MAX_EXACT_BYTES as POLICY_EXACT_BYTES
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.spec.model import Accuracy, AgentSpec
from dpverify.spec.protocol_model import ProtocolSpec
from dpverify.spec.setting import Setting
from dpverify.spec.tables import tabulate
from dpverify.theory.protocols.transcripts import (
    Level,
    Transcripts,
    level_epsilon,
    transcript_labels,
    transcripts,
)
from dpverify.theory.protocols.tree import TranscriptClasses, transcript_classes
from dpverify.theory.units import Units, units_of
from dpverify.verifiers.audit.bounds import (
    BOUNDS,
    UNBOUNDED_LEVEL,
    Bound,
    achieved_bound,
    exact_bracket,
    float_ceiling,
    relaxed_bound,
)
from dpverify.verifiers.audit.result import AuditResult, efficiency, rational_text
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.progress import stage
from dpverify.verifiers.protocol_value import BRACKET, FLOAT, ProtocolValue, protocol_value
from dpverify.verifiers.result import ProblemResult, Verdict

# P on the classes of transcripts (theory/protocols/tree.py) is held exactly up to about
# this much memory (policy.py). Beyond, an exact protocol's value is undecided (exit
# status 3: never floats in its place); a float protocol is valued in floats.
MAX_EXACT_BYTES = POLICY_EXACT_BYTES
# Floats decide a verdict only when they clear its line (bound - tol, or the achieved
# bound + tol) by more than this (normalised units); closer, it is decided exactly.
FLOAT_SLACK = 1e-10


@record
class Privacy:
    """The levels a protocol achieves, and whether each meets the claimed one."""

    achieved: tuple[Level, ...]
    private: tuple[bool, ...]
    misses: tuple[str, ...]  # each party that misses its claimed level, and by how much
    notes: tuple[str, ...]  # claims exceeded within --tol
    exact: bool = True  # the kernels are exact (not TOML floats)

    @property
    def all_private(self) -> bool:
        return all(self.private)


def claimed_epsilon(spec: ProtocolSpec, i: int) -> float:
    if spec.epsilons_exact is not None:
        return float(spec.epsilons_exact[i])
    assert spec.lambdas_exact is not None  # the spec has one of the two
    return level_epsilon(spec.lambdas_exact[i])


def privacy(spec: ProtocolSpec, achieved: tuple[Level, ...], tol: float) -> Privacy:
    """Achieved levels (exact: theory/protocols/tree.py) against the claimed ones: exactly
    when both are exact rationals (`lambda` claims, exact kernels), else in epsilon within
    `tol` (e^epsilon is irrational, and a float kernel carries the rounding of its
    decimals), with a note whenever the claim is exceeded at all."""
    private: list[bool] = []
    misses: list[str] = []
    notes: list[str] = []
    for i, level in enumerate(achieved):
        claim = claimed_epsilon(spec, i)
        eps = level_epsilon(level)
        if spec.exact and isinstance(level, Fraction) and spec.lambdas_exact is not None:
            ok = level <= spec.lambdas_exact[i]
            if not ok:
                misses.append(f"party {i + 1}: achieved lambda {_short(level)} > claimed "
                              f"{_short(spec.lambdas_exact[i])}")
        else:
            ok = eps <= claim + tol
            if ok and eps > claim:
                notes.append(f"party {i + 1}: achieved epsilon {eps:.17g} exceeds the claimed "
                             f"{claim:.17g} by {eps - claim:.3g}, within --tol")
            if not ok:
                digits = 12 if f"{eps:.12g}" != f"{claim:.12g}" else 17
                shown = "inf" if eps == math.inf else f"{eps:.{digits}g}"
                misses.append(f"party {i + 1}: achieved epsilon {shown} > claimed "
                              f"{claim:.{digits}g}")
        private.append(ok)
    return Privacy(achieved, tuple(private), tuple(misses), tuple(notes), spec.exact)


def _short(level: Fraction) -> str:
    """A rational level for a line of text: "p/q", or about its float when long."""
    text = rational_text(level)
    return text if len(text) <= 40 else f"~{float(level):.17g}"


def level_json(level: Level, exact: bool = True) -> Any:
    """An achieved lambda in JSON: "p/q" for exact kernels, a float for float kernels (the
    exact value when no float holds it), "inf" unbounded."""
    if level == math.inf:
        return "inf"
    if isinstance(level, Fraction) and (exact or level > Fraction(np.finfo(float).max)):
        return rational_text(level)
    return float(level)


def _header(spec: ProtocolSpec, tr: Transcripts | None, priv: Privacy) -> dict[str, Any]:
    claimed: list[Any] = ([rational_text(v) for v in spec.lambdas_exact]
                          if spec.lambdas_exact is not None else list(spec.lambdas))
    return {
        "parties": spec.parties, "claimed_lambdas": claimed,
        "achieved_lambdas": [level_json(v, priv.exact) for v in priv.achieved],
        "achieved_epsilons": [("inf" if e == math.inf else e)
                              for e in (level_epsilon(v) for v in priv.achieved)],
        "private": priv.all_private, "private_by_party": list(priv.private),
        "transcripts": spec.num_transcripts, "exact": tr is not None and tr.exact,
        **({"privacy_notes": list(priv.misses + priv.notes)}
           if priv.misses or priv.notes else {}),
    }


def valued(spec: ProtocolSpec, classes: TranscriptClasses) -> tuple[Transcripts | None, str]:
    """P to value the agents on: on the classes, exactly, within MAX_EXACT_BYTES; else in
    floats for float kernels, and none for exact ones (with why)."""
    size = classes.matrix_bytes()
    if classes.weights is not None and size <= MAX_EXACT_BYTES:
        return classes.transcripts(), ""
    if not spec.exact:
        return transcripts(spec, exact=False), ""
    return None, (f"undecided: the protocol's value needs P on {classes.count:,} classes of "
                  f"transcripts in exact rationals, about {max(size, MAX_EXACT_BYTES + 1):,} "
                  f"bytes; at most {MAX_EXACT_BYTES:,} are held")


def audit_protocol(spec: ProtocolSpec, options: VerifyOptions) -> ProblemResult:
    """Audit one protocol file: one result per agent and accuracy, by the setting of the
    levels it claims (AUDITS)."""
    return AUDITS[spec.setting](spec, options)


def _audit_pure(spec: ProtocolSpec, options: VerifyOptions) -> ProblemResult:
    """A protocol claiming pure epsilon-DP: against the relaxed bound of its setting
    (bounds.py, BOUNDS: the corner LP for bits, the ray-product LP for more symbols)."""
    claimed = spec.claimed()
    BOUNDS[claimed.setting].check_size(claimed, options)
    classes = transcript_classes(spec, MAX_EXACT_BYTES)
    priv = privacy(spec, classes.levels(), options.tol)
    tr, why = valued(spec, classes)
    labels = tuple(transcript_labels(tuple(r.messages for r in spec.rounds)))
    results = []
    for agent in spec.agents:
        for accuracy in spec.accuracies:
            stage(spec.name, agent.name, accuracy.value, "audit")
            results.append(_audit_agent(spec, agent, accuracy, tr, why, priv, labels, options))
    return ProblemResult(spec.name, spec.source, spec.kind, tuple(results),
                         _header(spec, tr, priv), setting=spec.setting)


def _audit_delta(spec: ProtocolSpec, options: VerifyOptions) -> ProblemResult:
    """A protocol claiming (epsilon, delta) with some delta > 0 (verifiers/audit/delta.py):
    the pure levels achieved are reported as for every protocol, the privacy verdict is
    each party's achieved delta at its claimed epsilon."""
    from dpverify.verifiers.audit.delta import (
        audit_delta_agent,
        check_delta_size,
        delta_header,
        delta_privacy,
    )

    check_delta_size(spec.claimed(), options)
    classes = transcript_classes(spec, MAX_EXACT_BYTES)
    pure = privacy(spec, classes.levels(), options.tol)
    tr, why = valued(spec, classes)
    priv = delta_privacy(spec, tr, why, options.tol)
    labels = tuple(transcript_labels(tuple(r.messages for r in spec.rounds)))
    results = []
    for agent in spec.agents:
        for accuracy in spec.accuracies:
            stage(spec.name, agent.name, accuracy.value, "audit")
            results.append(audit_delta_agent(spec, agent, accuracy, tr, why, priv, labels,
                                             options))
    header = {k: v for k, v in _header(spec, tr, pure).items() if k != "privacy_notes"}
    return ProblemResult(spec.name, spec.source, spec.kind, tuple(results),
                         {**header, **delta_header(priv)}, setting=spec.setting)


def _units(spec: ProtocolSpec, agent: AgentSpec) -> Units:
    return units_of(tabulate(spec.claimed(), agent).gain_exact)


def _bound_levels(priv: Privacy) -> tuple[Level, ...]:
    """The achieved levels to bound at: exact ones as they are; a float protocol's rounded
    up to binary64 (a float LP keeps those, and a bound at a larger level stays valid)."""
    if priv.exact:
        return priv.achieved
    return tuple(v if v > UNBOUNDED_LEVEL else float_ceiling(Fraction(v))
                 for v in priv.achieved)


def _audit_agent(spec: ProtocolSpec, agent: AgentSpec, accuracy: Accuracy,
                 tr: Transcripts | None, why: str, priv: Privacy, labels: tuple[str, ...],
                 options: VerifyOptions) -> AuditResult:
    start = time.perf_counter()
    units = _units(spec, agent)
    worst = accuracy is Accuracy.WORST
    claimed = spec.claimed()
    bound_c, rr_c, why_c, proof_c = relaxed_bound(claimed, agent, accuracy, options)
    bound = Bound(units.normalised(bound_c), f"the relaxed bound at the claimed levels is "
                  f"undecided: {why_c}", lambda: exact_bracket(claimed, agent, accuracy,
                                                               options, units, proof_c))
    levels = _bound_levels(priv)
    same = spec.lambdas_exact is not None and tuple(levels) == spec.lambdas_exact
    achieved = bound if same else achieved_bound(spec.at_levels, claimed.setting, agent,
                                                 accuracy, levels, units, options)
    if tr is None:  # P too large to hold exactly (valued)
        value = ProtocolValue(np.nan, np.nan, np.zeros((0, 0, 0)), FLOAT, failure=why,
                              failure_code=ReasonCode.SIZE_LIMIT)
    else:
        value = protocol_value(tr, units.unit, units.exact if tr.exact else None,
                               agent.party, worst, options)
    verdict, reason, code = decide(value, bound, achieved, priv, options.tol)
    if achieved.value is None:  # no contradiction test: say why
        reason = "; ".join(r for r in (reason, achieved.why) if r)
    code = code if code is not None or not reason else ReasonCode.NOTE
    # user units from the exact value when there is one (so that equal exact values print
    # as equal floats)
    protocol = None if not value.ok else units.user(
        value.lower_exact if value.lower_exact is not None else value.value)
    # a float kernel's exact value is that of its binary rationals: not written ([expect]
    # tables take the float; `check --update` could not write thousands of digits)
    exact_value = units.to_user(value.exact) \
        if value.exact is not None and spec.exact else None
    low, high = units.user(value.lower), units.user(value.upper)
    bounds = (low, high) if value.method == BRACKET and low is not None and \
        high is not None else None
    rule = None
    if value.ok and tr is not None:
        rule = tr.expand(value.rule[0] if agent.party == 0 else value.rule)
    proved = None if bound.proved is None else units.to_user(bound.proved)
    relaxed = units.user(bound.proved) if bound.proved is not None else bound_c
    achieved_value = units.user(achieved.proved) if achieved.proved is not None else \
        units.user(achieved.value)
    return AuditResult(
        agent.name, accuracy.value, protocol, relaxed, achieved_value, rr_c,
        efficiency(protocol, relaxed), verdict,
        time.perf_counter() - start, reason=reason, method=value.method,
        protocol_value_exact=exact_value,
        protocol_value_bounds=bounds,
        rule=rule, outputs=tabulate(claimed, agent).outputs, transcripts=labels,
        relaxed_optimum_exact=proved, code=code if reason else None)


def _exact_ends(value: ProtocolValue) -> tuple[Fraction, Fraction] | None:
    if value.lower_exact is None or value.upper_exact is None:
        return None
    return Fraction(value.lower_exact), Fraction(value.upper_exact)


def _contradicts(lower: float, bound: float, shown: str = "") -> Decided:
    return Verdict.CONTRADICTION, (
        f"CONTRADICTION: an explicit decision rule on this protocol reaches {lower:.12g}, "
        f"above the relaxed optimum {bound:.12g} at the protocol's own achieved levels (by "
        f"{lower - bound:.3g} of the gains' range{shown}). Kairouz-Oh-Viswanath Theorem 3.1 "
        "makes that impossible, so dpverify has a bug (in the audit or the LP): please "
        "report it"), ReasonCode.CONTRADICTION


Decided = tuple[Verdict, str, ReasonCode | None]  # the verdict, its reason, the code


def decide(value: ProtocolValue, bound: Bound, achieved: Bound, priv: Privacy,
           tol: float) -> Decided:
    """The verdict of one result (module docstring), its reason and the reason's code;
    every value in normalised units.

    Floats decide only when they clear a verdict's line by more than FLOAT_SLACK. Closer,
    an exact value is compared with the bound's exact bracket (a certificate checked
    independently), else the verdict is `error` (undecided); a float protocol's value is
    compared in floats within --tol, as documented."""
    if not value.ok:
        if not priv.all_private:  # an exact finding, whatever the value
            return Verdict.NOT_PRIVATE, ("misses the claimed privacy level: "
                                         + "; ".join(priv.misses) + f" ({value.failure})"
                                         ), ReasonCode.NOT_PRIVATE
        return Verdict.ERROR, value.failure, value.failure_code
    found = _contradiction(value, achieved, tol)
    if found is not None:
        return found
    if not priv.all_private:
        return Verdict.NOT_PRIVATE, ("misses the claimed privacy level: "
                                     + "; ".join(priv.misses)), ReasonCode.NOT_PRIVATE
    if bound.value is None:
        return Verdict.ERROR, bound.why, ReasonCode.BOUND_UNDECIDED
    return _against(value, bound, tol)


def _contradiction(value: ProtocolValue, achieved: Bound, tol: float) -> Decided | None:
    """`contradiction` when the value exceeds the bound at the achieved levels by more than
    `tol`: by floats clear of the line, or exactly near it; None otherwise."""
    if achieved.value is None:
        return None
    line = achieved.value + tol
    if value.lower > line + FLOAT_SLACK:
        return _contradicts(value.lower, achieved.value)
    ends = _exact_ends(value)
    if value.lower >= line - FLOAT_SLACK and ends is not None:
        got = achieved.bracket()
        if isinstance(got, tuple) and ends[0] > got[1] + Fraction(tol):
            return _contradicts(float(ends[0]), float(got[1]), ", exactly")
    return None


def _against(value: ProtocolValue, bound: Bound, tol: float) -> Decided:
    """`optimal` or `suboptimal` against the bound at the claimed levels minus `tol`, or
    `error` when that cannot be decided."""
    assert bound.value is not None
    line = bound.value - tol
    if value.lower >= line + FLOAT_SLACK:
        return Verdict.OPTIMAL, "", None
    if value.upper < line - FLOAT_SLACK:
        return Verdict.SUBOPTIMAL, "", None
    ends = _exact_ends(value)
    if ends is None:  # a float protocol: floats within --tol
        if value.lower >= line:
            return Verdict.OPTIMAL, "", None
        if value.upper < line:
            return Verdict.SUBOPTIMAL, "", None
        return (Verdict.ERROR, _straddle(value.lower, value.upper, bound.value),
                ReasonCode.BRACKET_TOO_WIDE)
    got = bound.bracket()
    if isinstance(got, str):
        return Verdict.ERROR, (
            f"undecided: the protocol's value {value.lower:.12g} is within float rounding of "
            f"the bound {bound.value:.12g} minus --tol (normalised units), and the exact "
            f"bound is not known: {got}"), ReasonCode.BOUND_UNDECIDED
    t = Fraction(tol)
    if ends[0] >= got[1] - t:
        return Verdict.OPTIMAL, "", None
    if ends[1] < got[0] - t:
        return Verdict.SUBOPTIMAL, "", None
    return Verdict.ERROR, _straddle(float(ends[0]), float(ends[1]), float(got[0]),
                                    float(got[1])), ReasonCode.BRACKET_TOO_WIDE


def _straddle(low: float, high: float, bound: float, bound_high: float | None = None) -> str:
    shown = f"{bound:.12g}" if bound_high is None or bound_high == bound else \
        f"in [{bound:.12g}, {bound_high:.12g}]"
    return (f"undecided: the protocol's value is only known to lie in [{low:.12g}, "
            f"{high:.12g}], which straddles the bound {shown} minus --tol (normalised units)")


__all__ = ["audit_protocol", "decide", "privacy"]


def _refused(spec: ProtocolSpec, options: VerifyOptions) -> ProblemResult:
    """delta > 0 with more than two symbols: refused (exit 3), as `verify` refuses it."""
    from dpverify.verifiers.approximate.envelope import symbols_refusal

    raise symbols_refusal(spec.claimed())


# The audit of each setting of a protocol's claims (tests/test_codebase.py checks that it
# covers them).
AUDITS: dict[Setting, Callable[[ProtocolSpec, VerifyOptions], ProblemResult]] = {
    Setting.BITS: _audit_pure, Setting.SYMBOLS: _audit_pure,
    Setting.DELTA: _audit_delta, Setting.DELTA_SYMBOLS: _refused,
}
