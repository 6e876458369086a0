"""A certificate's proof summary, as a result reports it (`AgentResult.extra["proof"]`), for
every certificate format (multi-party bits, orbits, more than two symbols, and the interval
certificates of verify)."""

from __future__ import annotations

from typing import Any

from dpverify.spec.numbers import parse_rational
from dpverify.theory.certificates.format import BRACKET, PROVED, UNPROVED
from dpverify.theory.certificates.interval import FORMAT as INTERVAL_FORMAT
from dpverify.theory.certificates.interval import ORBIT_FORMAT as ORBIT_INTERVAL_FORMAT
from dpverify.theory.certificates.interval import Arithmetic


def arithmetic(cert: dict) -> Arithmetic:
    """How the certificate's bracket was computed: exact rationals, or outward-rounded
    arithmetic (an interval certificate, docs/theory.md "Interval brackets")."""
    if cert.get("format") in (INTERVAL_FORMAT, ORBIT_INTERVAL_FORMAT):
        return Arithmetic.INTERVAL
    return Arithmetic.EXACT


def proof_summary(cert: dict) -> dict[str, Any]:
    """`{"status": ..., "width": ..., "arithmetic": ...}` for a result's `proof`
    (AgentResult.extra["proof"]): the certificate's status (proved-optimal, bracket or
    unproved), the width bound - value as a float (0.0 when proved; None when there is no
    certificate), whether the bracket is exact or an interval bracket (`arithmetic`), and
    for a proof the exact optimum as a "p/q" string (`value`; `check --update` writes it
    into [expect])."""
    status = cert.get("status")
    try:
        width: float | None = float(parse_rational(cert["upper"]["bound"])
                                    - parse_rational(cert["lower"]["value"]))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        width = None
    how = str(arithmetic(cert))
    if status == PROVED:
        return {"status": str(PROVED), "width": 0.0, "arithmetic": how,
                "value": cert["lower"]["value"]}
    if status == BRACKET:
        return {"status": str(BRACKET), "width": width, "arithmetic": how}
    return {"status": str(UNPROVED), "width": width, "arithmetic": how}
