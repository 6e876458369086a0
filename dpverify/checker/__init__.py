"""The independent checkers of dpverify certificates: the trusted base (docs/theory.md,
"Certificates"; docs/format.md, the certificate formats; docs/architecture.md).

Short on purpose, so that a reviewer can audit them. The package imports only the standard
library, python-flint (exact integers, polynomials and `arb` intervals for e^eps) and
`dpverify.spec` (the file formats: the problem, its functions and gains tabulated afresh),
and nothing of the solvers or the construction: not the construction's symmetry detection
or orbit tables (spec/symmetric.py), nor any cache. A check keeps no state between
certificates, so the answers do not depend on what was checked before
(tests/test_checker_independence.py, tests/test_codebase.py for the import closure).

`check_certificate` dispatches on the certificate's `format`:

* `dpverify-certificate/1`, all 2^k inputs of a problem on bits: checker/bits.py;
* `dpverify-orbit-certificate/1`, on orbits of classes of parties: checker/orbits.py;
* `dpverify-mary-certificate/1`, more than two symbols: checker/symbols.py;
* `dpverify-delta-certificate/1`, the four-ray bound with delta > 0: checker/delta.py;
* `dpverify-interval-certificate/1` and `dpverify-orbit-interval-certificate/1`, brackets
  proved in outward-rounded arithmetic (fixed point, arb balls): checker/intervals.py.
"""

from __future__ import annotations

import json

from dpverify.checker.bits import check_bits
from dpverify.checker.common import (
    FORMAT,
    INTERVAL_FORMAT,
    MARY_FORMAT,
    ORBIT_FORMAT,
    ORBIT_INTERVAL_FORMAT,
    STATUSES,
    CertificateFormatError,
    CheckFailed,
    CheckResult,
)
from dpverify.checker.delta import DELTA_FORMAT, check_delta
from dpverify.checker.intervals import check_interval, check_orbit_interval
from dpverify.checker.orbits import check_orbits
from dpverify.checker.symbols import check_symbols
from dpverify.spec.numbers import parse_integer

__all__ = ["DELTA_FORMAT", "FORMAT", "INTERVAL_FORMAT", "MARY_FORMAT", "ORBIT_FORMAT",
           "ORBIT_INTERVAL_FORMAT", "STATUSES", "CertificateFormatError", "CheckFailed",
           "CheckResult", "check_certificate", "read_certificate"]

CHECKERS = {FORMAT: check_bits, ORBIT_FORMAT: check_orbits, MARY_FORMAT: check_symbols,
            INTERVAL_FORMAT: check_interval, ORBIT_INTERVAL_FORMAT: check_orbit_interval,
            DELTA_FORMAT: check_delta}


def check_certificate(spec, cert: dict) -> CheckResult:
    """Check `cert` (a JSON object) against `spec` exactly, by the checker of its format.
    Raises CertificateFormatError when it is not a certificate at all."""
    if not isinstance(cert, dict):
        raise CertificateFormatError("a certificate is a JSON object")
    fmt = cert.get("format")
    check = CHECKERS.get(fmt) if isinstance(fmt, str) else None
    if check is None:
        raise CertificateFormatError(f"`format` must be one of {', '.join(CHECKERS)}")
    deltas = getattr(spec, "deltas", ())
    if any(deltas) and fmt != DELTA_FORMAT:  # the others prove pure epsilon-DP only
        return CheckResult(False, (
            "the problem has delta > 0 (approximate privacy), and a certificate proves "
            "randomized response optimal under pure epsilon-DP only (KOV Theorem 3.1): it "
            "certifies a different problem"))
    try:
        return check(spec, cert)
    except CheckFailed as exc:
        return CheckResult(False, str(exc))


def read_certificate(text: str) -> dict:
    """A certificate file's JSON text, with integers of any length (json's own reading
    stops at 4300 digits); ValueError (json.JSONDecodeError) when it is not JSON."""
    return json.loads(text, parse_int=parse_integer)
