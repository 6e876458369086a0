"""Audits of protocols that claim approximate privacy, (epsilon_i, delta_i) with some
delta_i > 0 (issue 20; docs/theory.md, "Approximate privacy"; docs/format.md, "A protocol
result").

* **Privacy.** Each party's achieved delta at its claimed epsilon: the largest hockey-stick
  sum (KOV 2015, eq. (12); theory/approx/hockey.py), exact for exact kernels and a
  `lambda` claim, an exact bracket HS(lambda_hi) <= delta <= HS(lambda_lo) for an
  `epsilon` claim. Exact kernels: the party is private when the bracket is at most the
  claim, `not-private` when it is above it, and undecided (`error`) when it straddles it.
  Float kernels (TOML floats, valued as the binary rationals they are, rows normalised)
  carry the rounding of their decimals: the claim may be exceeded by at most --tol (with a
  note), as an `epsilon` claim of a pure audit.
* **Accuracy**, against the envelope bound U at the claimed levels (the best accuracy of
  any interactive (epsilon_i, delta_i)-DP protocol, proved exactly at the upper brackets;
  verifiers/approximate/envelope.py) and the best non-interactive value R (the product of
  RR(epsilon_i, delta_i) with its optimal rule, exactly, at the lower brackets: an explicit
  protocol that meets the claims):

      value > U_achieved + tol   contradiction (U_achieved: the bound at the claimed epsilons
                                 and the achieved deltas, which the protocol meets): a bug
      a party not private        not-private
      value > R_hi + tol         interaction-helps: the protocol beats every non-interactive
                                 one (exit 1), the verdict `verify` gives the problem when
                                 it finds such a protocol; optimal among all of them too
                                 when value >= U - tol (the reason says which)
      value >= U - tol           optimal: no (epsilon, delta)-DP protocol does better
      value < R - tol            suboptimal: RR(epsilon, delta) does better
      otherwise                  open: the optimum lies in [max(value, R), U], and whether
                                 some protocol beats this one is not decided (exit 3)

  R is RR(epsilon, delta)'s exact value at the lower brackets of the levels (an explicit
  protocol that meets the claims) and R_hi at the upper ones (at least its value at the
  true levels; R_hi = R for rational levels), as in verifiers/approximate/verifier.py.
  Unlike a pure audit, the bound is not known to be attained (interaction can help), so
  `suboptimal` needs an explicit better protocol. Exact protocols are compared exactly;
  a float protocol's value in floats within --tol.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpverify.defaults import Method
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.numbers import rational_text
from dpverify.spec.protocol_model import ProtocolSpec
from dpverify.spec.tables import tabulate
from dpverify.theory.approx.hockey import DeltaBracket, hockey_sums, protocol_deltas
from dpverify.theory.exact import lambda_brackets
from dpverify.theory.protocols.transcripts import Transcripts
from dpverify.theory.units import Units, units_of
from dpverify.verifiers.approximate.envelope import proved_envelope
from dpverify.verifiers.approximate.noninteractive import noninteractive_value
from dpverify.verifiers.approximate.problem import check_sizes
from dpverify.verifiers.audit.result import AuditResult, efficiency
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.protocol_value import ProtocolValue, protocol_value
from dpverify.verifiers.result import Verdict

LONG_DELTA = 60  # characters: a longer exact delta is written in JSON as its float


@record
class DeltaPrivacy:
    """Each party's claimed and achieved delta at its claimed epsilon (an exact bracket,
    or a float for a protocol valued in floats, or None when not computed), and the
    findings: the parties that miss their claims, notes, and parties left undecided."""

    claimed: tuple[Fraction, ...]
    achieved: tuple[DeltaBracket | float | None, ...]
    private: tuple[bool | None, ...]
    misses: tuple[str, ...]
    notes: tuple[str, ...]
    undecided: tuple[str, ...]

    @property
    def all_private(self) -> bool:
        return all(p is True for p in self.private)


def _float_deltas(spec: ProtocolSpec, tr: Transcripts) -> tuple[float, ...]:
    """The achieved deltas of float transcripts at the claimed levels (floats)."""
    return tuple(float(hockey_sums(tr, i + 1, float(spec.lambdas[i])).max(initial=0.0))
                 for i in range(spec.parties))


def delta_privacy(spec: ProtocolSpec, tr: Transcripts | None, why: str, tol: float
                  ) -> DeltaPrivacy:
    """Achieved deltas against the claimed ones (module docstring)."""
    claimed = tuple(spec.deltas)
    if tr is None:
        return DeltaPrivacy(claimed, (None,) * spec.parties, (None,) * spec.parties, (), (),
                            (f"the achieved deltas are not computed: {why}",))
    achieved: tuple[DeltaBracket | float, ...] = (
        protocol_deltas(spec, tr) if tr.exact else _float_deltas(spec, tr))
    private: list[bool | None] = []
    misses, notes, undecided = [], [], []
    for i, (got, claim) in enumerate(zip(achieved, claimed, strict=True)):
        party = f"party {i + 1}"
        low, high = (got.lower, got.upper) if isinstance(got, DeltaBracket) else (got, got)
        line = claim if spec.exact else claim + Fraction(tol)
        if low > line:
            private.append(False)
            misses.append(f"{party}: achieved delta {_shown(got)} > claimed "
                          f"{rational_text(claim)} at the claimed epsilon")
        elif high <= line:
            private.append(True)
            if high > claim:
                notes.append(f"{party}: achieved delta {_shown(got)} exceeds the claimed "
                             f"{rational_text(claim)} by {float(high - claim):.3g}, within "
                             "--tol (float kernels)")
        else:
            private.append(None)
            undecided.append(f"{party}: the achieved delta lies in [{float(low):.17g}, "
                             f"{float(high):.17g}], which straddles the claim "
                             f"{rational_text(claim)}")
    return DeltaPrivacy(claimed, achieved, tuple(private), tuple(misses), tuple(notes),
                        tuple(undecided))


def _shown(got: DeltaBracket | float) -> str:
    if isinstance(got, DeltaBracket):
        if got.exact:
            text = rational_text(got.upper)
            return text if len(text) <= 40 else f"~{float(got.upper):.17g}"
        return f"in [{float(got.lower):.17g}, {float(got.upper):.17g}]"
    return f"{got:.17g}"


def delta_json(got: DeltaBracket | float | None) -> Any:
    """An achieved delta in JSON: "p/q" when exact (its float when very long), a float for
    a float protocol, [lower, upper] ("p/q" strings) for a bracket, None when unknown."""
    if got is None:
        return None
    if isinstance(got, DeltaBracket):
        if not got.exact:
            return [_rational_json(got.lower), _rational_json(got.upper)]
        return _rational_json(got.upper)
    return float(got)


def _rational_json(v: Fraction) -> Any:
    text = rational_text(v)
    return text if len(text) <= LONG_DELTA else float(v)


def delta_header(priv: DeltaPrivacy) -> dict[str, Any]:
    """The privacy fields of an audited (epsilon, delta) protocol's header (docs/format.md):
    they replace `private` and `private_by_party` of the pure levels."""
    out: dict[str, Any] = {
        "claimed_deltas": [rational_text(d) for d in priv.claimed],
        "achieved_deltas": [delta_json(v) for v in priv.achieved],
        "private": priv.all_private, "private_by_party": list(priv.private)}
    notes = list(priv.misses + priv.notes + priv.undecided)
    if notes:
        out["privacy_notes"] = notes
    return out


def check_delta_size(claimed: MultipartySpec, options: VerifyOptions) -> None:
    """Refuse (exit 3) envelope LPs over the size limit (alphabets > 2 with delta > 0:
    the dispatch tables refuse them, AUDITS)."""
    check_sizes(claimed, options)


@record
class DeltaBounds:
    """In normalised units: the proved envelope bound at the claimed levels, the same at
    the achieved deltas, and RR(epsilon, delta)'s exact value (an explicit protocol that
    meets the claims) with `rr_high`, its value at the upper brackets of the levels (the
    same for rational levels; `rr` when not given); None with `why` when not known."""

    claimed: Fraction | None
    achieved: Fraction | None
    rr: Fraction | None
    why: str = ""
    rr_high: Fraction | None = None

    @property
    def rr_upper(self) -> Fraction | None:
        """At least RR(epsilon, delta)'s value at the true levels."""
        return self.rr_high if self.rr_high is not None else self.rr


def _achieved_levels(priv: DeltaPrivacy) -> tuple[Fraction, ...] | None:
    """The deltas the protocol is proved to meet: each bracket's upper end (a float
    protocol's float as its exact binary value)."""
    out = []
    for got in priv.achieved:
        if got is None:
            return None
        out.append(got.upper if isinstance(got, DeltaBracket) else Fraction(got))
    return tuple(min(v, Fraction(1)) for v in out)


def delta_bounds(claimed: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                 priv: DeltaPrivacy, units: Units, options: VerifyOptions) -> DeltaBounds:
    worst = accuracy is Accuracy.WORST
    lower, upper = lambda_brackets(claimed.lambdas_exact, claimed.epsilons_exact)
    deltas = tuple(claimed.deltas)

    def bound(levels: Sequence[Fraction]) -> tuple[Fraction | None, str]:
        proved, floats = proved_envelope(claimed.lambdas, upper, levels, units.unit,
                                         units.exact, agent.party, worst, options)
        return (None if proved is None else proved.bound,
                floats.failure or "the envelope LP gave no duals")

    at_claim, why = bound(deltas)
    achieved = _achieved_levels(priv)
    if priv.all_private or achieved is None:
        at_achieved = at_claim  # the bound grows with delta: valid for the protocol too
    else:
        at_achieved, _ = bound(tuple(max(a, c) for a, c in zip(achieved, deltas,
                                                               strict=True)))
    rr = noninteractive_value(lower, upper, deltas, units, agent.party, worst, options)
    return DeltaBounds(at_claim, at_achieved, rr.lower,
                       "" if at_claim is not None else
                       f"the (epsilon, delta) bound at the claimed levels is undecided: {why}",
                       rr_high=rr.upper)


def _ends(value: ProtocolValue) -> tuple[Fraction, Fraction] | tuple[float, float]:
    if value.lower_exact is not None and value.upper_exact is not None:
        return Fraction(value.lower_exact), Fraction(value.upper_exact)
    return value.lower, value.upper


def decide_delta(value: ProtocolValue, bounds: DeltaBounds, priv: DeltaPrivacy,
                 tol: float, units: Units) -> tuple[Verdict, str, ReasonCode | None]:
    """The verdict of one result (module docstring), its reason and the reason's code;
    normalised units."""
    def shown(v: Fraction | float) -> str:
        return f"{float(units.lo + units.span * Fraction(v)):.12g}"

    if not value.ok:
        if priv.misses:
            return Verdict.NOT_PRIVATE, ("misses the claimed privacy level: "
                                         + "; ".join(priv.misses) + f" ({value.failure})"
                                         ), ReasonCode.NOT_PRIVATE
        return Verdict.ERROR, value.failure, value.failure_code
    low, high = _ends(value)
    t = Fraction(tol) if isinstance(low, Fraction) else tol
    if bounds.achieved is not None and low > bounds.achieved + t:
        return Verdict.CONTRADICTION, (
            f"CONTRADICTION: an explicit decision rule on this protocol reaches {shown(low)}, "
            f"above the envelope (epsilon, delta) bound {shown(bounds.achieved)} at the "
            "levels the protocol meets: the bound holds for every such protocol "
            "(docs/theory.md, \"Approximate privacy\"), so dpverify has a bug: please "
            "report it"), ReasonCode.CONTRADICTION
    if priv.misses:
        return Verdict.NOT_PRIVATE, "misses the claimed privacy level: " + "; ".join(
            priv.misses), ReasonCode.NOT_PRIVATE
    if priv.undecided:
        return (Verdict.ERROR, "undecided: " + "; ".join(priv.undecided),
                ReasonCode.BRACKET_TOO_WIDE)
    if bounds.claimed is None:
        return Verdict.ERROR, bounds.why, ReasonCode.BOUND_UNDECIDED
    rr_upper = bounds.rr_upper
    if rr_upper is not None and low > rr_upper + t:
        reaches = ("; it also reaches the bound within --tol: no (epsilon, delta)-DP "
                   "protocol does better" if low >= bounds.claimed - t else
                   f"; the optimum lies in [{shown(low)}, {shown(bounds.claimed)}]")
        return Verdict.INTERACTION_HELPS, (
            f"interaction helps: this protocol reaches {shown(low)}, above the best "
            f"non-interactive protocol, RR(epsilon, delta) ({shown(rr_upper)}), by "
            f"{float(Fraction(low) - Fraction(rr_upper)):.3g} of the gains' range{reaches}"
        ), ReasonCode.INTERACTION_HELPS
    if low >= bounds.claimed - t:
        return Verdict.OPTIMAL, "", None
    if high >= bounds.claimed - t:
        return Verdict.ERROR, (f"undecided: the protocol's value is only known to lie in "
                               f"[{shown(low)}, {shown(high)}], which straddles the bound "
                               f"{shown(bounds.claimed)} minus --tol"
                               ), ReasonCode.BRACKET_TOO_WIDE
    if bounds.rr is not None and high < bounds.rr - t:
        return Verdict.SUBOPTIMAL, (
            f"the product of RR(epsilon_i, delta_i), an explicit protocol that meets the "
            f"claims, reaches {shown(bounds.rr)}"), ReasonCode.SUBOPTIMAL
    best = max(Fraction(low), bounds.rr) if bounds.rr is not None else Fraction(low)
    return Verdict.OPEN, (
        f"open: below the (epsilon, delta) bound {shown(bounds.claimed)}, the interactive "
        f"optimum (approached by grid protocols, docs/theory.md 7.11); the optimum lies in "
        f"[{shown(best)}, {shown(bounds.claimed)}], and no better protocol is given here "
        "(`dpverify verify` on the problem searches for one)"), ReasonCode.OPEN


def audit_delta_agent(spec: ProtocolSpec, agent: AgentSpec, accuracy: Accuracy,
                      tr: Transcripts | None, why: str, priv: DeltaPrivacy,
                      labels: tuple[str, ...], options: VerifyOptions) -> AuditResult:
    """One agent and accuracy of a protocol claiming (epsilon, delta) (module docstring)."""
    start = time.perf_counter()
    claimed = spec.claimed()
    table = tabulate(claimed, agent)
    units = units_of(table.gain_exact)
    worst = accuracy is Accuracy.WORST
    bounds = delta_bounds(claimed, agent, accuracy, priv, units, options)
    if tr is None:
        import numpy as np

        value = ProtocolValue(np.nan, np.nan, np.zeros((0, 0, 0)), "float", failure=why,
                              failure_code=ReasonCode.SIZE_LIMIT)
    else:
        value = protocol_value(tr, units.unit, units.exact if tr.exact else None,
                               agent.party, worst, options)
    verdict, reason, code = decide_delta(value, bounds, priv, options.tol, units)
    protocol = None if not value.ok else units.user(
        value.lower_exact if value.lower_exact is not None else value.value)
    exact_value = units.to_user(value.exact) \
        if value.exact is not None and spec.exact else None
    low, high = units.user(value.lower), units.user(value.upper)
    bracket = (low, high) if value.method == "bracket" and low is not None and \
        high is not None else None
    rule = None
    if value.ok and tr is not None:
        rule = tr.expand(value.rule[0] if agent.party == 0 else value.rule)
    relaxed = units.user(bounds.claimed)
    return AuditResult(
        agent.name, accuracy.value, protocol, relaxed, units.user(bounds.achieved),
        units.user(bounds.rr), efficiency(protocol, relaxed), verdict,
        time.perf_counter() - start, reason=reason, method=value.method,
        protocol_value_exact=exact_value, protocol_value_bounds=bracket, rule=rule,
        outputs=table.outputs, transcripts=labels,
        deltas=tuple(rational_text(d) for d in priv.claimed), bound=Method.ENVELOPE,
        code=code if reason else None)
