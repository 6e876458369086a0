"""A certificate as a result reports it (`Proof`, the result's `proof` field), for every
certificate format (multi-party bits, orbits, more than two symbols, and the interval
certificates of `verify`: brackets proved in outward-rounded arithmetic, docs/theory.md
"Interval brackets"), and the verdict a certificate gives once the independent checker has
confirmed it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Union

from dpverify.errors import SizeLimitError, SolverError
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.spec.model import MultipartySpec
from dpverify.theory.certificates.format import BRACKET, PROVED, UNPROVED, Certificate
from dpverify.theory.exact import rational_string
from dpverify.verifiers.result import Bracket, BracketMethod, Proof, Verdict

if TYPE_CHECKING:  # the interval certificates are imported where they are made
    from dpverify.theory.certificates.interval import IntervalCertificate


def _float(v: Fraction) -> float:
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


AnyCertificate = Union[Certificate, "IntervalCertificate"]  # noqa: UP007 (a forward name)


def kind(cert: AnyCertificate) -> str:
    """`exact` or `interval` (how the certificate's bracket was computed), for messages:
    the certificate's `arithmetic` (theory/certificates/interval.py Arithmetic), `exact`
    for the exact certificates, which have none."""
    return str(getattr(cert, "arithmetic", "exact"))


def certificate_bracket(cert: AnyCertificate, checked: bool = False) -> Bracket:
    """`[value, bound]` of a certificate (user units) with its exact width; its method
    `interval` for a bracket proved in outward-rounded arithmetic."""
    method = BracketMethod.INTERVAL if kind(cert) == "interval" else BracketMethod.EXACT
    return Bracket(_float(cert.value), _float(cert.bound), _float(cert.bound - cert.value),
                   method, checked)


def proof_of(cert: AnyCertificate, checked: bool = False) -> Proof:
    """The certificate's status and bracket; for a proof the exact optimum ("p/q")."""
    bracket = certificate_bracket(cert, checked)
    if cert.status == PROVED:
        return Proof(str(PROVED), Bracket(bracket.lower, bracket.upper, 0.0,
                                          bracket.method, checked),
                     value=rational_string(cert.value))
    if cert.status == BRACKET:
        return Proof(str(BRACKET), bracket)
    return Proof(str(UNPROVED), bracket)


def unproved(reason: str) -> Proof:
    """No certificate (a size limit, a solver failure): why."""
    return Proof(str(UNPROVED), None, reason=reason)


@record
class ExactVerdict:
    """What a checked certificate decides: `optimal` when it proves the optimum, or
    brackets it within the tolerance; else `error` (undecided); `how` says which, in words
    (`proves the optimum exactly`, `brackets the optimum within 1.2e-21`, or why not)."""

    verdict: Verdict
    how: str
    proof: Proof
    checked: bool
    code: ReasonCode = ReasonCode.BRACKET_TOO_WIDE  # what `how` says

def exact_verdict(spec: MultipartySpec, cert: AnyCertificate, tol: Fraction) -> ExactVerdict:
    """The certificate checked by the independent checker (`dpverify.checker`, on its JSON
    form: it shares nothing with the construction), then its verdict at the tolerance
    `tol` (the user's units). A certificate that fails the check is a bug, never a pass."""
    from dpverify.checker import check_certificate

    checked = check_certificate(spec, cert.to_json(spec.name))
    proof = proof_of(cert, checked.ok)
    if not checked.ok:
        return ExactVerdict(Verdict.ERROR, f"fails the independent check ({checked.message})",
                            proof, False, ReasonCode.CHECK_FAILED)
    width = cert.bound - cert.value
    if cert.status == PROVED:
        return ExactVerdict(Verdict.OPTIMAL, "proves the optimum exactly", proof, True,
                            ReasonCode.PROVED)
    if cert.status == BRACKET and width <= tol:
        return ExactVerdict(Verdict.OPTIMAL,
                            f"brackets the optimum within {_float(width):.3g}", proof, True,
                            ReasonCode.BRACKETED)
    how = (f"brackets the optimum in [{_float(cert.value):.12g}, {_float(cert.bound):.12g}] "
           f"(width {_float(width):.3g}), wider than --tol")
    limit = getattr(cert, "limit", None)  # the size limit that kept it wide, if one did
    if limit is not None:
        return ExactVerdict(Verdict.ERROR, f"{how}: {limit}", proof, True,
                            ReasonCode.SIZE_LIMIT)
    return ExactVerdict(Verdict.ERROR, how, proof, True, ReasonCode.BRACKET_TOO_WIDE)


def first_deciding(spec: MultipartySpec,
                   attempts: Sequence[tuple[bool, Callable[[], AnyCertificate]]],
                   tol: Fraction) -> tuple[AnyCertificate, ExactVerdict]:
    """Build and check certificates in order (`attempts`: (is it the interval one, how to
    build it)) until one decides `optimal` or fails the independent check (a bug, never a
    pass: it ends the search). A limit or solver failure skips an attempt (after a built
    one, an exact certificate over a limit ends the search: what was built stands). Then
    the last built; the last limit or failure when none was built."""
    built: list[tuple[AnyCertificate, ExactVerdict]] = []
    failure: SizeLimitError | SolverError | None = None
    for interval, build in attempts:
        try:
            cert = build()
        except (SizeLimitError, SolverError) as exc:
            failure = exc
            if built and not interval:
                break  # the exact certificate is over a limit: what was built stands
            continue
        decided = exact_verdict(spec, cert, tol)
        built.append((cert, decided))
        if not decided.checked:
            return cert, decided
        if decided.verdict is Verdict.OPTIMAL:
            return cert, decided
    if not built:
        assert failure is not None
        raise failure
    return built[-1]
