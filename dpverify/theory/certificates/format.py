"""The certificate data type and its JSON form (`dpverify-certificate/1`; docs/format.md).

A certificate for one agent and accuracy proves  value <= OPT <= bound  (theory.md,
"Certificates"): `upper` (a prior and mu over the inputs, one inequality per corner and
label) and `lower` (randomized response with an explicit decision rule).
"""

from __future__ import annotations

import enum
from dataclasses import field
from fractions import Fraction
from typing import ClassVar

from dpverify.records import record
from dpverify.theory.exact import rational_string

FORMAT = "dpverify-certificate/1"


class CertificateStatus(enum.StrEnum):
    """What a certificate proves: the optimum exactly, a bracket around it, or nothing."""

    PROVED = "proved-optimal"
    BRACKET = "bracket"
    UNPROVED = "unproved"


PROVED = CertificateStatus.PROVED
BRACKET = CertificateStatus.BRACKET
UNPROVED = CertificateStatus.UNPROVED


@record(eq=False)
class Certificate:
    """An exact certificate (docs/format.md). `decision` is Q[tau][y] for the observer and
    Q[b][tau][y] for a party; every number is a Fraction."""

    agent: str
    accuracy: str
    outputs: tuple[Fraction, ...]
    gain: tuple[tuple[Fraction, ...], ...]
    upper_lambdas: tuple[Fraction, ...]
    prior: tuple[Fraction, ...]
    mu: tuple[Fraction, ...]
    bound: Fraction
    lower_lambdas: tuple[Fraction, ...]
    decision: tuple
    value: Fraction
    status: str
    notes: tuple[str, ...] = field(default=())

    format_name: ClassVar[str] = FORMAT

    @property
    def width(self) -> Fraction:
        return self.bound - self.value

    def _layout(self) -> dict:
        """Fields that say how the inputs are indexed (none: all 2^k inputs)."""
        return {}

    def to_json(self, problem: str) -> dict:
        return self._to_json(problem)

    def _to_json(self, problem: str) -> dict:
        out = {
            "format": self.format_name, "problem": problem, "agent": self.agent,
            "accuracy": self.accuracy,
            "outputs": [_json_output(y) for y in self.outputs],
            **self._layout(),
            "gain": [[rational_string(w) for w in row] for row in self.gain],
            "upper": {"lambdas": [rational_string(v) for v in self.upper_lambdas],
                      "prior": [rational_string(v) for v in self.prior],
                      "mu": [rational_string(v) for v in self.mu],
                      "bound": rational_string(self.bound)},
            "lower": {"lambdas": [rational_string(v) for v in self.lower_lambdas],
                      "decision": nested_strings(self.decision),
                      "value": rational_string(self.value)},
            "status": str(self.status),
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def _json_output(y: Fraction):
    y = Fraction(y)
    return y.numerator if y.denominator == 1 else rational_string(y)


def nested_strings(obj):
    """Nested sequences of rationals as nested lists of "p/q" strings (certificate JSON).
    A row of rationals met again as the same object (an argmax rule repeats one per set
    of tied outputs) is written once and copied: no two lists of the JSON are one."""
    rows: dict[int, tuple] = {}  # id -> (the row, its strings): the row kept, its id unique

    def strings(v):
        if not isinstance(v, (list, tuple)):
            return rational_string(v)
        if id(v) in rows:
            return list(rows[id(v)][1])
        if any(isinstance(x, (list, tuple)) for x in v):
            return [strings(x) for x in v]
        rows[id(v)] = (v, [rational_string(x) for x in v])
        return list(rows[id(v)][1])

    return strings(obj)

