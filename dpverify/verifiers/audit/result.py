"""The results of audits (docs/format.md, "A protocol result"): a protocol's for one agent
and accuracy (`AuditResult`), a count mechanism's for its consumer (`MechanismResult`);
frozen dataclasses with their JSON form, beside AgentResult and CountResult, so that batch,
check, the results store and the console handle them like the others
(verifiers/result.py, `Result`)."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpverify.defaults import Method
from dpverify.notebook import Notebook
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.spec.numbers import parse_rational
from dpverify.verifiers.result import Bracket, Verdict, code_of, plain, reason_fields


def _num(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(x)


def _digits(n: int) -> str:
    """An integer in decimal at any length (Decimal writes it without Python's limit on
    int -> str conversion, which guards servers, not exact results)."""
    return str(n) if n.bit_length() < 10_000 else str(Decimal(n))


def rational_text(x: Fraction) -> str:
    return _digits(x.numerator) if x.denominator == 1 else \
        f"{_digits(x.numerator)}/{_digits(x.denominator)}"


def efficiency(value: float | None, optimum: float | None) -> float | None:
    """protocol / optimum when the optimum is positive; optimum / protocol when it is
    negative (gains such as -abs are losses: twice the optimal loss is efficiency 1/2); 1
    when both are 0; None otherwise."""
    if value is None or optimum is None or not (math.isfinite(value) and
                                                math.isfinite(optimum)):
        return None
    if optimum > 0:
        return value / optimum
    if optimum < 0:
        return optimum / value if value < 0 else None
    return 1.0 if value == 0 else None


@record(eq=False, repr=False)
class AuditResult(Notebook):
    """One (agent, accuracy) of an audited protocol. Values are in the user's units.

    `protocol_value`: the agent's accuracy on the protocol under its optimal decision rule
    (an explicit rule achieves it; `protocol_value_exact` when proved exactly,
    `protocol_value_bounds` when only bracketed); `relaxed_optimum`: the relaxed LP's
    optimum at the claimed levels (an upper bound on every protocol that meets them, what
    `verify` reports); `relaxed_optimum_achieved`: the same at the levels the protocol
    achieves; `rr_value`: randomized response at the claimed levels;
    `relaxed_optimum_exact`: the relaxed optimum when a certificate proved it exactly (a
    verdict that floats could not decide).
    """

    notebook_columns: ClassVar[tuple[str, ...]] = (
        "agent", "accuracy", "protocol_value", "relaxed_optimum", "relaxed_optimum_achieved",
        "rr_value", "efficiency", "gap", "advantage", "verdict", "method")

    agent: str
    accuracy: str
    protocol_value: float | None
    relaxed_optimum: float | None
    relaxed_optimum_achieved: float | None
    rr_value: float | None
    efficiency: float | None
    verdict: Verdict
    seconds: float
    reason: str = ""
    method: str = "float"  # how the protocol's value is known: exact, bracket or float
    protocol_value_exact: Fraction | None = None
    protocol_value_bounds: tuple[float, float] | None = None
    rule: np.ndarray | None = None  # observer: Q[t, y]; party: Q[a, t, y] (own symbol a)
    outputs: tuple = ()
    transcripts: tuple[str, ...] = ()  # the transcripts' labels, the rule's rows
    relaxed_optimum_exact: Fraction | None = None
    # delta > 0 (docs/theory.md, "Approximate privacy"): the claimed deltas ("p/q") and the
    # bound the protocol is measured against, the envelope LP's
    deltas: tuple[str, ...] | None = None
    bound: str | None = None
    code: ReasonCode | None = None  # what the reason says (dpverify/reasons.py)

    @property
    def optimum(self) -> float | None:
        """The value `[expect]` entries are compared with: the protocol's accuracy."""
        return self.protocol_value

    @property
    def gap(self) -> float | None:
        """How far the protocol is below the bound at the claimed levels."""
        if self.relaxed_optimum is None or self.protocol_value is None:
            return None
        return self.relaxed_optimum - self.protocol_value

    @property
    def advantage(self) -> float | None:
        """With delta: the protocol's value minus RR(epsilon, delta)'s, the best
        non-interactive value (positive: interaction helps by that much)."""
        if self.deltas is None or self.protocol_value is None or self.rr_value is None:
            return None
        return self.protocol_value - self.rr_value

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agent": self.agent, "accuracy": self.accuracy,
            "protocol_value": _num(self.protocol_value),
            "relaxed_optimum": _num(self.relaxed_optimum),
            "relaxed_optimum_achieved": _num(self.relaxed_optimum_achieved),
            "rr_value": _num(self.rr_value), "efficiency": _num(self.efficiency),
            "gap": _num(self.gap), "verdict": self.verdict.value, "method": self.method,
            "seconds": round(self.seconds, 4),
        }
        if self.protocol_value_exact is not None:
            out["protocol_value_exact"] = rational_text(self.protocol_value_exact)
        if self.relaxed_optimum_exact is not None:
            out["relaxed_optimum_exact"] = rational_text(self.relaxed_optimum_exact)
        if self.protocol_value_bounds is not None:
            out["protocol_value_bounds"] = [_num(v) for v in self.protocol_value_bounds]
        out.update(reason_fields(self.reason, self.code))
        if self.deltas is not None:
            out["delta"] = list(self.deltas)
            out["bound"] = self.bound
            out["advantage"] = _num(self.advantage)
        return plain(out)

    def to_dict(self) -> dict[str, Any]:
        return self.to_json()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AuditResult:
        """The result read back from its JSON (the rule and transcripts are not in it)."""
        def exact(key: str) -> Fraction | None:
            return None if data.get(key) is None else parse_rational(data[key])

        bounds = data.get("protocol_value_bounds")
        deltas = data.get("delta")
        return cls(data["agent"], data["accuracy"], data.get("protocol_value"),
                   data.get("relaxed_optimum"), data.get("relaxed_optimum_achieved"),
                   data.get("rr_value"), data.get("efficiency"),
                   Verdict.of(data.get("verdict")), data.get("seconds", 0.0),
                   reason=data.get("reason", ""), method=data.get("method", "float"),
                   protocol_value_exact=exact("protocol_value_exact"),
                   protocol_value_bounds=None if bounds is None else tuple(bounds),
                   relaxed_optimum_exact=exact("relaxed_optimum_exact"),
                   deltas=None if deltas is None else tuple(deltas),
                   bound=data.get("bound"), code=code_of(data))


@record(eq=False, repr=False)
class MechanismResult(Notebook):
    """The consumer of an audited count mechanism (user units; losses are minimised):
    `mechanism_loss` the mechanism's loss under the consumer's best post-processing (the
    upper end of `loss_bounds` when that loss is only bracketed), `optimal_loss` the
    optimal loss at the claimed level, `optimal_loss_achieved` at the level the mechanism
    achieves."""

    agent: str
    accuracy: str  # the consumer's model: minimax or bayes
    mechanism_loss: float | None
    optimal_loss: float | None
    optimal_loss_achieved: float | None
    geometric_value: float | None
    efficiency: float | None
    verdict: Verdict
    seconds: float
    reason: str = ""
    post_processing: np.ndarray | None = None
    loss_bounds: Bracket | None = None  # when the mechanism's loss is not a point
    code: ReasonCode | None = None  # what the reason says (dpverify/reasons.py)

    notebook_columns = ("agent", "accuracy", "mechanism_loss", "optimal_loss",
                        "optimal_loss_achieved", "geometric_value", "efficiency", "gap",
                        "verdict")
    rule: ClassVar[None] = None
    method: ClassVar[str] = Method.LP  # the count LPs (verifiers/count/), not in its JSON

    @property
    def optimum(self) -> float | None:
        return self.mechanism_loss

    @property
    def gap(self) -> float | None:
        if self.mechanism_loss is None or self.optimal_loss is None:
            return None
        return self.mechanism_loss - self.optimal_loss

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agent": self.agent, "accuracy": self.accuracy,
            "mechanism_loss": _num(self.mechanism_loss), "optimal_loss": _num(self.optimal_loss),
            "optimal_loss_achieved": _num(self.optimal_loss_achieved),
            "geometric_value": _num(self.geometric_value), "efficiency": _num(self.efficiency),
            "gap": _num(self.gap), "verdict": self.verdict.value,
            "seconds": round(self.seconds, 4)}
        out.update(reason_fields(self.reason, self.code))
        if self.loss_bounds is not None:
            out["mechanism_loss_bounds"] = self.loss_bounds.to_json()
        return plain(out)

    def to_dict(self) -> dict[str, Any]:
        return self.to_json()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MechanismResult:
        bounds = data.get("mechanism_loss_bounds")
        return cls(data["agent"], data["accuracy"], data.get("mechanism_loss"),
                   data.get("optimal_loss"), data.get("optimal_loss_achieved"),
                   data.get("geometric_value"), data.get("efficiency"),
                   Verdict.of(data.get("verdict")), data.get("seconds", 0.0),
                   reason=data.get("reason", ""),
                   loss_bounds=None if bounds is None else Bracket.of(*bounds),
                   code=code_of(data))
