"""The bounds a protocol audit compares with (docs/theory.md 5.4): the relaxed optimum at
some levels, as a float, and, when a verdict hangs on digits a float does not have, an
exact bracket `lower <= optimum <= upper` from a certificate checked independently.

* At finite levels the float is what `verify` decides (verify_agent; for more than two
  symbols the exact ray-product bound, verifiers/multisymbol/verifier.py).
* With an unbounded party (an achieved level above 10^12 or infinite) the party's factor
  is the identity: a larger DP cone, so a valid if weaker bound, checked against RR with
  that party's bit in clear, written as a protocol. It has no exact bracket.
* The exact bracket: the certificate's proved value is a protocol's accuracy at (or below)
  the levels, so a lower end; its bound is an upper end (theory.md 2.1). A certificate that
  `verify` already proved is reused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

import numpy as np

from dpverify.errors import SizeLimitError, SolverError
from dpverify.records import record
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.setting import Setting
from dpverify.theory.certificates.format import PROVED
from dpverify.theory.decision import party_label_gains
from dpverify.theory.protocols.transcripts import Level, rr_transcripts
from dpverify.theory.rr import rr_channel
from dpverify.theory.units import Units
from dpverify.verifiers.multiparty.corner_lp import check_size
from dpverify.verifiers.multiparty.lps import PointFamily, relaxed_lp
from dpverify.verifiers.options import VerifyOptions, lp_form
from dpverify.verifiers.protocol_value import protocol_value
from dpverify.verifiers.result import AgentResult, Proof, Verdict

# Achieved levels above this are bounded with the party's factor unconstrained (the
# identity): a larger DP cone, so a still valid, if weaker, upper bound (a float LP keeps
# no entry below 1/(1 + lambda) anyway).
UNBOUNDED_LEVEL = 1e12

Bracket = tuple[Fraction, Fraction]  # lower <= optimum <= upper, normalised units


@dataclass
class Bound:
    """A relaxed optimum in normalised units: `value` (a float; None when undecided, with
    `why`), and its exact bracket, computed on the first call of `bracket()` only (a
    certificate costs time): a pair, or a string that says why there is none."""

    value: float | None
    why: str = ""
    exact: Callable[[], Bracket | str] | None = None
    _bracket: Bracket | str | None = field(default=None, repr=False)

    def bracket(self) -> Bracket | str:
        if self._bracket is None:
            self._bracket = self.exact() if self.exact is not None else \
                "no exact bound at these levels"
        return self._bracket

    @property
    def proved(self) -> Fraction | None:
        """The exact optimum, when a bracket was computed and is a point."""
        got = self._bracket
        return got[0] if isinstance(got, tuple) and got[0] == got[1] else None


def rational(text: str) -> Fraction:
    """A certificate's "p/q" as a Fraction, at any length (Decimal parses digits without
    Python's limit on int <-> str conversion)."""
    num, _, den = str(text).partition("/")
    return Fraction(int(Decimal(num.strip())), int(Decimal(den.strip())) if den else 1)


RelaxedBound = tuple[float | None, float | None, str, Proof | None]


def relaxed_bound(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                  options: VerifyOptions) -> RelaxedBound:
    """(the relaxed optimum, RR's value, why the bound is None, the proof summary when
    `verify` settled it exactly), user units, by the setting's bound (BOUNDS)."""
    return BOUNDS[spec.setting].relaxed(spec, agent, accuracy, options)


def _bits_bound(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                options: VerifyOptions) -> RelaxedBound:
    """Bits: what the method `lp` decides (planner.verify_by_lp)."""
    from dpverify.verifiers.multiparty.planner import verify_by_lp

    result: AgentResult = verify_by_lp(spec, agent, accuracy, options)
    bound = result.bound if result.verdict is Verdict.OPTIMAL else None
    return bound, result.rr_value, result.reason, result.proof


def _symbols_bound(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                   options: VerifyOptions) -> RelaxedBound:
    """More than two symbols: the exact ray-product bound (an upper bound whether or not
    m-ary RR reaches it; verifiers/multisymbol/verifier.py)."""
    from dpverify.verifiers.multisymbol.verifier import symbol_bound

    return (*symbol_bound(spec, agent, accuracy, options), None)


def _bits_size(spec: MultipartySpec, options: VerifyOptions) -> None:
    check_size(spec, options)


def _symbols_size(spec: MultipartySpec, options: VerifyOptions) -> None:
    """The ray-product LP (docs/theory.md, section 6)."""
    from dpverify.verifiers.multisymbol.verifier import check_symbol_size

    check_symbol_size(spec, options)


def _symbols_unbounded(agent: AgentSpec, accuracy: Accuracy, levels: Sequence[Level],
                       units: Units, options: VerifyOptions) -> Bound:
    return Bound(None, "the relaxed bound with unbounded parties is computed for bits "
                       "only, not for alphabets > 2")


@record
class Bounds:
    """How the bounds of a protocol audit are computed in one setting of its claimed
    levels (pure epsilon-DP; delta > 0 is verifiers/audit/delta.py): the size guard, the
    relaxed bound at finite levels, the bound with unbounded parties."""

    check_size: Callable[[MultipartySpec, VerifyOptions], None]
    relaxed: Callable[[MultipartySpec, AgentSpec, Accuracy, VerifyOptions], RelaxedBound]
    unbounded: Callable[[AgentSpec, Accuracy, Sequence[Level], Units, VerifyOptions], Bound]


def exact_bracket(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                  options: VerifyOptions, units: Units, proof: Proof | None = None
                  ) -> Bracket | str:
    """The optimum's exact bracket (module docstring), normalised; or why there is none."""
    from dpverify.checker import CertificateFormatError, check_certificate
    from dpverify.verifiers.certifiers import certificate

    if proof is not None and proof.status == PROVED and proof.value:
        value = units.to_unit(rational(proof.value))
        return value, value
    try:
        cert = certificate(spec, agent, accuracy, options)
        checked = check_certificate(spec, cert.to_json(spec.name))
    except (SizeLimitError, SolverError, CertificateFormatError) as exc:
        return f"no exact certificate: {exc}"
    if not checked.ok:  # the construction and the checker disagree: never a verdict
        return f"the exact certificate fails the independent check ({checked.message})"
    return units.to_unit(cert.value), units.to_unit(cert.bound)


def float_ceiling(level: Fraction) -> Fraction:
    """The least binary64 value >= `level`, exactly: a level a float LP keeps, and a bound
    at it bounds every protocol at `level` (a larger lambda, a larger DP cone)."""
    up = float(level)
    if Fraction(up) < level:
        up = math.nextafter(up, math.inf)
    return Fraction(up)


def achieved_bound(spec_at: Callable[[tuple[Fraction, ...]], MultipartySpec],
                   setting: Setting, agent: AgentSpec, accuracy: Accuracy,
                   levels: Sequence[Level], units: Units, options: VerifyOptions) -> Bound:
    """The relaxed optimum at the achieved `levels` (normalised), with its exact bracket
    on demand; with unbounded parties the identity factor (module docstring)."""
    if all(v != math.inf and v <= UNBOUNDED_LEVEL for v in levels):
        spec = spec_at(tuple(Fraction(v) for v in levels))
        bound, _, why, proof = relaxed_bound(spec, agent, accuracy, options)
        if bound is None:
            return Bound(None, f"the relaxed bound at the achieved levels is undecided ({why})")
        return Bound(units.normalised(bound), exact=lambda: exact_bracket(
            spec, agent, accuracy, options, units, proof))
    return BOUNDS[setting].unbounded(agent, accuracy, levels, units, options)


def _unbounded_bound(agent: AgentSpec, accuracy: Accuracy, levels: Sequence[Level],
                     units: Units, options: VerifyOptions) -> Bound:
    worst = accuracy is Accuracy.WORST
    free = [v == math.inf or v > UNBOUNDED_LEVEL for v in levels]
    factors = tuple(np.eye(2) if f else rr_channel(float(v)) for v, f in zip(levels, free,
                                                                               strict=True))
    label_gains = units.unit if agent.party == 0 else party_label_gains(units.unit,
                                                                        agent.party)[0]
    sol = options.solver().tight(1e-10)(relaxed_lp(
        label_gains, [PointFamily(factors=factors)], worst, lp_form(options)).lp)
    rr_levels = [math.inf if f else v for v, f in zip(levels, free, strict=True)]
    rr = protocol_value(rr_transcripts(rr_levels), units.unit, None, agent.party, worst, options)
    if not sol.optimal or not rr.ok:
        return Bound(None, "the relaxed bound with unbounded parties did not solve")
    if abs(sol.objective - rr.value) > options.tol:
        return Bound(None, f"the relaxed bound with unbounded parties ({sol.objective:.12g}) "
                           f"and randomized response ({rr.value:.12g}) disagree (normalised "
                           "units)")
    return Bound(float(sol.objective))


# The bounds of each pure setting a protocol's claims can be in (the pure audit's table;
# tests/test_codebase.py checks it covers them).
BOUNDS: dict[Setting, Bounds] = {
    Setting.BITS: Bounds(_bits_size, _bits_bound, _unbounded_bound),
    Setting.SYMBOLS: Bounds(_symbols_size, _symbols_bound, _symbols_unbounded),
}
