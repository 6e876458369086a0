"""A certificate's proof summary, as a result reports it (`AgentResult.extra["proof"]`), for
every certificate format (multi-party bits, orbits, more than two symbols)."""

from __future__ import annotations

from typing import Any

from dpverify.spec.numbers import parse_rational
from dpverify.theory.certificates.format import BRACKET, PROVED, UNPROVED


def proof_summary(cert: dict) -> dict[str, Any]:
    """`{"status": ..., "width": ...}` for a result's `proof` (AgentResult.extra["proof"]):
    the certificate's status (proved-optimal, bracket or unproved), the width bound - value
    as a float (0.0 when proved; None when there is no certificate), and for a proof the
    exact optimum as a "p/q" string (`value`; `check --update` writes it into [expect])."""
    status = cert.get("status")
    try:
        width: float | None = float(parse_rational(cert["upper"]["bound"])
                                    - parse_rational(cert["lower"]["value"]))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        width = None
    if status == PROVED:
        return {"status": str(PROVED), "width": 0.0, "value": cert["lower"]["value"]}
    if status == BRACKET:
        return {"status": str(BRACKET), "width": width}
    return {"status": str(UNPROVED), "width": width}
