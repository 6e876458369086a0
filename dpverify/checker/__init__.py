"""The independent checker of dpverify certificates: the trusted base (docs/theory.md 2.11;
docs/format.md, the certificate formats; docs/architecture.md, "The trusted base").

Every format is read into one representation and checked by one core (checker/core.py):
a grid of inputs (one axis per party or per class of parties, orbit masses), per-axis ray
matrices (checker/factors.py) and the inequality (C) of theory.md 2.1 for every product of
rays; a protocol's channels and rules and its exact accuracy. A format is a reader into it:
`dpverify-certificate/1` (all 2^k inputs on bits, checker/bits.py: orbits of one party),
`dpverify-orbit-certificate/1` (checker/orbits.py), `dpverify-mary-certificate/1` (more
than two symbols, checker/symbols.py: each party's DP cone's extreme rays, DP channels),
`dpverify-delta-certificate/1` (the four-ray bound with delta > 0, checker/delta.py:
hockey-stick rows are more terms of (C)), `dpverify-envelope-certificate/1` (checker/
envelope.py: b per product of rays is one more term of (C), its chords checked), and the
two interval formats (checker/intervals.py: the same sums in outward-rounded arithmetic).

It imports only the standard library, python-flint (where used: big polynomials, `arb`
balls) and dpverify.spec (the problem's functions and gains, tabulated afresh by
checker/tabulation.py), nothing of the solvers or the construction (tests/test_codebase.py)
and caches nothing: answers do not depend on what was checked before (test_checker_independence).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dpverify.checker.bits import check_bits
from dpverify.checker.claim import (
    DELTA_FORMAT,
    ENVELOPE_FORMAT,
    FORMAT,
    INTERVAL_FORMAT,
    MARY_FORMAT,
    ORBIT_FORMAT,
    ORBIT_INTERVAL_FORMAT,
    STATUSES,
    CheckFailed,
    CheckResult,
)
from dpverify.checker.delta import check_delta
from dpverify.checker.envelope import check_envelope
from dpverify.checker.fields import CertificateFormatError, Json
from dpverify.checker.orbits import check_orbits
from dpverify.checker.symbols import check_symbols
from dpverify.spec.model import MultipartySpec
from dpverify.spec.numbers import parse_integer

__all__ = ["DELTA_FORMAT", "ENVELOPE_FORMAT", "FORMAT", "INTERVAL_FORMAT", "MARY_FORMAT",
           "ORBIT_FORMAT", "ORBIT_INTERVAL_FORMAT", "STATUSES", "CertificateFormatError",
           "CheckFailed", "CheckResult", "check_certificate", "read_certificate"]

Checker = Callable[[MultipartySpec, Json], CheckResult]


def check_intervals(spec: MultipartySpec, cert: Json) -> CheckResult:
    from dpverify.checker import intervals  # imported when used: `arb` balls load flint
    return (intervals.check_orbit_interval if cert["format"] == ORBIT_INTERVAL_FORMAT
            else intervals.check_interval)(spec, cert)


CHECKERS: dict[str, Checker] = {
    FORMAT: check_bits, ORBIT_FORMAT: check_orbits, MARY_FORMAT: check_symbols,
    INTERVAL_FORMAT: check_intervals, ORBIT_INTERVAL_FORMAT: check_intervals,
    DELTA_FORMAT: check_delta, ENVELOPE_FORMAT: check_envelope}


def check_certificate(spec: MultipartySpec, cert: object) -> CheckResult:
    """Check `cert` (a JSON object) against `spec` exactly, by the reader of its format.
    Raises CertificateFormatError when it is not a certificate at all."""
    if not isinstance(cert, dict):
        raise CertificateFormatError("a certificate is a JSON object")
    fmt = cert.get("format")
    check = CHECKERS.get(fmt) if isinstance(fmt, str) else None
    if check is None:
        raise CertificateFormatError(f"`format` must be one of {', '.join(CHECKERS)}")
    if spec.approximate and fmt not in (DELTA_FORMAT, ENVELOPE_FORMAT):  # pure epsilon-DP
        return CheckResult(False, (
            "the problem has delta > 0 (approximate privacy), and a certificate proves "
            "randomized response optimal under pure epsilon-DP only (KOV Theorem 3.1): it "
            "certifies a different problem"))
    try:
        return check(spec, cert)
    except CheckFailed as exc:
        return CheckResult(False, str(exc))


def read_certificate(text: str) -> Any:
    """A certificate file's JSON text, with integers of any length (json's own reading
    stops at 4300 digits); ValueError (json.JSONDecodeError, or CertificateFormatError for
    nesting too deep for the parser) when it is not JSON."""
    try:
        return json.loads(text, parse_int=parse_integer)
    except RecursionError:
        raise CertificateFormatError("the JSON is nested too deeply (no certificate nests "
                                     "more than a few levels)") from None
